package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
)

const runtimeSecret = "rt-secret-value-5b1e"

func UsesSecretEnv(ctx context.Context, v int) (int, error) {
	slog.DebugContext(ctx, "step with a secret runtime environment", "v", v)
	return v + 1, nil
}

var secretFlow = sdk.Then(sdk.Step(Build), sdk.Map(sdk.Step(UsesSecretEnv, sdk.WithRuntimeEnv("otel-secret-test"))).
	WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}))

// A run whose steps use a runtime environment holding a secret value
// (env_vars API_TOKEN) logs, at debug level, and traces nothing of it.
func TestRuntimeEnvSecretsNeverLoggedOrTraced(t *testing.T) {
	if err := sdk.RegisterRuntimeEnv("otel-secret-test", sdk.RuntimeEnv{"env_vars": map[string]string{"API_TOKEN": runtimeSecret}}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(telemetry.LogHandler(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer slog.SetDefault(prev)
	id := sdk.NewRunIdentity()
	if _, err := sdk.Run(context.Background(), secretFlow, 3, sdk.WithRunIdentity(id)); err != nil {
		t.Fatal(err)
	}
	tr := spansOf(id.RunID)
	if len(tr) < 5 {
		t.Fatalf("%d spans", len(tr))
	}
	for _, s := range tr {
		for k, v := range s.Attrs {
			if strings.Contains(v, runtimeSecret) {
				t.Errorf("span %s attribute %s holds the secret", s.Name, k)
			}
		}
	}
	for _, s := range spans.GetSpans() {
		for _, ev := range s.Events {
			for _, a := range ev.Attributes {
				if strings.Contains(a.Value.AsString(), runtimeSecret) {
					t.Errorf("span event holds the secret")
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), id.RunID) {
		t.Fatalf("no log record of the run:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), runtimeSecret) {
		t.Errorf("the secret was logged:\n%s", logs.String())
	}
}
