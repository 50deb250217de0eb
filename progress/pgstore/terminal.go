package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// ErrSummaryTooLarge is returned for a stored summary over 16 KiB (checked
// before decoding).
var ErrSummaryTooLarge = errors.New("progressstore: summary over 16 KiB")

// TerminalEnvelope returns the terminal summary archived when the
// lifecycle ends an attempt in state: last (the task row's last accepted
// summary) unchanged when it already is that terminal state's summary;
// otherwise an envelope derived from it (docs/contracts.md#publication): the reserved revision,
// the terminal state and finish time (now, not before updated_at), success
// marking every discovered node succeeded (terminal_state_unreported when
// detail was published), any other state keeping the counters. nil last
// gives nil (the run never published).
func TerminalEnvelope(last []byte, state summary.TerminalState, now time.Time) ([]byte, error) {
	if last == nil {
		return nil, nil
	}
	if len(last) > summary.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrSummaryTooLarge, len(last))
	}
	s, err := summary.DecodeSummary(last)
	if err != nil {
		return nil, fmt.Errorf("progressstore: last summary: %w", err)
	}
	if string(s.State) == string(state) && s.SummaryRevision == summary.ReservedRevision {
		return last, nil
	}
	fin := now.UTC().Truncate(time.Microsecond)
	if u, err := time.Parse(time.RFC3339Nano, s.Timestamps.UpdatedAt); err == nil && u.After(fin) {
		fin = u
	}
	finS := progress.FormatTimestamp(fin)
	outcome := state
	s.State, s.SummaryRevision = summary.State(state), summary.ReservedRevision
	s.Timestamps.UpdatedAt, s.Timestamps.FinishedAt = finS, &finS
	s.Terminal = summary.Terminal{Outcome: &outcome, FinishedAt: &finS}
	reasons := slices.DeleteFunc(slices.Clone(s.Detail.TruncationReasons), func(r summary.TruncationReason) bool {
		return r == summary.TruncationReasonTerminalStateUnreported
	})
	c := &s.NodeCounts
	if state == summary.TerminalStateSucceeded {
		if c.Succeeded != c.Discovered && s.DetailRevision != nil {
			reasons = append(reasons, summary.TruncationReasonTerminalStateUnreported)
		}
		c.Pending, c.Running, c.Failed, c.Succeeded = 0, 0, 0, c.Discovered
		s.ProgressPercent = 100
	}
	slices.Sort(reasons)
	s.Detail.TruncationReasons = reasons
	if s.DetailRevision != nil {
		if len(reasons) > 0 {
			s.Detail.Availability, s.Detail.Complete = summary.DetailAvailabilityTruncated, false
		} else if c.Discovered == c.RetainedDetail {
			s.Detail.Availability, s.Detail.Complete = summary.DetailAvailabilityAvailable, true
		}
		exp := progress.FormatTimestamp(fin.Add(time.Duration(s.Retention.DetailDays) * 24 * time.Hour))
		s.Retention.DetailExpiresAt = &exp
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("progressstore: derived terminal summary: %w", err)
	}
	b, err := canonical.NoFold.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(b) > summary.MaxBytes {
		return nil, fmt.Errorf("%w: derived %d bytes", ErrSummaryTooLarge, len(b))
	}
	return b, nil
}
