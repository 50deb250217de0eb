package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/telemetry"
)

// Secret-named attributes are redacted wherever they are: record
// attributes, With attributes and groups; other keys pass.
func TestLogHandlerRedacts(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(&buf, nil)))
	log.With("Authorization", "Bearer sekrit1").Info("m", "token", "sekrit2", "db_password", "sekrit3",
		slog.Group("env", "API_KEY", "sekrit4", "HOME", "/root"), "tokens_file", "/etc/tokens", "flow", "orders")
	out := buf.String()
	for _, s := range []string{"sekrit1", "sekrit2", "sekrit3", "sekrit4"} {
		if strings.Contains(out, s) {
			t.Errorf("%s logged: %s", s, out)
		}
	}
	for _, s := range []string{"env.HOME=/root", "flow=orders", "db_password=[REDACTED]"} {
		if !strings.Contains(out, s) {
			t.Errorf("%s missing: %s", s, out)
		}
	}
	for key, secret := range map[string]bool{"token": true, "RAYFLOW_SERVE_TOKENS": true, "client_secret": true, "tokenizer": false,
		"queue": false, "private_key": true, "cookie": true, "api-key": true} {
		if telemetry.IsSecretKey(key) != secret {
			t.Errorf("IsSecretKey(%q) = %v", key, !secret)
		}
	}
}

// A record logged with a run's context carries its identity and node.
func TestLogHandlerRunAttributes(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(&buf, nil)))
	ctx, span := telemetry.StartAttempt(context.Background(), telemetry.AttemptInfo{TaskID: "t-1", TaskPK: 7, Attempt: 2, Generation: 3, RunID: "r-1"})
	defer span.End()
	ctx, span2 := telemetry.StartNode(ctx, "0.1", "step", -1)
	defer span2.End()
	log.InfoContext(ctx, "hello")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, s := range []string{"run_id=r-1", "task_pk=7", "attempt=2", "generation=3", "task_id=t-1", "node_id=0.1", "trace_id="} {
		if !strings.Contains(lines[0], s) {
			t.Errorf("%s missing: %s", s, lines[0])
		}
	}
	if strings.Contains(lines[1], "run_id") {
		t.Errorf("a record without context got run attributes: %s", lines[1])
	}
}
