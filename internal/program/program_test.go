package program

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

func step(name string) *flowgraph.Node {
	return &flowgraph.Node{Kind: flowgraph.KindStep, Step: &flowgraph.Step{Callable: flowgraph.Callable{Name: "example.com/app." + name},
		Invoke: func(context.Context, any) (any, error) { return nil, nil }}}
}

func mapOf(body *flowgraph.Node, m *flowgraph.Map) *flowgraph.Node {
	return &flowgraph.Node{Kind: flowgraph.KindMap, Map: m, Children: []*flowgraph.Node{body}}
}

// shape is what the tests compare of a compiled node.
type shape struct {
	ID, Label      string
	Kind           flowgraph.Kind
	HasMap         bool
	InMap, InFold  bool
	Missing        bool
	Limits         Limits
	Children       []shape
	IDAt, ItemAt17 string
}

func shapeOf(n *Node, parent string) shape {
	s := shape{ID: n.ID, Label: n.DisplayLabel, Kind: n.Kind, HasMap: n.HasMap, InMap: n.InMap, InFold: n.InFold,
		Missing: n.Missing, Limits: n.Limits, IDAt: n.At(parent)}
	if n.Kind == flowgraph.KindMap {
		s.ItemAt17 = ItemID(n.ID, 17)
	}
	for _, c := range n.Children {
		s.Children = append(s.Children, shapeOf(c, n.ID))
	}
	return s
}

func TestCompile(t *testing.T) {
	bounded := &flowgraph.Map{Limits: &flowgraph.Limits{MaxConcurrency: 4, MaxItems: 10, CancelTimeout: 3 * time.Second}, ItemsPerTask: 8}
	fold := &flowgraph.Map{Limits: &flowgraph.Limits{MaxConcurrency: 2, MaxItems: 5}, Fold: &flowgraph.Fold{}}
	eager := &flowgraph.Map{}
	for _, c := range []struct {
		name string
		root *flowgraph.Node
		want shape
	}{
		{"a step", step("A"), shape{ID: "0", Label: "A", Kind: flowgraph.KindStep, IDAt: "0"}},
		{"nil root", nil, shape{ID: "0", Missing: true, IDAt: "0"}},
		{"chain of a step and a group", &flowgraph.Node{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("A"),
			{Kind: flowgraph.KindGroup, Label: "fan", Children: []*flowgraph.Node{step("B"), nil}}}},
			shape{ID: "0", Label: "chain", Kind: flowgraph.KindChain, IDAt: "0", Children: []shape{
				{ID: "0.0", Label: "A", Kind: flowgraph.KindStep, IDAt: "0.0"},
				{ID: "0.1", Label: "fan", Kind: flowgraph.KindGroup, IDAt: "0.1", Children: []shape{
					{ID: "0.1.g0", Label: "B", Kind: flowgraph.KindStep, IDAt: "0.1.g0"},
					{ID: "0.1.g1", Missing: true, IDAt: "0.1.g1"},
				}},
			}}},
		{"a bounded batched map in a chain", &flowgraph.Node{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("A"), mapOf(step("B"), bounded)}},
			shape{ID: "0", Label: "chain", Kind: flowgraph.KindChain, HasMap: true, IDAt: "0", Children: []shape{
				{ID: "0.0", Label: "A", Kind: flowgraph.KindStep, IDAt: "0.0"},
				{ID: "0.1", Label: "map", Kind: flowgraph.KindMap, HasMap: true, IDAt: "0.1", ItemAt17: "0.1.m17",
					Limits:   Limits{Bounded: true, Window: 4, MaxItems: 10, CancelTimeout: 3 * time.Second, BatchSize: 4},
					Children: []shape{{ID: "0.1.m*", Label: "B", Kind: flowgraph.KindStep, InMap: true, IDAt: "0.1.m*"}}},
			}}},
		{"a fold over a chain, an eager map nested in a map", mapOf(&flowgraph.Node{Kind: flowgraph.KindChain,
			Children: []*flowgraph.Node{step("A"), mapOf(step("B"), eager)}}, fold),
			shape{ID: "0", Label: "map", Kind: flowgraph.KindMap, HasMap: true, IDAt: "0", ItemAt17: "0.m17",
				Limits: Limits{Bounded: true, Window: 2, MaxItems: 5, CancelTimeout: CancelTimeoutDefault, BatchSize: 1},
				Children: []shape{{ID: "0.m*", Label: "chain", Kind: flowgraph.KindChain, HasMap: true, InMap: true, InFold: true, IDAt: "0.m*", Children: []shape{
					{ID: "0.m*.0", Label: "A", Kind: flowgraph.KindStep, InMap: true, InFold: true, IDAt: "0.m*.0"},
					{ID: "0.m*.1", Label: "map", Kind: flowgraph.KindMap, HasMap: true, InMap: true, InFold: true, IDAt: "0.m*.1", ItemAt17: "0.m*.1.m17",
						Limits:   Limits{CancelTimeout: CancelTimeoutDefault, BatchSize: 1},
						Children: []shape{{ID: "0.m*.1.m*", Label: "B", Kind: flowgraph.KindStep, InMap: true, IDAt: "0.m*.1.m*"}}},
				}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Compile(c.root)
			if diff := cmp.Diff(c.want, shapeOf(p.Root, "")); diff != "" {
				t.Fatalf("compiled (-want +got):\n%s", diff)
			}
			if p.HasMap != c.want.HasMap {
				t.Fatalf("Program.HasMap %v, want %v", p.HasMap, c.want.HasMap)
			}
			if !p.Source(c.root) || p.Source(step("other")) {
				t.Fatal("Source does not recognize exactly the compiled graph")
			}
			n := 0
			for node := range p.All() {
				got, ok := p.Node(node.ID)
				if !ok || got != node {
					t.Fatalf("Node(%q) = %v, %v", node.ID, got, ok)
				}
				n++
			}
			if want := count(c.want); n != want {
				t.Fatalf("All yields %d nodes, want %d", n, want)
			}
		})
	}
}

func count(s shape) int {
	n := 1
	for _, c := range s.Children {
		n += count(c)
	}
	return n
}

// An item's runtime id is the map's runtime id and the item's segment; a
// node inside an item takes its id from the item's (At), never from the
// template.
func TestRuntimeIDs(t *testing.T) {
	p := Compile(mapOf(&flowgraph.Node{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{step("A"), step("B")}}, &flowgraph.Map{}))
	body := p.Root.Body()
	item := ItemID(p.Root.ID, 3)
	got := []string{item, body.Children[0].At(item), body.Children[1].At(item), ItemID(p.Root.ID, -1)}
	if diff := cmp.Diff([]string{"0.m3", "0.m3.g0", "0.m3.g1", "0.m*"}, got); diff != "" {
		t.Fatalf("runtime ids (-want +got):\n%s", diff)
	}
}

func TestSegment(t *testing.T) {
	for _, c := range []struct {
		kind flowgraph.Kind
		i    int
		want string
	}{
		{flowgraph.KindChain, 1, ".1"}, {flowgraph.KindGroup, 0, ".g0"}, {flowgraph.KindMap, 3, ".m3"},
		{flowgraph.KindMap, -1, ".m*"}, {flowgraph.KindStep, 0, ".0"},
	} {
		if got := Segment(c.kind, c.i); got != c.want {
			t.Errorf("Segment(%v, %d) = %q, want %q", c.kind, c.i, got, c.want)
		}
	}
}

func TestTopology(t *testing.T) {
	// chain(A, group(B, chain(C, map(D))), E): the map's body is not a
	// topology node; E follows both branches' exits.
	root := &flowgraph.Node{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("A"),
		{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{step("B"),
			{Kind: flowgraph.KindChain, Children: []*flowgraph.Node{step("C"), mapOf(step("D"), &flowgraph.Map{})}}}},
		step("E")}}
	// Inner edges come first: a chain's edges are generated once its
	// children are walked.
	all := []string{"0.1.g1.0->0.1.g1.1", "0.0->0.1.g0", "0.0->0.1.g1.0", "0.1.g0->0.2", "0.1.g1.1->0.2"}
	for _, c := range []struct {
		name     string
		maxEdges int // edges accepted before edge returns false (-1: all)
		edges    []string
	}{
		{"all edges", -1, all},
		{"stopped exactly at the cap", 3, all[:3]},
		{"stopped at one", 1, all[:1]},
	} {
		t.Run(c.name, func(t *testing.T) {
			var nodes, edges []string
			Compile(root).Topology(func(n *Node) { nodes = append(nodes, n.ID) }, func(s, d *Node) bool {
				edges = append(edges, s.ID+"->"+d.ID)
				return c.maxEdges < 0 || len(edges) < c.maxEdges
			})
			if diff := cmp.Diff([]string{"0.0", "0.1.g0", "0.1.g1.0", "0.1.g1.1", "0.2"}, nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.edges, edges); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
}
