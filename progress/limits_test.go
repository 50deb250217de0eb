package progress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// nodeRegisteredOfPayload returns a node_registered event whose canonical
// payload is exactly n bytes.
func nodeRegisteredOfPayload(t *testing.T, n int) []byte {
	t.Helper()
	p := event.NodeRegisteredPayload{NodeID: "big", Label: "big", RuntimeEnv: map[string]json.RawMessage{"blob": json.RawMessage(`""`)}, RayOptions: map[string]json.RawMessage{}}
	base := len(must(canonical.NoFold.Marshal(p)))
	p.RuntimeEnv["blob"] = json.RawMessage(`"` + strings.Repeat("x", n-base) + `"`)
	if got := len(must(canonical.NoFold.Marshal(p))); got != n {
		t.Fatalf("payload is %d bytes, want %d", got, n)
	}
	return rawEvent(t, KindNodeRegistered, p, testID)
}

func TestEnvelopeCaps(t *testing.T) {
	c := newCol(t, limits.ProfileV1)
	// Payload exactly 16 KiB: accepted; one byte more: limit_exceeded.
	ingestOK(t, c, nodeRegisteredOfPayload(t, 16384))
	wantReject(t, c.Ingest(nodeRegisteredOfPayload(t, 16385)), event.ErrorReasonLimitExceeded, BucketProtocolError)

	// Wire exactly 32 KiB passes the wire cap (and then fails the canonical
	// check because of its padding); one byte more fails the wire cap.
	good := must(newEnc(t).NodeRegistered("pad", "pad", nil, nil, nil))
	at := append(bytes.Clone(good), bytes.Repeat([]byte(" "), 32768-len(good))...)
	o := c.Ingest(at)
	wantReject(t, o, event.ErrorReasonProtocolError, BucketProtocolError)
	if !strings.Contains(o.Err.Error(), "canonical") {
		t.Fatalf("32 KiB wire failed for %v, want the canonical check", o.Err)
	}
	wantReject(t, c.Ingest(append(at, ' ')), event.ErrorReasonLimitExceeded, BucketProtocolError)

	// The encoder refuses what the collector would refuse.
	e := newEnc(t)
	if _, err := e.Encode(KindNodeRegistered, json.RawMessage(`{"x":"`+strings.Repeat("x", 16384)+`"}`), false); err == nil {
		t.Fatal("encoder built an oversized payload")
	}
}

func TestEdgeBatchCap(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileV1)
	for i := range 34 {
		register(t, e, c, nodeID(i))
	}
	edges := func(n int) []topology.Edge {
		var out []topology.Edge
		for i := 1; i <= n; i++ {
			out = append(out, topology.Edge{Source: nodeID(0), Target: nodeID(i)})
		}
		return out
	}
	wantReject(t, c.Ingest(rawEvent(t, KindEdgesRegistered, event.EdgesRegisteredPayload{Edges: edges(33)}, testID)), event.ErrorReasonLimitExceeded, BucketProtocolError)
	ingestOK(t, c, rawEvent(t, KindEdgesRegistered, event.EdgesRegisteredPayload{Edges: edges(32)}, testID))
	wantReject(t, c.Ingest(rawEvent(t, KindEdgesRegistered, event.EdgesRegisteredPayload{Edges: []topology.Edge{}}, testID)), event.ErrorReasonProtocolError, BucketProtocolError)
	// The encoder splits 33 edges into 32 + 1.
	bs := must2(e.EdgesRegistered(edges(33)))
	if len(bs) != 2 {
		t.Fatalf("%d batches", len(bs))
	}
	for _, b := range bs {
		ingestOK(t, c, b) // the first batch repeats 32 known edges: idempotent
	}
	if d := c.Diagnostics(); d.RetainedEdges != 33 {
		t.Fatal(d.RetainedEdges)
	}
}

func testNodeLimit(t *testing.T, prof limits.Profile) {
	e, c := newEnc(t), newCol(t, prof)
	n := int(prof.TopologyNodes)
	for i := range n {
		register(t, e, c, nodeID(i))
	}
	wantReject(t, c.Ingest(must(e.NodeRegistered(nodeID(n), "one over", nil, nil, nil))), event.ErrorReasonLimitExceeded, BucketNodeLimit)
	wantReject(t, c.Ingest(must(e.MapRegistered(nodeID(n+1), "map over", nil, nil))), event.ErrorReasonLimitExceeded, BucketNodeLimit)
	// Later events of a dropped node are refused for the same reason; an
	// edge batch naming it is accepted without that edge, as truncated.
	wantReject(t, c.Ingest(must(e.Completed(nodeID(n), "one over"))), event.ErrorReasonLimitExceeded, BucketNodeLimit)
	o := ingestOK(t, c, must2(e.EdgesRegistered([]topology.Edge{{Source: nodeID(0), Target: nodeID(1)}, {Source: nodeID(0), Target: nodeID(n)}}))[0])
	if !o.Truncated {
		t.Fatal("dropped edge not marked truncated")
	}
	d := c.Diagnostics()
	if d.RetainedNodes != int64(n) || d.RetainedEdges != 1 || d.RejectedByReason.NodeLimit != 3 || d.Truncated != 1 {
		t.Fatalf("%+v", d)
	}
}

func TestNodeLimitTerminalV1(t *testing.T) { testNodeLimit(t, limits.ProfileTerminalV1) }

func TestNodeLimitV1(t *testing.T) {
	if testing.Short() {
		t.Skip("25,000 registrations")
	}
	testNodeLimit(t, limits.ProfileV1)
}

func testEdgeLimit(t *testing.T, prof limits.Profile) {
	e, c := newEnc(t), newCol(t, prof)
	want := int(prof.TopologyEdges)
	nodes := 2
	for nodes*(nodes-1)/2 < want+1 {
		nodes++
	}
	for i := range nodes {
		register(t, e, c, nodeID(i))
	}
	var all []topology.Edge
	for i := 0; i < nodes && len(all) < want+1; i++ {
		for j := i + 1; j < nodes && len(all) < want+1; j++ {
			all = append(all, topology.Edge{Source: nodeID(i), Target: nodeID(j)})
		}
	}
	for _, b := range must2(e.EdgesRegistered(all[:want])) {
		ingestOK(t, c, b)
	}
	over := must2(e.EdgesRegistered(all[want:]))[0]
	wantReject(t, c.Ingest(over), event.ErrorReasonLimitExceeded, BucketEdgeLimit)
	if d := c.Diagnostics(); d.RetainedEdges != int64(want) || d.RejectedByReason.EdgeLimit != 1 {
		t.Fatalf("%+v", d)
	}
	// Repeating a retained edge at the cap is harmless.
	ingestOK(t, c, must2(e.EdgesRegistered(all[:1]))[0])
}

func TestEdgeLimitTerminalV1(t *testing.T) { testEdgeLimit(t, limits.ProfileTerminalV1) }

func TestEdgeLimitV1(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 edges")
	}
	testEdgeLimit(t, limits.ProfileV1)
}

// TestTopologyBytesTerminalV1 fills the terminal-v1 topology budget
// (2 MiB) exactly, then goes one node and one edge over.
func TestTopologyBytesTerminalV1(t *testing.T) {
	prof := limits.ProfileTerminalV1
	e, c := newEnc(t), newCol(t, prof)
	blob := func(id string, n int) []byte {
		return rawEvent(t, KindNodeRegistered, event.NodeRegisteredPayload{NodeID: id, Label: id,
			RuntimeEnv: map[string]json.RawMessage{"blob": json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}, RayOptions: map[string]json.RawMessage{}}, testID)
	}
	i := 0
	for prof.TopologyEncodedBytes-c.topoBytes > 16000 {
		ingestOK(t, c, blob(nodeID(i), 14000))
		i++
	}
	rest := prof.TopologyEncodedBytes - c.topoBytes
	base := must2(topologySize(&Node{NodeID: nodeID(i), Kind: topology.NodeKindTask, Label: nodeID(i),
		RuntimeEnv: map[string]json.RawMessage{"blob": json.RawMessage(`""`)}, RayOptions: map[string]json.RawMessage{}}))
	ingestOK(t, c, blob(nodeID(i), int(rest-base)))
	if c.topoBytes != prof.TopologyEncodedBytes {
		t.Fatalf("topology bytes %d, want exactly %d", c.topoBytes, prof.TopologyEncodedBytes)
	}
	wantReject(t, c.Ingest(must(e.NodeRegistered("z", "z", nil, nil, nil))), event.ErrorReasonLimitExceeded, BucketRetainedBytesLimit)
	wantReject(t, c.Ingest(must2(e.EdgesRegistered([]topology.Edge{{Source: nodeID(0), Target: nodeID(1)}}))[0]), event.ErrorReasonLimitExceeded, BucketRetainedBytesLimit)
	d := c.Diagnostics()
	if d.RejectedByReason.RetainedBytesLimit != 2 || d.RetainedBytes != c.topoBytes+c.detailBytes || d.RetainedEdges != 0 {
		t.Fatalf("%+v", d)
	}
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// detailRun is a sequence that grows the detail bytes: registrations, then
// large application progress values.
func detailRun(t *testing.T, nodes int) [][]byte {
	e := newEnc(t)
	var out [][]byte
	for i := range nodes {
		out = append(out, must(e.NodeRegistered(nodeID(i), "x", nil, nil, nil)))
	}
	for i := range nodes {
		out = append(out, must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{
			Current: 1, Total: 3, Message: str(strings.Repeat("m", 2048)), NodeID: nodeID(i),
			Metrics: must2(NormalizeMetricsOK(metricsOfSize(4096)))}, false)))
	}
	return out
}

func NormalizeMetricsOK(m map[string]any) (map[string]json.RawMessage, error) {
	out, _, err := normalizeMetrics(m, limits.MetricsV1, nil)
	return out, err
}

// TestDetailBytesExact: a profile whose detail cap is exactly what a run
// retains accepts the run; one byte less refuses its last event.
func TestDetailBytesExact(t *testing.T) {
	run := detailRun(t, 8)
	probe := newCol(t, limits.ProfileV1)
	for _, b := range run {
		ingestOK(t, probe, b)
	}
	exact := limits.ProfileTerminalV1
	exact.Name = "detail-exact"
	exact.DetailEncodedBytes = probe.detailBytes
	at := newCol(t, exact)
	for _, b := range run {
		ingestOK(t, at, b)
	}
	if at.detailBytes != exact.DetailEncodedBytes {
		t.Fatal(at.detailBytes)
	}
	exact.DetailEncodedBytes--
	over := newCol(t, exact)
	for _, b := range run[:len(run)-1] {
		ingestOK(t, over, b)
	}
	wantReject(t, over.Ingest(run[len(run)-1]), event.ErrorReasonLimitExceeded, BucketRetainedBytesLimit)
	// The refused value left the node unchanged.
	if n := over.Snapshot().Graph.Nodes[7]; n.Progress != nil {
		t.Fatal("a refused event mutated the node")
	}
}

// TestDetailBytesTerminalV1 runs into the real 1 MiB detail cap.
func TestDetailBytesTerminalV1(t *testing.T) {
	prof := limits.ProfileTerminalV1
	c := newCol(t, prof)
	run := detailRun(t, int(prof.TopologyNodes))
	rejected := 0
	for _, b := range run {
		o := c.Ingest(b)
		if !o.Accepted {
			wantReject(t, o, event.ErrorReasonLimitExceeded, BucketRetainedBytesLimit)
			rejected++
		}
		if c.detailBytes > prof.DetailEncodedBytes || c.topoBytes+c.detailBytes > prof.CombinedEncodedBytes {
			t.Fatalf("detail bytes %d over the cap", c.detailBytes)
		}
	}
	if rejected == 0 || prof.DetailEncodedBytes-c.detailBytes > 8000 {
		t.Fatalf("rejected %d, detail bytes %d", rejected, c.detailBytes)
	}
}
