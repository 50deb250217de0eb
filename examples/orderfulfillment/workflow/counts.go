package orderflow

import "fmt"

// LongestPathLayers returns the number of longest-path layers of a graph given by
// its node ids and edges (source, target): a node's layer is one more than
// the largest layer of its sources, entries are layer 1. An edge naming an
// unknown node or a cycle is an error.
func LongestPathLayers(nodes []string, edges [][2]string) (int, error) {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n] = i
	}
	in := make([]int, len(nodes))
	out := make([][]int, len(nodes))
	for _, e := range edges {
		s, ok1 := idx[e[0]]
		t, ok2 := idx[e[1]]
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("edge %s -> %s names an unknown node", e[0], e[1])
		}
		out[s] = append(out[s], t)
		in[t]++
	}
	layer := make([]int, len(nodes))
	var queue []int
	for i := range nodes {
		if in[i] == 0 {
			queue = append(queue, i)
			layer[i] = 1
		}
	}
	seen, deepest := 0, 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		seen++
		deepest = max(deepest, layer[n])
		for _, t := range out[n] {
			layer[t] = max(layer[t], layer[n]+1)
			if in[t]--; in[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	if seen != len(nodes) {
		return 0, fmt.Errorf("the graph has a cycle")
	}
	return deepest, nil
}

// SeedCounts converts rayflow's topology counts of a run into the seed
// test project's, which expands every map into one node per item with one
// incoming and one outgoing edge each (and no map node): each map of
// items[i] items adds items[i]-1 nodes and 2(items[i]-1) edges.
func SeedCounts(nodes, edges int, items ...int) (seedNodes, seedEdges int) {
	seedNodes, seedEdges = nodes, edges
	for _, n := range items {
		seedNodes += n - 1
		seedEdges += 2 * (n - 1)
	}
	return seedNodes, seedEdges
}
