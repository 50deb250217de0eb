package progress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

var runID = common.RunIdentity{SchemaVersion: 1, RunID: "3f2504e0-4f89-41d3-9a0c-0305e82c3301", TaskExecutionPK: 7, AttemptNumber: 2, ExecutionGeneration: 3}

func step(name string) *flowgraph.Node {
	return &flowgraph.Node{Kind: flowgraph.KindStep, Step: &flowgraph.Step{Callable: flowgraph.Callable{Name: "example.com/app." + name}}}
}

// testGraph: A -> map(B) -> C, with a group of D and E before C.
func testGraph() *flowgraph.Node {
	m := &flowgraph.Node{Kind: flowgraph.KindMap, Map: &flowgraph.Map{Limits: &flowgraph.Limits{MaxConcurrency: 2, MaxItems: 10}},
		Children: []*flowgraph.Node{step("B")}}
	g := &flowgraph.Node{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{step("D"), step("E")}}
	return &flowgraph.Node{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("A"), m, g, step("C")}}
}

// recorder is a fake sink: it keeps every publication and returns the
// error err() says.
type recorder struct {
	mu   sync.Mutex
	pubs []*Publication
	err  func(n int) error
}

func (r *recorder) Publish(_ context.Context, p *Publication) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pubs = append(r.pubs, p)
	if r.err != nil {
		return r.err(len(r.pubs))
	}
	return nil
}

func (r *recorder) all() []*Publication {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Publication(nil), r.pubs...)
}

func start(t *testing.T, pol common.ReportingPolicy, sink Sink, onStale func(error)) *Run {
	t.Helper()
	r, err := Start(context.Background(), RunConfig{Identity: runID, Policy: pol, Root: testGraph(), Sink: sink, OnStale: onStale,
		Plan: PlanInfo{Fingerprint: "sha256:" + fmt.Sprintf("%064x", 1), DefinitionName: "workflow:A", SelectedStrategy: "local"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Finish(context.Background(), nil) })
	return r
}

// Under full: the graph is registered at Start, a publication follows
// each flush interval only when something changed, the final one carries
// the terminal state, and every event was fenced to the run's identity.
func TestRunFullPublications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &recorder{}
		r := start(t, "", sink, nil)
		time.Sleep(DefaultFlushInterval - time.Nanosecond)
		synctest.Wait()
		if n := len(sink.all()); n != 0 {
			t.Fatalf("%d publications before the first interval ended, want 0", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := len(sink.all()); n != 1 {
			t.Fatalf("%d publications after one interval with the registered graph, want 1", n)
		}
		time.Sleep(3 * DefaultFlushInterval)
		synctest.Wait()
		if n := len(sink.all()); n != 1 {
			t.Fatalf("%d publications after three idle intervals, want still 1", n)
		}
		for _, id := range []string{"0.0", "0.2.g0", "0.2.g1", "0.3"} {
			p := r.Producer(id)
			if p == nil {
				t.Fatalf("no producer for node %s", id)
			}
			p.Started(detail.NodeExecution{AssignedResources: map[string]float64{}})
			if id == "0.0" && !Report(Context(context.Background(), p), 1, 4, "a quarter", nil) {
				t.Fatal("Report under full refused")
			}
			p.Complete()
		}
		if r.Producer("0.1.m0") != nil || r.Producer("0.1") != nil {
			t.Fatal("a map item or a map got a leaf producer")
		}
		r.Map(MapCounters{Node: "0.1", Admitted: 3, Completed: 3, Exhausted: true})
		time.Sleep(DefaultFlushInterval)
		synctest.Wait()
		if err := r.Finish(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		pubs := sink.all()
		if len(pubs) != 3 {
			t.Fatalf("%d publications, want 3 (registered, progressed, final)", len(pubs))
		}
		first, last := pubs[0], pubs[2]
		if first.Final || first.Summary.State != summary.StateRunning || first.Summary.SummaryRevision != 1 || !first.TopologyChanged {
			t.Fatalf("first publication %+v", first.Summary)
		}
		if !last.Final || last.Summary.State != summary.StateSucceeded || last.Summary.SummaryRevision != summary.ReservedRevision ||
			last.Summary.Detail.Availability != summary.DetailAvailabilityAvailable || last.Summary.ProgressPercent != 100 {
			t.Fatalf("final summary %+v", last.Summary)
		}
		if len(last.Nodes) != 5 || len(last.Edges) != 5 || len(last.Details) != 5 {
			t.Fatalf("final topology: %d nodes, %d edges, %d details", len(last.Nodes), len(last.Edges), len(last.Details))
		}
		for _, d := range last.Details {
			if err := d.Validate(); err != nil || d.State != detail.NodeStateSucceeded {
				t.Errorf("node %s: %s, %v", d.NodeID, d.State, err)
			}
		}
		if d := last.Details[0]; d.NodeID != "0.0" || d.Progress == nil || d.Progress.Percent != 100 {
			t.Errorf("node 0.0 detail %+v", d)
		}
		for _, p := range pubs {
			if p.Identity != runID || p.Summary.RunIdentity != runID {
				t.Fatalf("publication identity %+v", p.Identity)
			}
		}
		in := last.Snapshot.Ingress
		if in.RejectedByReason.FenceMismatch != 0 || in.Rejected != 0 || in.Accepted < 15 {
			t.Fatalf("ingress %+v: every event must carry the run's identity", in)
		}
		if err := r.Finish(context.Background(), nil); err != nil || len(sink.all()) != 3 {
			t.Fatal("a second Finish published again")
		}
	})
}

// A stale fence stops publication and tells the run (once); Finish
// returns it and publishes nothing more. Other sink errors are retried
// with the next change.
func TestRunStaleFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &recorder{err: func(n int) error {
			if n == 1 {
				return errors.New("database unavailable")
			}
			return fmt.Errorf("task 7: %w", ErrStaleFence)
		}}
		var stale []error
		r := start(t, "", sink, func(err error) { stale = append(stale, err) })
		time.Sleep(DefaultFlushInterval)
		synctest.Wait()
		r.Producer("0.0").Started(detail.NodeExecution{AssignedResources: map[string]float64{}})
		time.Sleep(DefaultFlushInterval)
		synctest.Wait()
		if len(stale) != 1 || !errors.Is(stale[0], ErrStaleFence) || !errors.Is(r.Err(), ErrStaleFence) {
			t.Fatalf("stale %v, Err %v", stale, r.Err())
		}
		r.Producer("0.0").Complete()
		time.Sleep(3 * DefaultFlushInterval)
		if err := r.Finish(context.Background(), nil); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("Finish after a stale fence: %v", err)
		}
		if n := len(sink.all()); n != 2 {
			t.Fatalf("%d publications, want 2 (the failed one and the stale one)", n)
		}
	})
}

// terminal_only and disabled: no leaf producer, no publication while the
// run goes on, one summary-only publication at the end.
func TestRunSummaryOnlyPolicies(t *testing.T) {
	for _, tc := range []struct {
		pol   common.ReportingPolicy
		avail summary.DetailAvailability
	}{
		{common.ReportingPolicyTerminalOnly, summary.DetailAvailabilityOmittedByPolicy},
		{common.ReportingPolicyDisabled, summary.DetailAvailabilityDisabled},
	} {
		synctest.Test(t, func(t *testing.T) {
			sink := &recorder{}
			r := start(t, tc.pol, sink, nil)
			if r.Producer("0.0") != nil || r.Full() {
				t.Fatalf("%s: a producer", tc.pol)
			}
			r.Map(MapCounters{Node: "0.1", Admitted: 1})
			time.Sleep(5 * DefaultFlushInterval)
			synctest.Wait()
			if n := len(sink.all()); n != 0 {
				t.Fatalf("%s: %d publications before the end", tc.pol, n)
			}
			if err := r.Finish(context.Background(), errors.New("leaf failed")); err != nil {
				t.Fatal(err)
			}
			pubs := sink.all()
			if len(pubs) != 1 || !pubs[0].Final || pubs[0].Nodes != nil || pubs[0].Snapshot != nil {
				t.Fatalf("%s: publications %+v", tc.pol, pubs)
			}
			s := pubs[0].Summary // the graph has a map: no declared counts
			if s.ReportingPolicy != tc.pol || s.Detail.Availability != tc.avail || s.State != summary.StateFailed || s.NodeCounts.Declared != nil {
				t.Fatalf("%s: summary %+v", tc.pol, s)
			}
		})
	}
}

// A cancelled run ends CANCELLED; a run that succeeded before every
// node's terminal event arrived is SUCCEEDED with the reason
// terminal_state_unreported.
func TestRunTerminalStates(t *testing.T) {
	r := start(t, "", nil, nil)
	p, err := r.Final(context.Canceled)
	if err != nil || p.Summary.State != summary.StateCancelled {
		t.Fatalf("cancelled: %+v, %v", p, err)
	}
	p, err = r.Final(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Summary
	if s.State != summary.StateSucceeded || s.Detail.Availability != summary.DetailAvailabilityTruncated ||
		len(s.Detail.TruncationReasons) != 1 || s.Detail.TruncationReasons[0] != summary.TruncationReasonTerminalStateUnreported ||
		s.NodeCounts.Succeeded != 5 {
		t.Fatalf("unreported success: %+v", s)
	}
}

func TestStartRefuses(t *testing.T) {
	if _, err := Start(context.Background(), RunConfig{Identity: common.RunIdentity{SchemaVersion: 1, RunID: "x"}}); err == nil {
		t.Fatal("an invalid identity was accepted")
	}
	if _, err := Start(context.Background(), RunConfig{Identity: runID, Policy: common.ReportingPolicySampled}); err == nil {
		t.Fatal("the sampled policy was accepted")
	}
	var nilRun *Run
	if nilRun.Producer("0") != nil || nilRun.Full() || nilRun.Finish(context.Background(), nil) != nil || nilRun.Label("0") != "" {
		t.Fatal("a nil Run reports")
	}
	nilRun.Map(MapCounters{Node: "0"})
}

// The run's own map events skip decoding but change the collector exactly
// as the same bytes through Ingest do.
func TestIngestOwnEqualsIngest(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return at }
	var snaps [2]Snapshot
	for i := range snaps {
		c, err := newCollector(collectorConfig{Identity: runID, Now: clock, CPU: func() time.Duration { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := NewEncoder(runID, clock, nil)
		mi, mc := int64(10), int64(2)
		reg, _ := enc.MapRegistered("0", "map", &mc, &mi)
		c.Ingest(reg)
		for n := int64(1); n <= 11; n++ { // the 11th is over max_items: rejected either way
			wire, ev, err := enc.mapProgressEvent("0", "map", n, n-1, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := canonicalEvent(wire); err != nil || d != string(wire) {
				t.Fatalf("not canonical: %v", err)
			}
			if i == 0 {
				c.Ingest(wire)
			} else {
				c.ingestOwn(wire, ev)
			}
		}
		snaps[i] = c.Snapshot()
	}
	a, err1 := canonical.NoFold.Marshal(snaps[0])
	b, err2 := canonical.NoFold.Marshal(snaps[1])
	if err1 != nil || err2 != nil || string(a) != string(b) || snaps[0].Ingress.Rejected != 1 || snaps[0].Ingress.Accepted != 11 {
		t.Fatalf("Ingest and ingestOwn differ:\n%s\n%s", a, b)
	}
}

// canonicalEvent decodes wire strictly and re-encodes it canonically.
func canonicalEvent(wire []byte) (string, error) {
	if _, err := event.DecodeEvent(wire); err != nil {
		return "", err
	}
	b, err := canonical.NoFold.Transform(wire)
	return string(b), err
}

// TestDiscardRunReportsWithoutCollecting: under Discard a full run's
// leaves still get producers whose reports are accepted, but nothing is
// collected (no snapshot, Ingest refused), and a bad profile still fails.
func TestDiscardRunReportsWithoutCollecting(t *testing.T) {
	id, root := runID, testGraph()
	r, err := Start(t.Context(), RunConfig{Identity: id, Root: root, Discard: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Full() {
		t.Fatal("a discarding full run is still full")
	}
	if _, ok := r.Snapshot(); ok {
		t.Fatal("a discarding run has no snapshot")
	}
	if o := r.Ingest([]byte("{}")); o.Err == nil {
		t.Fatal("a discarding run ingests nothing")
	}
	var p *Producer
	for id := range r.labels {
		if p = r.Producer(id); p != nil {
			break
		}
	}
	if p == nil {
		t.Fatal("no producer for any step node")
	}
	ctx := Context(t.Context(), p)
	if !Report(ctx, 1, 2, "half", nil) {
		t.Fatal("the report was not accepted")
	}
	p.Complete()
	if err := r.Finish(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(t.Context(), RunConfig{Identity: id, Root: root, Discard: true, Profile: limits.Profile{Name: "bogus"}}); err == nil {
		t.Fatal("an invalid profile was accepted")
	}
}
