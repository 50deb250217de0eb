package reducer_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
)

const (
	replayHeader = `{"session_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42"},` +
		`"deadlines":{"outer":100,"admission":10,"submission":20,"result":30,"cancellation":40,"drain":50,"teardown":60},` +
		`"capacity":{"session_owners":1,"callers":1,"maximum_in_flight":1,"maximum_buffered_results":1,"owner_concurrency":1,"queue_capacity":0}}`
	replaySession = `"session_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42"}`
	replayInv     = `"invocation_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42","invocation_id":"inv-7"}`
)

func replayEvent(kind, token string, extra ...string) string {
	s := `{"kind":"` + kind + `","protocol_version":1,"observed_at":1,` + replaySession
	if token != "" {
		s += `,"action_token":"` + token + `"`
	}
	for _, x := range extra {
		s += "," + x
	}
	return s + "}"
}

// TestReplayOutcomesCarryTheInvocationID: an invocation-scoped action's
// outcome line names its invocation; a session-scoped one has null.
func TestReplayOutcomesCarryTheInvocationID(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{replayHeader,
		replayEvent("VALIDATION_REQUESTED", ""),
		replayEvent("VALIDATED", "cg-lifecycle-v1:1:VALIDATE"),
		replayEvent("PREPARATION_REQUESTED", ""),
		replayEvent("PREPARED", "cg-lifecycle-v1:2:PREPARE"),
		replayEvent("ADMISSION_REQUESTED", "", replayInv, `"declared_outputs":1`),
	}, "\n")
	var out bytes.Buffer
	if err := reducer.Replay(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		`{"action":{"deadline":100.0,"declared_outputs":null,"invocation_id":null,"kind":"VALIDATE","output_index":null,"token":"cg-lifecycle-v1:1:VALIDATE"}}`,
		`{"action":null}`,
		`{"action":{"deadline":100.0,"declared_outputs":null,"invocation_id":null,"kind":"PREPARE","output_index":null,"token":"cg-lifecycle-v1:2:PREPARE"}}`,
		`{"action":null}`,
		`{"action":{"deadline":10.0,"declared_outputs":1,"invocation_id":"inv-7","kind":"ADMIT","output_index":null,"token":"cg-lifecycle-v1:3:ADMIT"}}`,
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("got %d lines, want %d outcomes and the snapshot:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("outcome %d:\n got %s\nwant %s", i+1, lines[i], w)
		}
	}
}

// TestReplayMalformedLineKeepsEarlierOutcomes: a malformed line after
// enough events to fill several write buffers still leaves every earlier
// outcome line written, complete, and the error names the line.
func TestReplayMalformedLineKeepsEarlierOutcomes(t *testing.T) {
	t.Parallel()
	for _, events := range []int{0, 1, 100, 1000} {
		lines := []string{replayHeader}
		for range events {
			// Rejected (no pending action): the state never changes.
			lines = append(lines, replayEvent("VALIDATED", "cg-lifecycle-v1:9:VALIDATE"))
		}
		lines = append(lines, `{"kind":`, replayEvent("VALIDATION_REQUESTED", ""))
		var out bytes.Buffer
		err := reducer.Replay(strings.NewReader(strings.Join(lines, "\n")), &out)
		var rej *reducer.Rejection
		if err == nil || errors.As(err, &rej) || !strings.Contains(err.Error(), "line "+strconv.Itoa(events+2)) {
			t.Fatalf("%d events: err = %v, want a format error naming line %d", events, err, events+2)
		}
		want := strings.Repeat(`{"rejection":"STALE_ACTION_TOKEN"}`+"\n", events)
		if out.String() != want {
			t.Fatalf("%d events: wrote %d bytes, want %d (every outcome before the malformed line)", events, out.Len(), len(want))
		}
	}
}
