package orderflow

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// run runs Workflow in process with r and returns its result and final
// progress publication.
func run(t *testing.T, r Request) (Result, *progress.Publication, error) {
	t.Helper()
	final := &progress.Latest{}
	res, err := sdk.Run(context.Background(), Workflow, r, sdk.WithProgress(final))
	p, _ := final.Last()
	if p == nil || !p.Final {
		t.Fatalf("no final publication (err %v)", err)
	}
	return res, p, err
}

// CheckShape checks a final publication of a run of items items against the
// shape of the package doc: 21 node ids, 28 edges, 12 layers, both maps
// counting items items, and the seed counts derived from them.
func CheckShape(t *testing.T, p *progress.Publication, items int) {
	t.Helper()
	var ids []string
	for _, n := range p.Nodes {
		ids = append(ids, n.NodeID)
	}
	want := []string{"0.0", "0.1.g0.0", "0.1.g0.1", "0.1.g0.2", "0.1.g1.0.g0", "0.1.g1.0.g1", "0.1.g1.1", "0.1.g2", "0.1.g3",
		"0.2", "0.3.g0", "0.3.g1.0.g0", "0.3.g1.0.g1", "0.3.g1.1", "0.4", "0.5", "0.6", "0.7.g0", "0.7.g1", "0.7.g2", "0.8"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("node ids (-want +got):\n%s", diff)
	}
	var edges [][2]string
	for _, e := range p.Edges {
		edges = append(edges, [2]string{e.Source, e.Target})
	}
	layers, err := LongestPathLayers(ids, edges)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != Nodes || len(edges) != Edges || layers != Layers {
		t.Fatalf("topology %d nodes, %d edges, %d layers; want %d, %d, %d", len(ids), len(edges), layers, Nodes, Edges, Layers)
	}
	submitted := map[string]int64{}
	for _, d := range p.Details {
		if d.Fanout != nil {
			submitted[d.NodeID] = d.Fanout.SubmittedItems
		}
	}
	if submitted[ValidateMapID] != int64(items) || submitted[ReserveMapID] != int64(items) || len(submitted) != 2 {
		t.Fatalf("map items %v, want %d in %s and %s", submitted, items, ValidateMapID, ReserveMapID)
	}
	sn, se := SeedCounts(len(ids), len(edges), int(submitted[ValidateMapID]), int(submitted[ReserveMapID]))
	wn, we := 21+2*(items-1), 28+4*(items-1)
	if sn != wn || se != we {
		t.Fatalf("seed counts %d/%d, want %d/%d", sn, se, wn, we)
	}
}

func TestShowcaseShape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ items, seedNodes, seedEdges int }{{1, 21, 28}, {3, 25, 36}} {
		res, p, err := run(t, Request{ItemCount: c.items})
		if err != nil {
			t.Fatal(err)
		}
		CheckShape(t, p, c.items)
		sn, se := SeedCounts(Nodes, Edges, c.items, c.items)
		if sn != c.seedNodes || se != c.seedEdges {
			t.Fatalf("%d items: seed counts %d/%d, want %d/%d", c.items, sn, se, c.seedNodes, c.seedEdges)
		}
		if res.Items != c.items || !res.Fulfilled || !slices.Equal(res.Sinks, []string{"primary", "audit", "notification"}) {
			t.Fatalf("result %+v", res)
		}
		for _, d := range p.Details {
			if d.State != detail.NodeStateSucceeded {
				t.Fatalf("%s is %s", d.NodeID, d.State)
			}
		}
	}
}

func TestShowcaseResult(t *testing.T) {
	t.Parallel()
	res, _, err := run(t, DefaultRequest())
	if err != nil {
		t.Fatal(err)
	}
	// item i has i%3+1 units: 1+2+3.
	want := Result{OrderID: "order-3", Items: 3, ReservedUnits: 6, Recommendation: "ship", Fulfilled: true, Sinks: []string{"primary", "audit", "notification"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Fatalf("result (-want +got):\n%s", diff)
	}
}

// TestReservationFailure is the seed's failure fixture: reserve_inventory
// item 0 fails 0.5 alone; the commercial analysis has succeeded, the
// decision, the sinks and the finalizer never ran.
func TestReservationFailure(t *testing.T) {
	t.Parallel()
	_, p, err := run(t, Request{ItemCount: 1, WorkSeconds: 0.001, FailureStage: StageReserveInventory})
	var sf *StageFailure
	if !errors.As(err, &sf) || sf.Stage != StageReserveInventory || sf.Item != 0 {
		t.Fatalf("err %v", err)
	}
	states := map[string]detail.NodeState{}
	for _, d := range p.Details {
		states[d.NodeID] = d.State
	}
	for id, want := range map[string]detail.NodeState{
		"0.5": detail.NodeStateFailed, "0.3.g1.0.g0": detail.NodeStateSucceeded, "0.3.g1.0.g1": detail.NodeStateSucceeded,
		"0.3.g1.1": detail.NodeStateSucceeded, "0.4": detail.NodeStateSucceeded, "0.6": detail.NodeStatePending,
		"0.7.g0": detail.NodeStatePending, "0.7.g1": detail.NodeStatePending, "0.7.g2": detail.NodeStatePending, "0.8": detail.NodeStatePending,
	} {
		if states[id] != want {
			t.Errorf("%s is %s, want %s", id, states[id], want)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r  Request
		ok bool
	}{
		{Request{ItemCount: 1}, true},
		{Request{ItemCount: MaxItems, WorkSeconds: MaxWorkSeconds}, true},
		{Request{ItemCount: 0}, false},
		{Request{ItemCount: MaxItems + 1}, false},
		{Request{ItemCount: 1, WorkSeconds: -0.001}, false},
		{Request{ItemCount: 1, WorkSeconds: MaxWorkSeconds + 0.001}, false},
		{Request{ItemCount: 2, FailureStage: StageReserveInventory, FailureItem: 1}, true},
		{Request{ItemCount: 2, FailureStage: StageReserveInventory, FailureItem: 2}, false},
		{Request{ItemCount: 2, FailureStage: StageValidateItem, FailureItem: -1}, false},
		{Request{ItemCount: 2, FailureStage: StageDecide, FailureItem: 1}, false},
		{Request{ItemCount: 2, FailureStage: "nope"}, false},
		{Request{ItemCount: 2, FailureItem: 1}, false},
	} {
		err := c.r.Validate()
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: %v", c.r, err)
		}
	}
}

func TestLongestPathLayers(t *testing.T) {
	t.Parallel()
	n, err := LongestPathLayers([]string{"a", "b", "c"}, [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}})
	if err != nil || n != 3 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := LongestPathLayers([]string{"a", "b"}, [][2]string{{"a", "b"}, {"b", "a"}}); err == nil {
		t.Fatal("a cycle was accepted")
	}
	if _, err := LongestPathLayers([]string{"a"}, [][2]string{{"a", "x"}}); err == nil {
		t.Fatal("an unknown node was accepted")
	}
}
