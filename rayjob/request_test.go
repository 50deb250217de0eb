package rayjob

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

const secretURL = "postgres://app:s3cr%40t-pw@db.internal:5432/rayflow?sslmode=require"

// The database URL travels in the runtime_env's env_vars only: never in
// the entrypoint (the job's visible command line) or the metadata.
func TestRequestKeepsTheDatabaseURLOutOfTheEntrypoint(t *testing.T) {
	id := sdk.RunIdentity{TaskExecutionPK: 7, AttemptNumber: 2, ExecutionGeneration: 3, RunID: "0a1b2c3d-0000-4000-8000-00000000000f"}
	for _, tc := range []struct {
		name string
		re   map[string]any
	}{
		{"no runtime env", nil},
		{"string env vars kept", map[string]any{"env_vars": map[string]string{"A": "1"}, "working_dir": "/x"}},
		{"any env vars kept", map[string]any{"env_vars": map[string]any{"A": "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{SubmissionID: "s", Executable: "/app", Flow: "fanout", Input: json.RawMessage(`3`),
				Env: map[string]string{"B": "2"}, RuntimeEnv: tc.re, Metadata: map[string]string{"m": "v"},
				Identity: &id, Reporting: sdk.ReportingPolicyTerminalOnly, DatabaseURL: secretURL}
			req, err := request(j)
			if err != nil {
				t.Fatal(err)
			}
			visible, _ := json.Marshal(map[string]any{"entrypoint": req.Entrypoint, "metadata": req.Metadata})
			for _, s := range []string{secretURL, "s3cr", coordinator.DatabaseURLEnv} {
				if strings.Contains(string(visible), s) {
					t.Errorf("%q appears in %s", s, visible)
				}
			}
			for _, s := range []string{coordinator.RunEnv + "=7:2:3:" + id.RunID, coordinator.ReportingEnv + "=terminal_only", "B=2"} {
				if !strings.Contains(req.Entrypoint, s) {
					t.Errorf("entrypoint %q lacks %q", req.Entrypoint, s)
				}
			}
			ev, _ := req.RuntimeEnv["env_vars"].(map[string]any)
			if ev[coordinator.DatabaseURLEnv] != secretURL {
				t.Errorf("runtime_env %v lacks the database URL", req.RuntimeEnv)
			}
			if tc.re != nil && ev["A"] != "1" {
				t.Errorf("runtime_env %v lost the caller's env_vars", req.RuntimeEnv)
			}
			if tc.re != nil && tc.re["working_dir"] != req.RuntimeEnv["working_dir"] {
				t.Errorf("runtime_env %v lost working_dir", req.RuntimeEnv)
			}
			if orig, ok := tc.re["env_vars"].(map[string]any); ok && orig[coordinator.DatabaseURLEnv] != nil {
				t.Error("the caller's runtime_env was modified")
			}
			if j.Env[coordinator.RunEnv] != "" {
				t.Error("the caller's Env was modified")
			}
		})
	}
	// Without a database URL nothing is added to the runtime env.
	req, err := request(Job{Executable: "/app", Flow: "f", Input: json.RawMessage(`1`), Identity: &id})
	if err != nil || req.RuntimeEnv != nil {
		t.Errorf("no URL: runtime env %v, %v", req.RuntimeEnv, err)
	}
	// NoProgress: the URL is not sent and the coordinator is told.
	req, err = request(Job{Executable: "/app", Flow: "f", Input: json.RawMessage(`1`), Identity: &id, DatabaseURL: secretURL, NoProgress: true})
	if err != nil || req.RuntimeEnv != nil || !strings.Contains(req.Entrypoint, coordinator.NoProgressEnv+"=1") {
		t.Errorf("no progress: runtime env %v, entrypoint %s, %v", req.RuntimeEnv, req.Entrypoint, err)
	}
	// The URL in the entrypoint's Env is refused.
	if _, err := request(Job{Executable: "/app", Flow: "f", Input: json.RawMessage(`1`),
		Env: map[string]string{coordinator.DatabaseURLEnv: secretURL}}); err == nil || strings.Contains(err.Error(), "s3cr") {
		t.Errorf("URL in Env: %v", err)
	}
	if _, err := request(Job{Executable: "/app", Flow: "f", Input: json.RawMessage(`1`), DatabaseURL: secretURL,
		RuntimeEnv: map[string]any{"env_vars": []string{"x"}}}); err == nil {
		t.Error("env_vars of the wrong type accepted")
	}
	bad := id
	bad.RunID = "not-a-uuid"
	if _, err := request(Job{Executable: "/app", Flow: "f", Input: json.RawMessage(`1`), Identity: &bad}); !errors.Is(err, sdk.ErrInvalidRunIdentity) {
		t.Errorf("invalid identity: %v", err)
	}
}

func TestRedact(t *testing.T) {
	err := redact(errors.New(`SubmitJob fail: 400 runtime_env {"env_vars": {"RAYFLOW_DATABASE_URL": "`+secretURL+`"}} and s3cr@t-pw`), secretURL)
	if strings.Contains(err.Error(), "s3cr") || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("redacted: %v", err)
	}
	plain := errors.New("nothing secret")
	if redact(plain, secretURL) != plain || redact(nil, secretURL) != nil {
		t.Error("an error without the secret was replaced")
	}
}

// A job's traceparent travels as TRACEPARENT in the entrypoint; anything
// but a W3C traceparent is refused (it would reach the shell).
func TestRequestTraceParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		tp, want string
		ok       bool
	}{
		{"", "", true},
		{tp, coordinator.TraceParentEnv + "=" + tp + " ", true},
		{tp + "; rm -rf /", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "", false}, // a trace id one digit short
	} {
		req, err := request(Job{Executable: "/app", Flow: "fanout", Input: json.RawMessage(`3`), TraceParent: tc.tp})
		if (err == nil) != tc.ok {
			t.Fatalf("%q: error %v, want ok %v", tc.tp, err, tc.ok)
		}
		if err != nil {
			continue
		}
		if tc.want != "" && !strings.Contains(req.Entrypoint, tc.want) || tc.want == "" && strings.Contains(req.Entrypoint, coordinator.TraceParentEnv) {
			t.Errorf("%q: entrypoint %q", tc.tp, req.Entrypoint)
		}
	}
}
