package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk/canonical"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var testPlan = event.Plan{PlanFormat: "rayflow.workflow-plan", PlanFormatVersion: 1,
	Fingerprint:    "sha256:" + strings.Repeat("ab", 32),
	DefinitionName: "fanout", DefinitionRevision: "sha256:" + strings.Repeat("cd", 32),
	TopologyClass: event.PlanTopologyClassDynamic, NodeCount: 4}

// buildRun feeds a small run: 0.0 → 0.1 (map) → 0.2, and 0.0 → 0.3.
func buildRun(t *testing.T, e *Encoder, c *collector) {
	t.Helper()
	ingestOK(t, c, must(e.Initialized(testPlan)))
	env := map[string]json.RawMessage{"mode": json.RawMessage(`"inherit"`), "hash": json.RawMessage(`"sha256:00"`)}
	ingestOK(t, c, must(e.NodeRegistered("0.0", "build_items", str("examples/fanout.buildItems"), env, map[string]json.RawMessage{"num_cpus": json.RawMessage(`1`)})))
	ingestOK(t, c, must(e.MapRegistered("0.1", "calculate", i64(16), i64(100))))
	ingestOK(t, c, must(e.NodeRegistered("0.3", "audit", nil, nil, nil)))
	ingestOK(t, c, must(e.NodeRegistered("0.2", "summarize", nil, nil, nil)))
	for _, b := range must2(e.EdgesRegistered([]topology.Edge{{Source: "0.1", Target: "0.2"}, {Source: "0.0", Target: "0.3"}, {Source: "0.0", Target: "0.1"}})) {
		ingestOK(t, c, b)
	}
	ingestOK(t, c, must(e.Submitted("0.0", "build_items", "task-00")))
	ingestOK(t, c, must(e.Started("0.0", "build_items", detail.NodeExecution{RayTaskID: str("task-00"), RayJobID: str("job-1"), RayNodeID: str("node-1"), RayWorkerID: str("worker-1"), AssignedResources: map[string]float64{"CPU": 1}})))
	ingestOK(t, c, must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: 50, Total: 100, Message: str("Normalizing rows"), Metrics: map[string]json.RawMessage{"last_row": json.RawMessage("50")}, NodeID: "0.0"}, false)))
	ingestOK(t, c, must(e.Completed("0.0", "build_items")))
	ingestOK(t, c, must(e.MapProgress("0.1", "calculate", 10, 4, false)))
	ingestOK(t, c, must(e.Started("0.3", "audit", detail.NodeExecution{})))
	ingestOK(t, c, must(e.Failed("0.3", "audit", "ValueError: bad row")))
}

func TestSnapshotGolden(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileTerminalV1)
	buildRun(t, e, c)
	s := c.Snapshot()
	got, err := canonical.NoFold.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var ind bytes.Buffer
	json.Indent(&ind, got, "", "  ")
	path := filepath.Join("testdata", "snapshot.golden.json")
	if *update {
		os.WriteFile(path, append(ind.Bytes(), '\n'), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(ind.Bytes(), '\n'), want) {
		t.Fatalf("snapshot differs from %s (run with -update):\n%s", path, ind.Bytes())
	}
	// Shape checks independent of the golden file.
	if s.State != StateFailed || s.TotalNodes != 4 || s.CompletedNodes != 1 || s.FailedNodes != 1 || s.RunningNodes != 1 || s.PendingNodes != 1 || s.ProgressPercent != 50 {
		t.Fatalf("counts %+v", s)
	}
	if !bytes.Contains(got, []byte(`"progress_percent":50.0`)) || !bytes.Contains(got, []byte(`"schema_version":2,`)) || !bytes.Contains(got, []byte(`"workflow_id":"rayflow:42"`)) {
		t.Fatal("float or header encoding")
	}
	ids := []string{}
	for _, n := range s.Graph.Nodes {
		ids = append(ids, n.NodeID)
	}
	if strings.Join(ids, ",") != "0.0,0.1,0.2,0.3" {
		t.Fatal(ids)
	}
	if d := s.Graph.Nodes[2].Dependencies; len(d) != 1 || d[0] != "0.1" {
		t.Fatal(d)
	}
	if f := s.Graph.Nodes[1].Fanout; f.InFlightItems != 6 || f.SubmittedItems != 10 || s.Graph.Nodes[1].State != detail.NodeStateRunning {
		t.Fatal(f)
	}
	if p := s.Graph.Nodes[0].Progress; p.Percent != 100 || p.Current != 100 {
		t.Fatalf("a SUCCEEDED node's progress is complete: %+v", p)
	}
	if s.Ingress.Accepted != 13 || s.Ingress.Rejected != 0 || s.Ingress.RetainedNodes != 4 || s.Ingress.RetainedEdges != 3 {
		t.Fatalf("ingress %+v", s.Ingress)
	}
}

func TestStateRules(t *testing.T) {
	e := newEnc(t)
	c := newCol(t, limits.ProfileV1)
	s := c.Snapshot()
	if s.State != StateRunning || s.ProgressPercent != 0 || len(s.Graph.Nodes) != 0 || s.Graph.Edges == nil {
		t.Fatalf("empty: %+v", s)
	}
	if b := must(canonical.NoFold.Marshal(s)); !bytes.Contains(b, []byte(`"progress_percent":0.0`)) || !bytes.Contains(b, []byte(`"graph":{"edges":[],"nodes":[]}`)) {
		t.Fatalf("%s", b)
	}
	for i := range 3 {
		register(t, e, c, nodeID(i))
	}
	ingestOK(t, c, must(e.Completed(nodeID(0), "x")))
	if s := c.Snapshot(); s.State != StateRunning || s.ProgressPercent != 33.3 {
		t.Fatal(s.State, s.ProgressPercent)
	}
	ingestOK(t, c, must(e.Completed(nodeID(1), "x")))
	ingestOK(t, c, must(e.Completed(nodeID(2), "x")))
	s = c.Snapshot()
	if s.State != StateSucceeded || s.ProgressPercent != 100 || !bytes.Contains(must(canonical.NoFold.Marshal(s)), []byte(`"progress_percent":100.0`)) {
		t.Fatal(s.State, s.ProgressPercent)
	}
	// A late FAILED never rewrites a SUCCEEDED node; node_settled does.
	ingestOK(t, c, must(e.Failed(nodeID(2), "x", "late")))
	if c.Snapshot().State != StateSucceeded {
		t.Fatal("late FAILED changed the node")
	}
	ingestOK(t, c, must(e.NodeSettled(event.NodeSettledPayload{NodeID: nodeID(2), State: event.SettledStateFailed, Error: str("err"),
		OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityUnavailable, Value: json.RawMessage("null")}})))
	if s := c.Snapshot(); s.State != StateFailed || s.FailedNodes != 1 || s.ProgressPercent != 100 {
		t.Fatal(s.State, s.FailedNodes)
	}
}

func TestFenceMismatch(t *testing.T) {
	c := newCol(t, limits.ProfileV1)
	other := []func(*common.RunIdentity){
		func(r *common.RunIdentity) { r.RunID = "2eb22ff3-5fd2-43a0-834c-d920737b584d" },
		func(r *common.RunIdentity) { r.TaskExecutionPK++ },
		func(r *common.RunIdentity) { r.AttemptNumber++ },
		func(r *common.RunIdentity) { r.ExecutionGeneration++ },
	}
	for i, f := range other {
		id := testID
		f(&id)
		e, _ := NewEncoder(id, newClock().Now, nil)
		wantReject(t, c.Ingest(must(e.NodeRegistered("a", "a", nil, nil, nil))), event.ErrorReasonFenceMismatch, BucketFenceMismatch)
		if d := c.Diagnostics(); d.RejectedByReason.FenceMismatch != int64(i+1) || d.RetainedNodes != 0 || d.Cost.Ingest.DecodedCalls != 0 {
			t.Fatalf("%+v", d)
		}
	}
	if c.Revision() != 0 {
		t.Fatal("a fenced-out event moved the revision")
	}
	// Disable: later calls are counted, not processed.
	c.Disable()
	e := newEnc(t)
	wantReject(t, c.Ingest(must(e.Initialized(testPlan))), event.ErrorReasonFenceMismatch, BucketFenceMismatch)
	if d := c.Diagnostics(); d.Cost.Ingest.PostDisableCalls != 1 || d.Rejected != 4 {
		t.Fatalf("%+v", d.Cost.Ingest)
	}
}

func TestNonCanonicalAndMalformedWire(t *testing.T) {
	e := newEnc(t)
	good := must(e.NodeRegistered("a", "A", nil, nil, nil))
	c := newCol(t, limits.ProfileV1)
	cases := map[string][]byte{
		"space after colon": bytes.Replace(good, []byte(`"kind":"node_registered"`), []byte(`"kind": "node_registered"`), 1),
		"trailing newline":  append(bytes.Clone(good), '\n'),
		"unsorted keys":     bytes.Replace(good, []byte(`{"encoding":"identity","kind":"node_registered",`), []byte(`{"kind":"node_registered","encoding":"identity",`), 1),
		"escaped letter":    bytes.Replace(good, []byte(`"label":"A"`), []byte(`"label":"\u0041"`), 1),
		"duplicate key":     bytes.Replace(good, []byte(`"label":"A"`), []byte(`"label":"A","label":"A"`), 1),
		"duplicate top key": bytes.Replace(good, []byte(`"truncated":false}`), []byte(`"truncated":false,"truncated":false}`), 1),
		"unknown field":     bytes.Replace(good, []byte(`"truncated":false}`), []byte(`"truncated":false,"x":1}`), 1),
		"bad kind":          bytes.Replace(good, []byte(`"node_registered"`), []byte(`"node_deleted"`), 1),
		"profile":           bytes.Replace(good, []byte(`"limits_profile":"v1"`), []byte(`"limits_profile":"v2"`), 1),
		"not json":          []byte(`{`),
		"empty":             nil,
		"bad utf8":          bytes.Replace(good, []byte(`"label":"A"`), []byte("\"label\":\"\xff\""), 1),
	}
	for name, b := range cases {
		if bytes.Equal(b, good) {
			t.Fatalf("%s: no change", name)
		}
		o := c.Ingest(b)
		wantReject(t, o, event.ErrorReasonProtocolError, BucketProtocolError)
	}
	// Float text: 1.50 is not canonical, 1.5 is.
	ap := must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: 1.5, Total: 2, NodeID: "a", Metrics: map[string]json.RawMessage{}}, false))
	ingestOK(t, c, good)
	wantReject(t, c.Ingest(bytes.Replace(ap, []byte(`"current":1.5`), []byte(`"current":1.50`), 1)), event.ErrorReasonProtocolError, BucketProtocolError)
	ingestOK(t, c, ap)
	if d := c.Diagnostics(); d.RejectedByReason.ProtocolError != int64(len(cases)+1) || d.Accepted != 2 {
		t.Fatalf("%+v", d)
	}
}

func TestUnexpectedInitializedAndUnknownNodes(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileV1)
	ingestOK(t, c, must(e.Initialized(testPlan)))
	wantReject(t, c.Ingest(must(e.Initialized(testPlan))), event.ErrorReasonProtocolError, BucketUnexpectedInitialized)
	wantReject(t, c.Ingest(must(e.Completed("ghost", "g"))), event.ErrorReasonProtocolError, BucketProtocolError)
	register(t, e, c, "a")
	wantReject(t, c.Ingest(must(e.NodeRegistered("a", "again", nil, nil, nil))), event.ErrorReasonProtocolError, BucketProtocolError)
	wantReject(t, c.Ingest(must2(e.EdgesRegistered([]topology.Edge{{Source: "a", Target: "ghost"}}))[0]), event.ErrorReasonProtocolError, BucketProtocolError)
	wantReject(t, c.Ingest(must2(e.EdgesRegistered([]topology.Edge{{Source: "a", Target: "a"}}))[0]), event.ErrorReasonProtocolError, BucketProtocolError)
	if d := c.Diagnostics(); d.RejectedByReason.UnexpectedInitialized != 1 || d.RejectedByReason.ProtocolError != 4 || d.Rejected != 5 {
		t.Fatalf("%+v", d.RejectedByReason)
	}
}

func TestMapAggregateNode(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileV1)
	ingestOK(t, c, must(e.MapRegistered("m", "calc", i64(4), i64(10))))
	if s := c.Snapshot(); s.Graph.Nodes[0].Kind != topology.NodeKindMap || s.Graph.Nodes[0].State != detail.NodeStatePending || *s.Graph.Nodes[0].Fanout != (detail.NodeFanout{MaxConcurrency: s.Graph.Nodes[0].Fanout.MaxConcurrency, MaxItems: s.Graph.Nodes[0].Fanout.MaxItems}) {
		t.Fatal(s.Graph.Nodes[0])
	}
	ingestOK(t, c, must(e.MapProgress("m", "calc", 4, 0, false)))
	ingestOK(t, c, must(e.MapProgress("m", "calc", 10, 7, true)))
	wantReject(t, c.Ingest(must(e.MapProgress("m", "calc", 9, 7, true))), event.ErrorReasonProtocolError, BucketProtocolError)
	wantReject(t, c.Ingest(must(e.MapProgress("m", "calc", 10, 6, true))), event.ErrorReasonProtocolError, BucketProtocolError)
	wantReject(t, c.Ingest(must(e.MapProgress("m", "calc", 10, 7, false))), event.ErrorReasonProtocolError, BucketProtocolError)
	wantReject(t, c.Ingest(must(e.MapProgress("m", "calc", 11, 7, true))), event.ErrorReasonProtocolError, BucketProtocolError)
	// Items are not graph nodes: application progress on the map is refused.
	wantReject(t, c.Ingest(must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: 1, Total: 2, NodeID: "m", Metrics: map[string]json.RawMessage{}}, false))), event.ErrorReasonProtocolError, BucketProtocolError)
	register(t, e, c, "t")
	wantReject(t, c.Ingest(must(e.MapProgress("t", "calc", 1, 0, false))), event.ErrorReasonProtocolError, BucketProtocolError)
	ingestOK(t, c, must(e.MapProgress("m", "calc", 10, 10, true)))
	ingestOK(t, c, must(e.Completed("m", "calc")))
	s := c.Snapshot()
	n := s.Graph.Nodes[0]
	if n.State != detail.NodeStateSucceeded || n.Fanout.InFlightItems != 0 || !n.Fanout.InputExhausted || n.Fanout.CompletedItems != 10 || s.TotalNodes != 2 {
		t.Fatalf("%+v %+v", n, n.Fanout)
	}
}

func TestRevisionsAndReset(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileV1)
	last := c.Revision()
	for i := range 20 {
		o := c.Ingest(must(e.NodeRegistered(nodeID(i%10), "x", nil, nil, nil))) // the second ten are duplicates
		r := c.Snapshot().Revision
		if r < last || (o.Accepted && r != last+1) || (!o.Accepted && r != last) {
			t.Fatalf("revision %d after %d (accepted=%v)", r, last, o.Accepted)
		}
		last = r
	}
	if last != 10 {
		t.Fatal(last)
	}
	id := testID
	id.AttemptNumber = 3
	if err := c.Reset(id); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	if s.Revision != 0 || s.TotalNodes != 0 || s.Ingress.Accepted != 0 || s.RunIdentity != id {
		t.Fatalf("reset: %+v", s)
	}
	wantReject(t, c.Ingest(must(e.NodeRegistered("a", "a", nil, nil, nil))), event.ErrorReasonFenceMismatch, BucketFenceMismatch)
	e3, _ := NewEncoder(id, newClock().Now, nil)
	ingestOK(t, c, must(e3.NodeRegistered("a", "a", nil, nil, nil)))
	if c.Revision() != 1 {
		t.Fatal(c.Revision())
	}
}

func TestRecentEventsBounded(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileV1)
	register(t, e, c, "a")
	for i := range 100 {
		ingestOK(t, c, must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: float64(i), Total: 100, NodeID: "a", Metrics: map[string]json.RawMessage{}}, false)))
	}
	s := c.Snapshot()
	if len(s.RecentEvents) != 32 {
		t.Fatal(len(s.RecentEvents))
	}
	for i := 1; i < len(s.RecentEvents); i++ {
		if s.RecentEvents[i].Timestamp < s.RecentEvents[i-1].Timestamp {
			t.Fatal("recent events out of order")
		}
		if b := must(canonical.NoFold.Marshal(s.RecentEvents[i])); int64(len(b)) > limits.ProfileV1.RecentEventBytes {
			t.Fatal("recent event over 1 KiB")
		}
	}
	if p := s.Graph.Nodes[0].Progress; p.Current != 99 || p.Percent != 99 {
		t.Fatal(p)
	}
}

func TestProducerIntoCollector(t *testing.T) {
	e, c := newEnc(t), newCol(t, limits.ProfileTerminalV1)
	register(t, e, c, "0.1.m0")
	p, _ := NewProducer(ProducerConfig{Encoder: e, NodeID: "0.1.m0", Label: "sync_resource", Sender: loopSender{c}})
	ctx := Context(context.Background(), p)
	p.Started(detail.NodeExecution{RayTaskID: str("t")})
	for i := 1; i <= 100; i++ {
		Report(ctx, float64(i), 200, "rows", map[string]any{"last_row": i, "password": "x"})
	}
	testwait.Until(t, 5*time.Second, "acks", func() bool { return p.Stats().PendingAcknowledgements == 0 })
	s := c.Snapshot()
	n := s.Graph.Nodes[0]
	if n.State != detail.NodeStateRunning || n.Progress.Percent != 50 || string(n.Progress.Metrics["last_row"]) != "100" || !n.Truncated {
		t.Fatalf("%+v %+v", n, n.Progress)
	}
	if _, ok := n.Progress.Metrics["password"]; ok {
		t.Fatal("redacted key crossed")
	}
	p.Complete()
	s = c.Snapshot()
	if s.State != StateSucceeded || s.Ingress.Producer == nil || s.Ingress.Producer.Reports != 1 || s.Ingress.Producer.Offered != 100 || s.Ingress.Producer.TerminalHandoff["not_needed"] != 1 {
		t.Fatalf("%+v", s.Ingress.Producer)
	}
	ap := s.Ingress.AcceptedByKind[KindApplicationProgress]
	if ap == 0 || s.Ingress.Truncated != ap || ap != s.Ingress.Producer.Submitted || s.Ingress.Producer.Acknowledged != ap || s.Ingress.AcceptedByKind[KindProducerReport] != 1 {
		t.Fatalf("%+v", s.Ingress)
	}
	if d := s.Ingress.Cost.DeliveryDelay; d.Samples == 0 {
		t.Fatal("no delivery delay samples")
	}
}
