package progress

import (
	"errors"
	"fmt"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// DefaultRetentionDays is the default terminal detail retention (docs/contracts.md#retention-and-cleanup).
const DefaultRetentionDays = 7

// terminalInput is what a terminal_only run knows when its outer task
// reaches success or failure: no node execution evidence was collected.
type terminalInput struct {
	Identity         common.RunIdentity
	SelectedStrategy *string
	PlanFingerprint  *string
	// DeclaredNodes and DeclaredEdges are the plan's declared counts (nil
	// when the plan does not declare them, e.g. dynamic maps).
	DeclaredNodes, DeclaredEdges *int64
	// Outcome is the accepted terminal state of the outer task.
	Outcome    summary.TerminalState
	StartedAt  time.Time
	FinishedAt time.Time
	// RetentionDays is detail_days (0–30); nil means DefaultRetentionDays.
	RetentionDays *int64
	// LimitsProfile names the profile; "" means terminal-v1.
	LimitsProfile string
}

// terminalSummary builds the one bounded summary v3 record of a
// terminal_only run (docs/contracts.md#summary-v3): the
// pinned strategy and fingerprint, the declared counts, the terminal outcome
// and timestamps; discovered, retained and node-state counts stay zero;
// detail OMITTED_BY_POLICY with no topology, detail revision or manifest.
// summary_revision is the reserved terminal revision 2^63-1 and
// progress_percent is 100.0 for SUCCEEDED (the rule SUCCEEDED ⇒ 100) and
// 0.0 otherwise (no evidence). It returns the record and its canonical bytes
// (≤ 16 KiB), validated by gen/summary.
func terminalSummary(in terminalInput) (*summary.Summary, []byte, error) {
	if !in.Outcome.Valid() {
		return nil, nil, fmt.Errorf("progress: terminal outcome %q", in.Outcome)
	}
	if in.FinishedAt.Before(in.StartedAt) {
		return nil, nil, errors.New("progress: finished before started")
	}
	days := int64(DefaultRetentionDays)
	if in.RetentionDays != nil {
		days = *in.RetentionDays
	}
	prof := in.LimitsProfile
	if prof == "" {
		prof = limits.ProfileTerminalV1.Name
	}
	started, finished := FormatTimestamp(in.StartedAt), FormatTimestamp(in.FinishedAt)
	outcome := in.Outcome
	s := &summary.Summary{
		SchemaVersion:          3,
		StorageProtocolVersion: 1,
		RunIdentity:            in.Identity,
		ReportingPolicy:        common.ReportingPolicyTerminalOnly,
		SelectedStrategy:       in.SelectedStrategy,
		PlanFingerprint:        in.PlanFingerprint,
		LimitsProfile:          prof,
		SummaryRevision:        summary.ReservedRevision,
		State:                  summary.State(in.Outcome),
		NodeCounts:             summary.NodeCounts{Declared: in.DeclaredNodes},
		EdgeCounts:             summary.EdgeCounts{Declared: in.DeclaredEdges},
		Timestamps:             summary.Timestamps{StartedAt: started, UpdatedAt: finished, FinishedAt: &finished},
		Detail:                 summary.Detail{Availability: summary.DetailAvailabilityOmittedByPolicy, TruncationReasons: []summary.TruncationReason{}},
		Storage:                summary.Storage{Kind: "database"},
		Retention:              summary.Retention{DetailDays: days},
		Terminal:               summary.Terminal{Outcome: &outcome, FinishedAt: &finished},
	}
	if in.Outcome == summary.TerminalStateSucceeded {
		s.ProgressPercent = 100
	}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("progress: terminal summary: %w", err)
	}
	b, err := canonical.NoFold.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	if len(b) > summary.MaxBytes {
		return nil, nil, fmt.Errorf("progress: terminal summary is %d bytes, more than %d", len(b), summary.MaxBytes)
	}
	return s, b, nil
}
