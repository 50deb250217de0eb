package pgstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/sdk/canonical"
)

func running(t *testing.T, withDetail bool) []byte {
	t.Helper()
	v, d := int64(1), int64(4)
	m := testID.RunID + "-t1"
	s := summary.Summary{SchemaVersion: 3, StorageProtocolVersion: 1, RunIdentity: testID, ReportingPolicy: common.ReportingPolicyFull,
		LimitsProfile: "v1", SummaryRevision: 4, State: summary.StateRunning,
		NodeCounts:      summary.NodeCounts{Discovered: 4, RetainedTopology: 4, RetainedDetail: 4, Pending: 1, Running: 2, Succeeded: 1},
		EdgeCounts:      summary.EdgeCounts{Discovered: 3, RetainedTopology: 3},
		Timestamps:      summary.Timestamps{StartedAt: "2026-12-01T10:00:00Z", UpdatedAt: "2026-12-01T10:00:05Z"},
		Detail:          summary.Detail{Availability: summary.DetailAvailabilityAvailable, Complete: true, TruncationReasons: []summary.TruncationReason{}},
		Storage:         summary.Storage{Kind: "database"},
		Retention:       summary.Retention{DetailDays: 7},
		ProgressPercent: 25,
	}
	if withDetail {
		s.TopologyVersion, s.DetailRevision, s.Storage.ManifestID = &v, &d, &m
	} else {
		s.NodeCounts = summary.NodeCounts{}
		s.EdgeCounts = summary.EdgeCounts{}
		s.ProgressPercent = 0
		s.Detail = summary.Detail{Availability: summary.DetailAvailabilityNotReported, TruncationReasons: []summary.TruncationReason{}}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := canonical.NoFold.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTerminalEnvelope(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 1, 0, 0, time.UTC)
	cases := []struct {
		name      string
		detail    bool
		state     summary.TerminalState
		succeeded int64
		reasons   string
	}{
		{"success before the terminal publication", true, summary.TerminalStateSucceeded, 4, "terminal_state_unreported"},
		{"lost keeps counters", true, summary.TerminalStateLost, 1, ""},
		{"cancelled keeps counters", true, summary.TerminalStateCancelled, 1, ""},
		{"success without detail", false, summary.TerminalStateSucceeded, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := TerminalEnvelope(running(t, c.detail), c.state, now)
			if err != nil {
				t.Fatal(err)
			}
			s, err := summary.DecodeSummary(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(s.State) != string(c.state) || s.SummaryRevision != summary.ReservedRevision || s.NodeCounts.Succeeded != c.succeeded ||
				reasonsText(s.Detail.TruncationReasons) != c.reasons || *s.Terminal.FinishedAt != "2026-12-01T10:01:00Z" {
				t.Fatalf("derived %s", b)
			}
			if c.detail && *s.Retention.DetailExpiresAt != "2026-12-08T10:01:00Z" {
				t.Fatalf("expiry %v", *s.Retention.DetailExpiresAt)
			}
			// Idempotent: the terminal summary of the same state is kept byte for byte.
			again, err := TerminalEnvelope(b, c.state, now.Add(time.Hour))
			if err != nil || string(again) != string(b) {
				t.Fatalf("not kept: %v", err)
			}
		})
	}
	if b, err := TerminalEnvelope(nil, summary.TerminalStateFailed, now); b != nil || err != nil {
		t.Fatalf("no summary: %s %v", b, err)
	}
}

// The 16 KiB bound is checked before decoding: at the cap (padded with
// JSON whitespace) the summary is decoded and derived, one byte over it
// is refused unread.
func TestTerminalEnvelopeSizeCheckedBeforeDecoding(t *testing.T) {
	base := running(t, true)
	atCap := append([]byte(string(base)), []byte(strings.Repeat(" ", summary.MaxBytes-len(base)))...)
	if len(atCap) != summary.MaxBytes {
		t.Fatal(len(atCap))
	}
	if _, err := TerminalEnvelope(atCap, summary.TerminalStateFailed, time.Now()); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	over := append(atCap, ' ')
	if _, err := TerminalEnvelope(over, summary.TerminalStateFailed, time.Now()); !errors.Is(err, ErrSummaryTooLarge) {
		t.Fatalf("one over: %v", err)
	}
}

func FuzzTerminalEnvelope(f *testing.F) {
	f.Add([]byte(`{"schema_version":3}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := TerminalEnvelope(b, summary.TerminalStateFailed, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		if err != nil || out == nil {
			return
		}
		s, err := summary.DecodeSummary(out)
		if err != nil || len(out) > summary.MaxBytes || s.State != summary.StateFailed {
			t.Fatalf("derived an invalid summary %s: %v", out, err)
		}
	})
}

func TestSinkSummaryCap(t *testing.T) {
	s, err := summary.DecodeSummary(running(t, true))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := canonical.NoFold.Marshal(s)
	for _, c := range []struct {
		limit int
		ok    bool
	}{{len(b), true}, {len(b) - 1, false}} {
		lim := V1()
		lim.SummaryMaxSize = c.limit
		sink, err := NewSink(nil, lim)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sink.encodeSummary(s); (err == nil) != c.ok {
			t.Fatalf("summary of %d bytes, limit %d: %v", len(b), c.limit, err)
		}
	}
	lim := V1()
	lim.SummaryMaxSize = summary.MaxBytes + 1
	if _, err := NewSink(nil, lim); err == nil {
		t.Fatal("a limit above v1 accepted")
	}
}
