package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/sdk"
)

// Setup failures need no cluster: the record is still the last line.
func TestServeSetupFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"unknown flow", Config{Flow: "nope", Input: json.RawMessage(`1`)}, `no flow named "nope"`},
		{"bad input", Config{Flow: "nope", Input: json.RawMessage(`{`)}, "the input is not JSON"},
	} {
		var out bytes.Buffer
		code := Serve(context.Background(), tc.c, &out, io.Discard)
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		last := lines[len(lines)-1]
		var r Result
		if !strings.HasPrefix(last, ResultPrefix) || json.Unmarshal([]byte(last[len(ResultPrefix):]), &r) != nil {
			t.Fatalf("%s: last line %q is not a result record", tc.name, last)
		}
		if code != ExitSetup || r.OK || r.Version != ResultVersion || r.Error == nil || r.Error.Kind != "setup" || !strings.Contains(r.Error.Message, tc.want) {
			t.Errorf("%s: exit %d, record %+v %+v", tc.name, code, r, r.Error)
		}
	}
}

func TestInputEncoding(t *testing.T) {
	t.Setenv(InputEnv, EncodeInput([]byte(`{"a":"?/+"}`)))
	t.Setenv(FlowEnv, "nope")
	var out bytes.Buffer
	Serve(context.Background(), Config{}, &out, io.Discard)
	if !strings.Contains(out.String(), `"flow":"nope"`) || !strings.Contains(out.String(), `no flow named`) {
		t.Errorf("record %s", out.String())
	}
}

func TestRunEncoding(t *testing.T) {
	id := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: 9223372036854775807, AttemptNumber: 100, ExecutionGeneration: 0, RunID: "0a1b2c3d-0000-4000-8000-00000000000f"}
	got, err := DecodeRun(EncodeRun(id))
	if err != nil || got != id {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1:1:1", "1:1:1:x", "0:1:0:" + id.RunID, "1:0:0:" + id.RunID, "1:1:-1:" + id.RunID,
		"a:1:0:" + id.RunID, "1:1:0:" + strings.ToUpper(id.RunID), "9223372036854775808:1:0:" + id.RunID, "1:1:0:" + id.RunID + ":x"} {
		if _, err := DecodeRun(bad); !errors.Is(err, sdk.ErrInvalidRunIdentity) {
			t.Errorf("DecodeRun(%q): %v", bad, err)
		}
	}
	// A malformed identity is a setup failure, before anything runs.
	t.Setenv(RunEnv, "1:1:1:nope")
	var out bytes.Buffer
	if code := Serve(context.Background(), Config{Flow: "nope", Input: json.RawMessage(`1`)}, &out, io.Discard); code != ExitSetup ||
		!strings.Contains(out.String(), "run_id") {
		t.Errorf("exit %d, %s", code, out.String())
	}
}

// The database URL is removed from the job config the engine's bridge
// inherits, other runtime_env settings kept.
func TestScrubJobConfig(t *testing.T) {
	t.Setenv(rayJobConfigEnv, `{"runtime_env":{"env_vars":{"A":"1","RAYFLOW_DATABASE_URL":"postgres://u:pw@h/db"},"working_dir":"gcs://x"},"metadata":{"k":"v"}}`)
	scrubJobConfig()
	var cfg map[string]any
	if err := json.Unmarshal([]byte(os.Getenv(rayJobConfigEnv)), &cfg); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg)
	if want := `{"metadata":{"k":"v"},"runtime_env":{"env_vars":{"A":"1"},"working_dir":"gcs://x"}}`; string(got) != want {
		t.Errorf("scrubbed config %s, want %s", got, want)
	}
}

// NoProgress drops the database URL, and every mode variable (the URL
// above all) leaves the process environment before anything runs.
func TestServeClearsTheEnvironment(t *testing.T) {
	for _, tc := range []struct{ name, run, input string }{
		{"unknown flow", "1:1:0:0a1b2c3d-0000-4000-8000-00000000000f", EncodeInput([]byte(`1`))},
		{"malformed run", "1:1:0:nope", EncodeInput([]byte(`1`))},
		{"malformed input", "1:1:0:0a1b2c3d-0000-4000-8000-00000000000f", "!!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RunEnv, tc.run)
			t.Setenv(InputEnv, tc.input)
			t.Setenv(ReportingEnv, "full")
			t.Setenv(NoProgressEnv, "1")
			t.Setenv(DatabaseURLEnv, "postgres://u:pw@h/db")
			var out bytes.Buffer
			if code := Serve(context.Background(), Config{Flow: "nope"}, &out, io.Discard); code != ExitSetup {
				t.Errorf("exit %d: %s", code, out.String())
			}
			for _, k := range []string{RunEnv, InputEnv, ReportingEnv, NoProgressEnv, DatabaseURLEnv} {
				if v, ok := os.LookupEnv(k); ok {
					t.Errorf("%s=%q is still set", k, v)
				}
			}
		})
	}
}

// A failed run's record carries the error's chain, so a reader in another
// process knows its types (a contract error stays one).
func TestFailRecordsTheChain(t *testing.T) {
	runErr := fmt.Errorf("running: %w", &sdk.MaxItemsError{Node: "0", MaxItems: 1, Items: 2})
	var res Result
	fail(&res, "run", runErr)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := errwire.Unmarshal(sdk.DefaultCodec, back.Error.Chain)
	if err != nil || got.Error() != runErr.Error() {
		t.Fatalf("chain %s decodes to %v, %v", back.Error.Chain, got, err)
	}
	var r *errwire.Remote
	if !errors.As(got, &r) || !strings.Contains(string(back.Error.Chain), fmt.Sprintf("%T", &sdk.MaxItemsError{})) {
		t.Fatalf("chain %s does not name the contract error's type", back.Error.Chain)
	}
}
