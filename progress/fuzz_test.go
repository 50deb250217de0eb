package progress

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// fuzzProfile is terminal-v1 narrowed so that the fuzzer reaches the caps.
var fuzzProfile = func() limits.Profile {
	p := limits.ProfileTerminalV1
	p.Name = "fuzz"
	p.TopologyNodes, p.DetailRows, p.TopologyEdges = 4, 4, 3
	p.TopologyEncodedBytes, p.DetailEncodedBytes, p.CombinedEncodedBytes = 1500, 1500, 2500
	return p
}()

// FuzzCollectorIngest feeds arbitrary bytes (after a small valid prefix) to
// a collector: it never panics, accepts only canonical fenced events, and
// its retained state always holds the profile's limits.
func FuzzCollectorIngest(f *testing.F) {
	e := newEnc(f)
	seeds := [][]byte{
		must(e.Initialized(testPlan)),
		must(e.NodeRegistered("a", "A", str("pkg.A"), map[string]json.RawMessage{"mode": json.RawMessage(`"inherit"`)}, nil)),
		must(e.MapRegistered("m", "M", i64(2), i64(8))),
		must(e.MapProgress("m", "M", 3, 1, false)),
		must(e.Submitted("a", "A", "task")),
		must(e.Started("a", "A", detail.NodeExecution{RayTaskID: str("t")})),
		must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: 1, Total: 2, NodeID: "a", Message: str("m"), Metrics: map[string]json.RawMessage{"k": json.RawMessage(`1.5`)}}, true)),
		must(e.OutputPreview("a", detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityAvailable, Value: json.RawMessage(`{"n":1}`)})),
		must(e.Completed("a", "A")),
		must(e.Failed("b", "B", "err")),
		must(e.ProducerReport(event.ProducerReportPayload{SchemaVersion: 1, Offered: 2, Submitted: 1, Superseded: 1, Acknowledged: 1, TerminalHandoff: event.TerminalHandoffSubmitted})),
		must(e.NodeSettled(event.NodeSettledPayload{NodeID: "a", State: event.SettledStateSucceeded, OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: json.RawMessage("null")}})),
		must2(e.EdgesRegistered([]topology.Edge{{Source: "a", Target: "b"}, {Source: "b", Target: "c"}}))[0],
		[]byte(`{"kind":"initialized"}`),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	prefix := [][]byte{
		must(e.NodeRegistered("b", "B", nil, nil, nil)),
		must(e.NodeRegistered("c", "C", nil, nil, nil)),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newCol(t, fuzzProfile)
		for _, p := range prefix {
			c.Ingest(p)
		}
		for range 2 { // twice: duplicates and repeated transitions
			o := c.Ingest(data)
			if o.Accepted {
				canon, err := canonical.NoFold.Transform(data)
				if err != nil || !bytes.Equal(canon, data) || len(data) > event.MaxWireBytes {
					t.Fatalf("accepted non-canonical bytes %q", data)
				}
				if _, err := event.DecodeEvent(data); err != nil {
					t.Fatalf("accepted an invalid event: %v", err)
				}
			} else if !o.Reason.Valid() || o.Err == nil {
				t.Fatalf("rejection without a reason: %+v", o)
			}
			checkInvariants(t, c)
		}
	})
}

func checkInvariants(t *testing.T, c *collector) {
	t.Helper()
	s := c.Snapshot()
	p := c.Profile()
	in := s.Ingress
	if in.RetainedNodes > p.TopologyNodes || in.RetainedEdges > p.TopologyEdges || c.topoBytes > p.TopologyEncodedBytes ||
		c.detailBytes > p.DetailEncodedBytes || in.RetainedBytes > p.CombinedEncodedBytes || int64(len(s.RecentEvents)) > p.RecentEvents {
		t.Fatalf("limits broken: %+v", in)
	}
	if s.TotalNodes != s.PendingNodes+s.RunningNodes+s.CompletedNodes+s.FailedNodes || s.ProgressPercent < 0 || s.ProgressPercent > 100 {
		t.Fatalf("counts broken: %+v", s)
	}
	if in.Accepted+in.Rejected != in.Cost.Ingest.CallsReceived-in.Cost.Ingest.PostDisableCalls {
		t.Fatalf("calls %d != accepted %d + rejected %d", in.Cost.Ingest.CallsReceived, in.Accepted, in.Rejected)
	}
	r := in.RejectedByReason
	if r.ProtocolError+r.FenceMismatch+r.UnexpectedInitialized+r.NodeLimit+r.EdgeLimit+r.RetainedBytesLimit != in.Rejected {
		t.Fatalf("rejections do not sum: %+v", in)
	}
	for i := 1; i < len(s.Graph.Nodes); i++ {
		if s.Graph.Nodes[i-1].NodeID >= s.Graph.Nodes[i].NodeID {
			t.Fatal("nodes unsorted")
		}
	}
	if _, err := canonical.NoFold.Marshal(s); err != nil {
		t.Fatal(err)
	}
}
