package serve

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
)

func layoutOf(t *testing.T, n int, edges [][2]int) (*graph, error) {
	t.Helper()
	nodes := make([]gnode, n)
	for i := range nodes {
		nodes[i] = gnode{ID: fmt.Sprint(i), State: detail.NodeStatePending, index: i}
	}
	g := &graph{byID: map[string]int{}}
	return g, g.layout(nodes, edges)
}

// TestLayoutLongestPath: a node's layer is its longest path from a source.
func TestLayoutLongestPath(t *testing.T) {
	// 0→1→2→3 and 0→3: 3 is on layer 3, not 1; 4 is a lone source.
	g, err := layoutOf(t, 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"0": 0, "1": 1, "2": 2, "3": 3, "4": 0}
	for _, n := range g.Nodes {
		if n.Layer != want[n.ID] {
			t.Errorf("node %s on layer %d, want %d", n.ID, n.Layer, want[n.ID])
		}
	}
	for _, e := range g.Edges {
		if g.Nodes[e[0]].Layer >= g.Nodes[e[1]].Layer {
			t.Errorf("edge %v goes up", e)
		}
	}
	if _, err := layoutOf(t, 3, [][2]int{{0, 1}, {1, 2}, {2, 1}}); !errors.Is(err, errCycle) {
		t.Errorf("cycle: %v", err)
	}
}

// TestWindowsBounds: a layer of WideLayer nodes is drawn whole, one more
// collapses into WideLayer-1 nodes and a group; a window holds at most
// WindowNodes items, whole layers.
func TestWindowsBounds(t *testing.T) {
	star := func(width int) [][2]int { // 0 → 1..width
		var e [][2]int
		for i := 1; i <= width; i++ {
			e = append(e, [2]int{0, i})
		}
		return e
	}
	for _, tc := range []struct{ width, items, groups int }{{WideLayer, 1 + WideLayer, 0}, {WideLayer + 1, 1 + WideLayer, 1}} {
		g, err := layoutOf(t, tc.width+1, star(tc.width))
		if err != nil {
			t.Fatal(err)
		}
		ws := g.windows()
		groups := 0
		for _, it := range ws[0] {
			if it.Node < 0 {
				groups++
				if len(it.Group) != tc.width-(WideLayer-1) || it.Counts.Pending != int64(len(it.Group)) {
					t.Errorf("width %d: group %+v", tc.width, it)
				}
			}
		}
		if len(ws) != 1 || len(ws[0]) != tc.items || groups != tc.groups {
			t.Errorf("width %d: %d windows, %d items, %d groups", tc.width, len(ws), len(ws[0]), groups)
		}
	}
	chain := func(n int) [][2]int {
		var e [][2]int
		for i := 1; i < n; i++ {
			e = append(e, [2]int{i - 1, i})
		}
		return e
	}
	for n, want := range map[int]int{WindowNodes: 1, WindowNodes + 1: 2, 0: 1} {
		g, err := layoutOf(t, n, chain(n))
		if err != nil {
			t.Fatal(err)
		}
		if ws := g.windows(); len(ws) != want || len(ws[0]) > WindowNodes {
			t.Errorf("chain of %d: %d windows", n, len(ws))
		}
	}
}

func TestMapCounts(t *testing.T) {
	ten := int64(10)
	for _, tc := range []struct {
		state detail.NodeState
		f     detail.NodeFanout
		want  StateCounts
	}{
		{detail.NodeStateRunning, detail.NodeFanout{MaxItems: &ten, SubmittedItems: 6, CompletedItems: 4, InFlightItems: 2}, StateCounts{4, 2, 4, 0}},
		{detail.NodeStateRunning, detail.NodeFanout{SubmittedItems: 6, CompletedItems: 4, InFlightItems: 2}, StateCounts{0, 2, 4, 0}},
		{detail.NodeStateFailed, detail.NodeFanout{MaxItems: &ten, SubmittedItems: 3, CompletedItems: 3, InputExhausted: true}, StateCounts{0, 0, 2, 1}},
		{detail.NodeStateSucceeded, detail.NodeFanout{MaxItems: &ten, SubmittedItems: 10, CompletedItems: 10, InputExhausted: true}, StateCounts{0, 0, 10, 0}},
	} {
		if got := MapCounts(tc.state, &tc.f); got != tc.want {
			t.Errorf("%s %+v: %+v, want %+v", tc.state, tc.f, got, tc.want)
		}
	}
}

// TestFit: a line of at most width/8 characters keeps its natural length;
// one character more is squeezed into width (textLength).
func TestFit(t *testing.T) {
	for _, tc := range []struct {
		runes, width, want int
	}{
		{0, 160, 0}, {20, 160, 0}, {21, 160, 160}, {19, 156, 0}, {20, 156, 156}, {200, 174, 174},
	} {
		if got := fit(strings.Repeat("✓", tc.runes), tc.width); got != tc.want {
			t.Errorf("fit(%d runes, %d) = %d, want %d", tc.runes, tc.width, got, tc.want)
		}
	}
}
