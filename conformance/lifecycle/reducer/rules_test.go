package reducer_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

func TestNewSessionFailsClosed(t *testing.T) {
	t.Parallel()
	capWith := func(f func(*reducer.Capacity)) reducer.Capacity {
		c := reducer.DefaultCapacity
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		run  reducer.RunIdentity
		d    reducer.Deadlines
		c    reducer.Capacity
		want lifecycle.RejectionCode
	}{
		{"ok", run, dl, reducer.DefaultCapacity, ""},
		{"owners 2", run, dl, capWith(func(c *reducer.Capacity) { c.SessionOwners = 2 }), lifecycle.RejectionCodeInvalidState},
		{"queue 1", run, dl, capWith(func(c *reducer.Capacity) { c.QueueCapacity = 1 }), lifecycle.RejectionCodeInvalidState},
		{"zero capacity", run, dl, reducer.Capacity{}, lifecycle.RejectionCodeInvalidState},
		{"NaN deadline", run, reducer.Deadlines{Outer: math.NaN()}, reducer.DefaultCapacity, lifecycle.RejectionCodeInvalidState},
		{"infinite deadline", run, reducer.Deadlines{Drain: math.Inf(1)}, reducer.DefaultCapacity, lifecycle.RejectionCodeInvalidState},
		{"pk 0", reducer.RunIdentity{AttemptNumber: 1, RunID: "r"}, dl, reducer.DefaultCapacity, lifecycle.RejectionCodeInvalidIdentity},
		{"run_id 129 runes", reducer.RunIdentity{TaskExecutionPK: 1, AttemptNumber: 1, RunID: strings.Repeat("é", 129)}, dl, reducer.DefaultCapacity, lifecycle.RejectionCodeInvalidIdentity},
		{"run_id 128 runes", reducer.RunIdentity{TaskExecutionPK: 1, AttemptNumber: 1, RunID: strings.Repeat("é", 128)}, dl, reducer.DefaultCapacity, ""},
		{"invalid UTF-8", reducer.RunIdentity{TaskExecutionPK: 1, AttemptNumber: 1, RunID: "\xff"}, dl, reducer.DefaultCapacity, lifecycle.RejectionCodeInvalidIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := reducer.NewSession(tc.run, tc.d, tc.c)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, &reducer.Rejection{Code: tc.want}) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestZeroStateIsInvalid(t *testing.T) {
	t.Parallel()
	var s reducer.State
	if _, _, rej := s.Apply(reducer.Command(lifecycle.CommandValidationRequested, run, 1)); rej == nil || rej.Code != lifecycle.RejectionCodeInvalidState {
		t.Fatalf("zero state accepted an event: %v", rej)
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tok  string
		seq  int64
		kind lifecycle.Action
		ok   bool
	}{
		{"cg-lifecycle-v1:1:VALIDATE", 1, lifecycle.ActionValidate, true},
		{"cg-lifecycle-v1:9223372036854775807:TEARDOWN", math.MaxInt64, lifecycle.ActionTeardown, true},
		{"cg-lifecycle-v1:9223372036854775808:TEARDOWN", 0, "", false},
		{"cg-lifecycle-v1:01:VALIDATE", 0, "", false},
		{"cg-lifecycle-v1:0:VALIDATE", 0, "", false},
		{"cg-lifecycle-v1:1:LAUNCH", 0, "", false},
		{"cg-lifecycle-v2:1:VALIDATE", 0, "", false},
		{"cg-lifecycle-v1:-1:VALIDATE", 0, "", false},
		{"", 0, "", false},
	} {
		seq, kind, ok := reducer.ParseToken(tc.tok)
		if seq != tc.seq || kind != tc.kind || ok != tc.ok {
			t.Errorf("ParseToken(%q) = %d %s %v", tc.tok, seq, kind, ok)
		}
		if tc.ok && reducer.Token(seq, kind) != tc.tok {
			t.Errorf("Token(%d, %s) != %q", seq, kind, tc.tok)
		}
	}
}

// TestDiagnosticsRule exercises the ≤ 8 / de-duplicate / truncate rule on
// restored states, the only way to fill the list (docs/lifecycle.md#rayflows-decisions).
func TestDiagnosticsRule(t *testing.T) {
	t.Parallel()
	f := &reducer.Fake{Now: 1}
	s := ready(t, f)
	inv := run.Invocation("inv-1")
	ev := reducer.Command(lifecycle.CommandAdmissionRequested, run, 1).WithInvocation(inv)
	ev.DeclaredOutputs = reducer.Int(1)
	s, a := apply(t, s, ev)
	s, _ = apply(t, s, reducer.Callback(*a, lifecycle.CallbackAdmitted, 1))
	s, a = apply(t, s, reducer.Command(lifecycle.CommandDrainRequested, run, 1).WithInvocation(inv))
	// DRAIN_INVOCATION is pending; DRAIN_FAILED adds DRAIN_FAILED, then
	// TEARDOWN_FAILED adds TEARDOWN_FAILED.
	all := []lifecycle.CleanupDiagnostic{lifecycle.CleanupDiagnosticCapacityReleaseFailed, lifecycle.CleanupDiagnosticCapacityReleaseTimeout,
		lifecycle.CleanupDiagnosticCancellationFailed, lifecycle.CleanupDiagnosticCancellationTimeout, lifecycle.CleanupDiagnosticDrainTimeout,
		lifecycle.CleanupDiagnosticHealthCheckFailed, lifecycle.CleanupDiagnosticTeardownTimeout}
	for _, tc := range []struct {
		name  string
		start []lifecycle.CleanupDiagnostic
		want  []lifecycle.CleanupDiagnostic
	}{
		{"empty", nil, []lifecycle.CleanupDiagnostic{lifecycle.CleanupDiagnosticDrainFailed, lifecycle.CleanupDiagnosticTeardownFailed}},
		{"dedupe", []lifecycle.CleanupDiagnostic{lifecycle.CleanupDiagnosticDrainFailed}, []lifecycle.CleanupDiagnostic{lifecycle.CleanupDiagnosticDrainFailed, lifecycle.CleanupDiagnosticTeardownFailed}},
		{"fills eighth then truncates", all, append(append([]lifecycle.CleanupDiagnostic{}, all...), lifecycle.CleanupDiagnosticDiagnosticsTruncated)},
		{"six plus two", all[:6], append(append([]lifecycle.CleanupDiagnostic{}, all[:6]...), lifecycle.CleanupDiagnosticDrainFailed, lifecycle.CleanupDiagnosticTeardownFailed)},
		{"already truncated", append(append([]lifecycle.CleanupDiagnostic{}, all...), lifecycle.CleanupDiagnosticDiagnosticsTruncated),
			append(append([]lifecycle.CleanupDiagnostic{}, all...), lifecycle.CleanupDiagnosticDiagnosticsTruncated)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := s.Snapshot()
			snap.CleanupDiagnostics = append([]lifecycle.CleanupDiagnostic(nil), tc.start...)
			r, err := reducer.Restore(&snap)
			if err != nil {
				t.Fatal(err)
			}
			r, ta := apply(t, r, reducer.Callback(*a, lifecycle.CallbackDrainFailed, 2))
			r, _ = apply(t, r, reducer.Callback(*ta, lifecycle.CallbackTeardownFailed, 2))
			got := r.Diagnostics()
			if len(got) > lifecycle.MaxCleanupDiagnostics || strings.Join(diagStrings(got), ",") != strings.Join(diagStrings(tc.want), ",") {
				t.Fatalf("diagnostics %v, want %v", got, tc.want)
			}
		})
	}
}

func diagStrings(ds []lifecycle.CleanupDiagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return out
}

// TestSnapshotWorstCaseFits builds the largest snapshot a valid state can
// have: 128-rune identifiers of astral characters (12 ASCII bytes each),
// 64 output slots, 8 diagnostics and long float texts.
func TestSnapshotWorstCaseFits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("\U0001F600", 128)
	r := reducer.RunIdentity{TaskExecutionPK: math.MaxInt64, AttemptNumber: math.MaxInt64, ExecutionGeneration: math.MaxInt64, RunID: long}
	d := reducer.Deadlines{Outer: 1.2345678901234567e300, Admission: 1.2345678901234566e300, Submission: 1.2345678901234565e300,
		Result: 1.2345678901234564e300, Cancellation: 1.2345678901234563e300, Drain: 1.2345678901234562e300, Teardown: 1.2345678901234561e300}
	s, err := reducer.NewSession(r, d, reducer.DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	f := &reducer.Fake{Now: 1.2345678901234e-300}
	ctx := t.Context()
	s, a := apply(t, s, reducer.Command(lifecycle.CommandValidationRequested, r, f.Now))
	if s, err = reducer.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	s, a = apply(t, s, reducer.Command(lifecycle.CommandPreparationRequested, r, f.Now))
	if s, err = reducer.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	ev := reducer.Command(lifecycle.CommandAdmissionRequested, r, f.Now).WithInvocation(r.Invocation(long))
	ev.DeclaredOutputs = reducer.Int(lifecycle.MaxDeclaredOutputs)
	s, _ = apply(t, s, ev)
	snap := s.Snapshot()
	for i := range snap.Outputs {
		snap.Outputs[i].State = "UNAVAILABLE_AFTER_TEARDOWN"
	}
	for _, dg := range []string{"CAPACITY_RELEASE_FAILED", "CAPACITY_RELEASE_TIMEOUT", "CANCELLATION_FAILED", "CANCELLATION_TIMEOUT",
		"HEALTH_CHECK_FAILED", "TEARDOWN_FAILED", "TEARDOWN_TIMEOUT", "DIAGNOSTICS_TRUNCATED"} {
		snap.CleanupDiagnostics = append(snap.CleanupDiagnostics, lifecycle.CleanupDiagnostic(dg))
	}
	n, err := reducer.SnapshotSize(&snap)
	if err != nil {
		t.Fatal(err)
	}
	if n > lifecycle.MaxSnapshotBytes {
		t.Fatalf("worst-case snapshot is %d bytes, over %d", n, lifecycle.MaxSnapshotBytes)
	}
	t.Logf("worst-case snapshot: %d bytes of %d", n, lifecycle.MaxSnapshotBytes)
}

func TestSnapshotIsSecretFree(t *testing.T) {
	t.Parallel()
	f := &reducer.Fake{Now: 1}
	s := invoke(t, ready(t, f), f, "inv-1", 2)
	raw, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"capacity", "cleanup_diagnostics", "deadlines", "effect_state", "graph_disposition", "invocation_identity",
		"invocation_state", "last_observed_at", "next_action_sequence", "outputs", "pending_action", "primary_outcome",
		"protocol_version", "retry_disposition", "schema_version", "session_identity", "session_state", "strategy_fallback_allowed"}
	if len(m) != len(want) {
		t.Fatalf("snapshot has %d fields, want exactly the %d of schema 1: %s", len(m), len(want), raw)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("snapshot lacks %s", k)
		}
	}
}

func TestDecodeEventLenient(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	id := `"session_identity":{"task_execution_pk":7,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:7"}`
	for _, tc := range []struct {
		name, line string
		want       lifecycle.RejectionCode
	}{
		{"valid", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,` + id + `}`, ""},
		{"schema_version 1 allowed", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,"session_identity":{"schema_version":1,"task_execution_pk":7,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:7"}}`, ""},
		{"kind wrong type", `{"kind":1,"protocol_version":1,"observed_at":1,` + id + `}`, lifecycle.RejectionCodeInvalidEvent},
		{"protocol as string", `{"kind":"VALIDATION_REQUESTED","protocol_version":"1","observed_at":1,` + id + `}`, lifecycle.RejectionCodeInvalidEvent},
		{"pk as string", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,"session_identity":{"task_execution_pk":"7","attempt_number":1,"execution_generation":0,"run_id":"rayflow:7"}}`, lifecycle.RejectionCodeInvalidIdentity},
		{"identity extra key", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,"session_identity":{"task_execution_pk":7,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:7","invocation_id":"x"}}`, lifecycle.RejectionCodeInvalidIdentity},
		{"observed null", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":null,` + id + `}`, lifecycle.RejectionCodeInvalidClock},
		{"token wrong type", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,"action_token":5,` + id + `}`, lifecycle.RejectionCodeUnexpectedActionToken},
		{"output_index bool", `{"kind":"VALIDATION_REQUESTED","protocol_version":1,"observed_at":1,"output_index":true,` + id + `}`, lifecycle.RejectionCodeActionPayloadMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := reducer.DecodeEvent([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			_, _, rej := s.Apply(ev)
			switch {
			case tc.want == "" && rej != nil:
				t.Fatalf("rejected: %v", rej)
			case tc.want != "" && (rej == nil || rej.Code != tc.want):
				t.Fatalf("got %v, want %s", rej, tc.want)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"a":1,"a":2}`, `{"kind":NaN}`} {
		if _, err := reducer.DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("DecodeEvent(%q) accepted", bad)
		}
	}
}
