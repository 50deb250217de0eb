package progress

import (
	"bytes"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/summary"
)

func TestTerminalSummary(t *testing.T) {
	strategy, fp := "dynamic_tasks", "sha256:"+string(bytes.Repeat([]byte("ab"), 32))
	for _, tc := range []struct {
		outcome summary.TerminalState
		percent string
	}{
		{summary.TerminalStateSucceeded, `"progress_percent":100.0`},
		{summary.TerminalStateFailed, `"progress_percent":0.0`},
		{summary.TerminalStateCancelled, `"progress_percent":0.0`},
	} {
		s, b, err := terminalSummary(terminalInput{Identity: testID, SelectedStrategy: &strategy, PlanFingerprint: &fp,
			DeclaredNodes: i64(5), Outcome: tc.outcome, StartedAt: t0, FinishedAt: t0.Add(90*time.Second + 1500*time.Microsecond)})
		if err != nil {
			t.Fatalf("%s: %v", tc.outcome, err)
		}
		back, err := summary.DecodeSummary(b)
		if err != nil {
			t.Fatalf("%s: the record does not decode: %v\n%s", tc.outcome, err, b)
		}
		if back.State != summary.State(tc.outcome) || back.Detail.Availability != summary.DetailAvailabilityOmittedByPolicy ||
			back.TopologyVersion != nil || back.DetailRevision != nil || back.Storage.ManifestID != nil || back.SummaryRevision != summary.ReservedRevision ||
			*back.NodeCounts.Declared != 5 || back.NodeCounts.Discovered != 0 || *back.Terminal.FinishedAt != "2026-07-01T12:01:30.001500Z" || back.Retention.DetailDays != 7 {
			t.Fatalf("%+v", back)
		}
		if !bytes.Contains(b, []byte(tc.percent)) || len(b) > summary.MaxBytes || s.LimitsProfile != "terminal-v1" {
			t.Fatalf("%s", b)
		}
	}
	if _, _, err := terminalSummary(terminalInput{Identity: testID, Outcome: "RUNNING", StartedAt: t0, FinishedAt: t0}); err == nil {
		t.Fatal("non-terminal outcome accepted")
	}
	if _, _, err := terminalSummary(terminalInput{Identity: testID, Outcome: summary.TerminalStateFailed, StartedAt: t0, FinishedAt: t0.Add(-time.Second)}); err == nil {
		t.Fatal("finish before start accepted")
	}
	if _, _, err := terminalSummary(terminalInput{Identity: testID, Outcome: summary.TerminalStateFailed, StartedAt: t0, FinishedAt: t0, RetentionDays: i64(31)}); err == nil {
		t.Fatal("31 retention days accepted")
	}
}
