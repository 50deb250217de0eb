package progress

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// bigMapGraph: A -> map(B) of at most items items, window window.
func bigMapGraph(items, window int) *flowgraph.Node {
	m := &flowgraph.Node{Kind: flowgraph.KindMap, Map: &flowgraph.Map{Limits: &flowgraph.Limits{MaxConcurrency: window, MaxItems: items}},
		Children: []*flowgraph.Node{step("B")}}
	return &flowgraph.Node{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("A"), m}}
}

// startMap starts a full run of bigMapGraph publishing to sink (nil:
// none) every interval.
func startMap(t *testing.T, items, window int, sink Sink, interval time.Duration) *Run {
	t.Helper()
	r, err := Start(context.Background(), RunConfig{Identity: runID, Root: bigMapGraph(items, window), Sink: sink, FlushInterval: interval,
		Plan: PlanInfo{Fingerprint: "sha256:" + fmt.Sprintf("%064x", 2), DefinitionName: "workflow:M", SelectedStrategy: "local"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// counters is what the executor reports after item i of items finished
// (window items admitted ahead of it).
func counters(i, items, window int) MapCounters {
	admitted := min(i+window, items)
	return MapCounters{Node: "0.1", Admitted: admitted, Completed: i, InFlight: admitted - i, Exhausted: admitted == items}
}

// fanout is a map node's state and counters in a publication.
type fanout struct {
	State                                    detail.NodeState
	Submitted, Completed, InFlight, MaxItems int64
	Exhausted                                bool
}

func mapFanout(t *testing.T, nodes []Node, id string) fanout {
	t.Helper()
	n := nodeOf(t, nodes, id)
	f := n.Fanout
	if f == nil {
		t.Fatalf("node %s has no fan-out", id)
	}
	mi := int64(-1)
	if f.MaxItems != nil {
		mi = *f.MaxItems
	}
	return fanout{n.State, f.SubmittedItems, f.CompletedItems, f.InFlightItems, mi, f.InputExhausted}
}

// consistentFanout reports whether f is a RUNNING map's counters between
// item f.Completed's report and the next one: the admitted count of the
// one or of the other, and the in-flight count and exhaustion that go
// with it.
func consistentFanout(f fanout, items, window int) bool {
	for _, c := range []MapCounters{counters(int(f.Completed), items, window), counters(int(f.Completed)+1, items, window)} {
		want := fanout{State: detail.NodeStateRunning, Submitted: int64(c.Admitted), Completed: f.Completed,
			InFlight: int64(c.Admitted) - f.Completed, MaxItems: int64(items), Exhausted: c.Exhausted}
		if f == want {
			return true
		}
	}
	return false
}

func nodeOf(t *testing.T, nodes []Node, id string) Node {
	t.Helper()
	for _, n := range nodes {
		if n.NodeID == id {
			return n
		}
	}
	t.Fatalf("no node %s", id)
	return Node{}
}

// One report per finished item costs no event: the map's counters reach
// the Collector as one map_progress event for the first report, at most
// one per flush interval, and one for the final report, which is exact.
// Every running publication carries the latest counters of its moment and
// the final one the exact end state.
func TestRunMapCoalescesReports(t *testing.T) {
	const items, window, interval = 1000, 8, 100 * time.Millisecond
	const every = time.Millisecond // one item finishes every millisecond: 10 intervals
	synctest.Test(t, func(t *testing.T) {
		sink := &recorder{}
		r := startMap(t, items, window, sink, interval)
		start := time.Now()
		for i := 1; i < items; i++ {
			r.Map(counters(i, items, window))
			time.Sleep(every)
		}
		r.Map(counters(items, items, window)) // the final report
		elapsed := time.Since(start)
		snap, _ := r.Snapshot()
		if err := r.Finish(context.Background(), nil); err != nil {
			t.Fatal(err)
		}

		intervals := int64(elapsed / interval)
		if got, most := snap.Ingress.AcceptedByKind[KindMapProgress], 1+intervals+1; got > most || got < 3 {
			t.Errorf("%d map_progress events for %d reports in %v, want 3 to %d (first, one per %v interval, final)",
				got, items, elapsed, most, interval)
		}
		if n := snap.Ingress.Rejected; n != 0 {
			t.Errorf("%d events rejected: %+v", n, snap.Ingress.RejectedByReason)
		}
		pubs := sink.all()
		if len(pubs) < 2 || !pubs[len(pubs)-1].Final {
			t.Fatalf("%d publications, the last final %v: want running ones and a final one", len(pubs), len(pubs) > 0 && pubs[len(pubs)-1].Final)
		}
		running := pubs[:len(pubs)-1]
		if int64(len(running)) > intervals {
			t.Errorf("%d running publications in %v, want at most one per %v interval (%d)", len(running), elapsed, interval, intervals)
		}
		var prev fanout
		var midway bool
		for k, p := range running {
			f := mapFanout(t, p.Snapshot.Graph.Nodes, "0.1")
			// Item i is reported at (i-1) ms: the publication at the end of
			// interval k+1 carries item at's counters, or item at+1's (reported
			// at the same fake instant as the tick).
			// That report may be stored while the publication reads the
			// counters: its admitted count can show with the completed
			// count before it (admitted is stored first, read last), never
			// the other way round.
			at := int(interval/every) * (k + 1)
			if !consistentFanout(f, items, window) || f.Completed != int64(at) && f.Completed != int64(at+1) || f.Completed < prev.Completed {
				t.Errorf("publication %d: map %+v, want item %d's or %d's counters (previous %+v)", k, f, at, at+1, prev)
			}
			midway = midway || f.Completed > 0 && f.Completed < items
			prev = f
		}
		if !midway {
			t.Error("no running publication showed the map midway")
		}
		final := pubs[len(pubs)-1]
		want := fanout{State: detail.NodeStateSucceeded, Submitted: items, Completed: items, MaxItems: items, Exhausted: true}
		if diff := cmp.Diff(want, mapFanout(t, final.Snapshot.Graph.Nodes, "0.1")); diff != "" {
			t.Errorf("final map node (-want +got):\n%s", diff)
		}
		if final.Summary.State != summary.StateSucceeded {
			t.Errorf("final summary state %s", final.Summary.State)
		}
	})
}

// The first report makes the map RUNNING at once (its started_at is when
// its first item finished) and a failed map's report settles it at once
// with its exact counters, between two flushes; so does reading the
// state, which folds the latest counters.
func TestRunMapFirstAndFinalAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		final MapCounters
		want  fanout
	}{
		{"failed", MapCounters{Node: "0.1", Admitted: 7, Completed: 5, Failed: true},
			fanout{State: detail.NodeStateFailed, Submitted: 7, Completed: 5, InFlight: 2, MaxItems: 10}},
		{"succeeded", MapCounters{Node: "0.1", Admitted: 10, Completed: 10, Exhausted: true},
			fanout{State: detail.NodeStateSucceeded, Submitted: 10, Completed: 10, MaxItems: 10, Exhausted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := startMap(t, 10, 4, &recorder{}, time.Hour) // no flush while the test runs
				defer r.Finish(context.Background(), nil)
				time.Sleep(time.Second)
				r.Map(MapCounters{Node: "0.1", Admitted: 4, Completed: 1, InFlight: 3})
				first := r.col.Snapshot()
				if f := mapFanout(t, first.Graph.Nodes, "0.1"); f.State != detail.NodeStateRunning || f.Completed != 1 || f.Submitted != 4 {
					t.Fatalf("after the first report: %+v, want RUNNING with 1 of 4 items", f)
				}
				started := nodeOf(t, first.Graph.Nodes, "0.1").StartedAt
				time.Sleep(time.Second)
				r.Map(MapCounters{Node: "0.1", Admitted: 5, Completed: 2, InFlight: 3})
				if f := mapFanout(t, r.col.Snapshot().Graph.Nodes, "0.1"); f.Completed != 1 {
					t.Fatalf("an intermediate report became an event at once: %+v", f)
				}
				r.Map(tc.final)
				s := r.col.Snapshot() // the Collector itself: no fold on read
				if diff := cmp.Diff(tc.want, mapFanout(t, s.Graph.Nodes, "0.1")); diff != "" {
					t.Fatalf("after the final report (-want +got):\n%s", diff)
				}
				if n := nodeOf(t, s.Graph.Nodes, "0.1"); n.StartedAt == nil || *n.StartedAt != *started || n.FinishedAt == nil || *n.FinishedAt <= *started {
					t.Fatalf("map node started %v finished %v, want started at the first report (%v) and finished later", n.StartedAt, n.FinishedAt, *started)
				}
			})
		})
	}
}

// Reading the state (Snapshot, Final, Finish) folds the latest counters: a
// run cancelled between two flushes publishes the counters its map last
// reported.
func TestRunMapReadFoldsLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &recorder{}
		r := startMap(t, 100, 4, sink, time.Hour)
		for i := 1; i <= 30; i++ {
			r.Map(counters(i, 100, 4))
		}
		want := fanout{State: detail.NodeStateRunning, Submitted: 34, Completed: 30, InFlight: 4, MaxItems: 100}
		s, _ := r.Snapshot()
		if diff := cmp.Diff(want, mapFanout(t, s.Graph.Nodes, "0.1")); diff != "" {
			t.Fatalf("Snapshot (-want +got):\n%s", diff)
		}
		r.Map(counters(31, 100, 4))
		want.Submitted, want.Completed = 35, 31
		p, err := r.Final(context.Canceled)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, mapFanout(t, p.Snapshot.Graph.Nodes, "0.1")); diff != "" {
			t.Fatalf("Final (-want +got):\n%s", diff)
		}
		r.Map(counters(32, 100, 4))
		want.Submitted, want.Completed = 36, 32
		if err := r.Finish(context.Background(), context.Canceled); err != nil {
			t.Fatal(err)
		}
		pubs := sink.all()
		if len(pubs) != 1 || !pubs[0].Final || pubs[0].Summary.State != summary.StateCancelled {
			t.Fatalf("%d publications, want the final one (CANCELLED)", len(pubs))
		}
		if diff := cmp.Diff(want, mapFanout(t, pubs[0].Snapshot.Graph.Nodes, "0.1")); diff != "" {
			t.Fatalf("final publication (-want +got):\n%s", diff)
		}
	})
}

// Reports racing each other and the folds (a map's counters reported from
// several goroutines while the state is read) never reach the Collector
// backwards or inconsistent: no event is rejected and the end is exact.
func TestRunMapRacingReports(t *testing.T) {
	const items, window, reporters = 2000, 16, 4
	r := startMap(t, items, window, nil, 0)
	var wg sync.WaitGroup
	for g := range reporters {
		wg.Go(func() {
			for i := g + 1; i < items; i += reporters {
				r.Map(counters(i, items, window))
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			r.Snapshot()
		}
	})
	wg.Wait()
	r.Map(counters(items, items, window))
	s, _ := r.Snapshot()
	if s.Ingress.Rejected != 0 {
		t.Fatalf("%d events rejected (%+v): the counters reached the Collector backwards", s.Ingress.Rejected, s.Ingress.RejectedByReason)
	}
	want := fanout{State: detail.NodeStateSucceeded, Submitted: items, Completed: items, MaxItems: items, Exhausted: true}
	if diff := cmp.Diff(want, mapFanout(t, s.Graph.Nodes, "0.1")); diff != "" {
		t.Fatalf("final map node (-want +got):\n%s", diff)
	}
}
