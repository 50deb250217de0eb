package serve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/rayflow/rayflow/gen/detail"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/serve/reader"
)

// Graph page bounds.
const (
	// MaxGraphNodes is the largest retained topology the graph page lays
	// out; a larger run shows its summary and a message.
	MaxGraphNodes = 50_000
	// WindowNodes caps the nodes (and collapsed groups) one window draws.
	WindowNodes = 400
	// WideLayer is the widest a layer is drawn: a wider layer draws its
	// first WideLayer-1 nodes and one collapsed group for the rest.
	WideLayer = 12
	// LayerListPage is the page size of a collapsed group's node list.
	LayerListPage = 200
	graphPage     = 256 // limit of each read the page makes
	// SparseDetail: a run retaining more node details than this has its
	// states read node by node (single node reads) for the nodes a page
	// shows, not by walking every detail page.
	SparseDetail = 2000
	// sparseReaders is how many single node reads a page runs at once.
	sparseReaders = 4
)

// errGraphTooLarge: the retained topology is over MaxGraphNodes.
var errGraphTooLarge = errors.New("graph too large to lay out")

// errCycle: the topology has a cycle (a corrupt publication).
var errCycle = errors.New("topology has a cycle")

// gnode is one node of a loaded graph.
type gnode struct {
	ID, Label string
	Kind      topology.NodeKind
	State     detail.NodeState
	Fanout    *detail.NodeFanout
	// Started and Finished are the detail's started_at and finished_at
	// (canonical UTC timestamps, "" when not recorded); Error is a
	// failed node's error.
	Started, Finished, Error string
	Layer                    int
	index                    int
}

// setDetail copies a node detail's state, fan-out and times into n.
func (n *gnode) setDetail(d *detail.NodeDetail) {
	n.State, n.Fanout = d.State, d.Fanout
	n.Started, n.Finished, n.Error = deref(d.StartedAt), deref(d.FinishedAt), deref(d.Error)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// graph is one attempt's retained topology with node states, laid out
// in layers by longest path from a source.
type graph struct {
	Summary   *gread.Summary
	Nodes     []gnode // sorted by (layer, topology order)
	Layers    [][]int // node indexes (into Nodes) per layer
	Edges     [][2]int
	byID      map[string]int
	Truncated bool // a page said the topology or detail is not complete
	// Sparse: the node states were not read (SparseDetail); fillStates
	// reads those of the nodes a page shows.
	Sparse bool
}

// fillStates reads the states of the nodes idx by single node reads of
// the summary's attempt (sparseReaders at a time).
func (g *graph) fillStates(ctx context.Context, reads *reader.Service, principal, taskID string, idx []int) error {
	attempt := g.Summary.RunIdentity.AttemptNumber
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range sparseReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out, err := reads.Node(ctx, principal, taskID, attempt, g.Nodes[i].ID)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				if out.Item != nil {
					g.Nodes[i].setDetail(out.Item)
				}
			}
		}()
	}
	for _, i := range idx {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// walkAll reads every page of one collection through fetch (bounded by
// max items), calling each for the items of a page.
func walkAll[T any](ctx context.Context, max int64, fetch func(cursor string) ([]T, *string, bool, error), each func(T)) (complete bool, err error) {
	cursor := ""
	var n int64
	complete = true
	for {
		items, next, comp, err := fetch(cursor)
		if err != nil {
			return false, err
		}
		complete = complete && comp
		n += int64(len(items))
		if n > max {
			return false, errGraphTooLarge
		}
		for _, it := range items {
			each(it)
		}
		if next == nil || *next == "" || len(items) == 0 {
			return complete, nil
		}
		cursor = *next
	}
}

// errChanged: a newer publication replaced the one being read.
var errChanged = errors.New("publication changed while read")

// graphCache keeps the laid-out topology of the few runs last drawn,
// keyed by run and topology version, and their node states by detail
// revision (a run over SparseDetail: only the drawn nodes' states, node
// by node, are read per page): a live page's refresh re-reads only the node details, a
// finished run's only its summary. Every use follows an authorized
// summary read of the same run.
type graphCache struct {
	mu      sync.Mutex
	entries map[string]*graph
	order   []string
}

// graphCacheSize bounds the cache (entries of at most MaxGraphNodes nodes).
const graphCacheSize = 8

func (c *graphCache) get(k string) *graph {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[k]
}

func (c *graphCache) put(k string, g *graph) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*graph{}
	}
	if _, ok := c.entries[k]; !ok {
		c.order = append(c.order, k)
	}
	c.entries[k] = g
	for len(c.order) > graphCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

func pubRev(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// loadGraph reads attempt's summary, topology and node details through
// the read service (pages of graphPage) and lays the graph out; a run
// republished while it is read is read again (twice at most).
func loadGraph(ctx context.Context, reads *reader.Service, cache *graphCache, principal, taskID string, attempt int64) (*graph, error) {
	for try := 0; ; try++ {
		g, err := loadGraphOnce(ctx, reads, cache, principal, taskID, attempt)
		if !errors.Is(err, errChanged) || try == 2 {
			return g, err
		}
	}
}

func loadGraphOnce(ctx context.Context, reads *reader.Service, cache *graphCache, principal, taskID string, attempt int64) (*graph, error) {
	sum, err := reads.Summary(ctx, principal, taskID, attempt)
	if err != nil {
		return nil, err
	}
	g := &graph{Summary: sum, byID: map[string]int{}}
	if sum.Summary == nil || (sum.Availability != summary.DetailAvailabilityAvailable && sum.Availability != summary.DetailAvailabilityTruncated) {
		return g, nil
	}
	if sum.Summary.NodeCounts.RetainedTopology > MaxGraphNodes {
		return g, errGraphTooLarge
	}
	attempt = sum.RunIdentity.AttemptNumber
	topoV, detailR := pubRev(sum.Publication.TopologyVersion), pubRev(sum.Publication.DetailRevision)
	topoKey := fmt.Sprintf("%s|%d|%s|%d|%d", taskID, attempt, sum.RunIdentity.RunID, sum.RunIdentity.ExecutionGeneration, topoV)
	fullKey := fmt.Sprintf("%s|%d", topoKey, detailR)
	if c := cache.get(fullKey); c != nil {
		out := *c
		out.Summary = sum
		return &out, nil
	}
	req := func(cursor string) reader.PageRequest {
		return reader.PageRequest{TaskID: taskID, Attempt: attempt, Limit: graphPage, Cursor: cursor}
	}
	same := func(p gread.Publication, avail summary.DetailAvailability) bool {
		return avail != summary.DetailAvailabilityExpired && pubRev(p.TopologyVersion) == topoV
	}
	topo := cache.get(topoKey)
	if topo == nil {
		var nodes []gnode
		byID := map[string]int{}
		comp, err := walkAll(ctx, MaxGraphNodes, func(c string) ([]topology.Node, *string, bool, error) {
			p, err := reads.TopologyNodes(ctx, principal, req(c))
			if err != nil {
				return nil, nil, false, err
			}
			if !same(p.Publication, p.Availability) {
				return nil, nil, false, errChanged
			}
			return p.Items, p.NextCursor, p.Complete, nil
		}, func(n topology.Node) {
			if _, dup := byID[n.NodeID]; dup {
				return
			}
			byID[n.NodeID] = len(nodes)
			nodes = append(nodes, gnode{ID: n.NodeID, Label: n.Label, Kind: n.Kind, State: detail.NodeStatePending, index: len(nodes)})
		})
		if err != nil {
			return nil, err
		}
		var edges [][2]int
		ecomp, err := walkAll(ctx, 4*MaxGraphNodes, func(c string) ([]topology.Edge, *string, bool, error) {
			p, err := reads.TopologyEdges(ctx, principal, req(c))
			if err != nil {
				return nil, nil, false, err
			}
			if !same(p.Publication, p.Availability) {
				return nil, nil, false, errChanged
			}
			return p.Items, p.NextCursor, p.Complete, nil
		}, func(e topology.Edge) {
			s, ok1 := byID[e.Source]
			t, ok2 := byID[e.Target]
			if ok1 && ok2 {
				edges = append(edges, [2]int{s, t})
			}
		})
		if err != nil {
			return nil, err
		}
		topo = &graph{byID: byID, Truncated: !comp || !ecomp}
		if err := topo.layout(nodes, edges); err != nil {
			return nil, err
		}
		cache.put(topoKey, topo)
	}
	g.byID, g.Layers, g.Edges, g.Truncated = topo.byID, topo.Layers, topo.Edges, topo.Truncated
	g.Nodes = make([]gnode, len(topo.Nodes))
	copy(g.Nodes, topo.Nodes)
	if sum.Summary.NodeCounts.RetainedDetail > SparseDetail {
		g.Sparse = true
		return g, nil
	}
	comp, err := walkAll(ctx, MaxGraphNodes, func(c string) ([]detail.NodeDetail, *string, bool, error) {
		p, err := reads.NodeDetails(ctx, principal, req(c))
		if err != nil {
			return nil, nil, false, err
		}
		if !same(p.Publication, p.Availability) || pubRev(p.Publication.DetailRevision) != detailR {
			return nil, nil, false, errChanged
		}
		return p.Items, p.NextCursor, p.Complete, nil
	}, func(d detail.NodeDetail) {
		if i, ok := g.byID[d.NodeID]; ok {
			g.Nodes[i].setDetail(&d)
		}
	})
	if err != nil {
		return nil, err
	}
	g.Truncated = g.Truncated || !comp
	cache.put(fullKey, g)
	return g, nil
}

// layout assigns each node its longest-path layer (Kahn's order), sorts
// the nodes by (layer, topology order) and re-indexes the edges.
func (g *graph) layout(nodes []gnode, edges [][2]int) error {
	n := len(nodes)
	indeg := make([]int, n)
	out := make([][]int, n)
	for _, e := range edges {
		out[e[0]] = append(out[e[0]], e[1])
		indeg[e[1]]++
	}
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		for _, v := range out[u] {
			if l := nodes[u].Layer + 1; l > nodes[v].Layer {
				nodes[v].Layer = l
			}
			if indeg[v]--; indeg[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	if len(queue) != n {
		return errCycle
	}
	sort.SliceStable(nodes, func(a, b int) bool {
		if nodes[a].Layer != nodes[b].Layer {
			return nodes[a].Layer < nodes[b].Layer
		}
		return nodes[a].index < nodes[b].index
	})
	pos := make([]int, n) // old index → new
	for i := range nodes {
		pos[nodes[i].index] = i
		g.byID[nodes[i].ID] = i
	}
	for i := range edges {
		edges[i] = [2]int{pos[edges[i][0]], pos[edges[i][1]]}
	}
	g.Nodes, g.Edges = nodes, edges
	for i, nd := range nodes {
		for len(g.Layers) <= nd.Layer {
			g.Layers = append(g.Layers, nil)
		}
		g.Layers[nd.Layer] = append(g.Layers[nd.Layer], i)
	}
	return nil
}

// StateCounts counts nodes by state.
type StateCounts struct{ Pending, Running, Succeeded, Failed int64 }

func (c *StateCounts) add(s detail.NodeState, n int64) {
	switch s {
	case detail.NodeStateRunning:
		c.Running += n
	case detail.NodeStateSucceeded:
		c.Succeeded += n
	case detail.NodeStateFailed:
		c.Failed += n
	default:
		c.Pending += n
	}
}

// MapCounts are a map node's item counts by state, from its fanout: the
// items in flight run, the completed ones succeeded (failed when the map
// failed: a map stops at its first failed item, so one of its completed
// items failed), the ones not yet submitted of a bounded map pend.
func MapCounts(state detail.NodeState, f *detail.NodeFanout) StateCounts {
	var c StateCounts
	if f == nil {
		return c
	}
	c.Running = f.InFlightItems
	c.Succeeded = f.CompletedItems
	if state == detail.NodeStateFailed && c.Succeeded > 0 {
		c.Succeeded--
		c.Failed = 1
	} else if state == detail.NodeStateFailed {
		c.Failed = 1
	}
	if f.MaxItems != nil && *f.MaxItems > f.SubmittedItems && !f.InputExhausted {
		c.Pending = *f.MaxItems - f.SubmittedItems
	}
	return c
}

// item is one drawn box: a node, or a collapsed group of a wide layer.
type item struct {
	Node   int // index into Nodes, or -1 for a group
	Layer  int
	Group  []int // the collapsed nodes
	Counts StateCounts
}

// windows splits the drawn items (wide layers collapsed) into windows of
// at most WindowNodes items, whole layers each (a layer draws at most
// WideLayer items, so every window but a last one is nearly full).
func (g *graph) windows() [][]item { return g.windowsOf(nil) }

// windowsOf is windows of the nodes keep marks (every node when keep is
// nil): a layer's other nodes are collapsed into one group of their
// counts, and a layer with no kept node is left out.
func (g *graph) windowsOf(keep []bool) [][]item {
	var out [][]item
	var cur []item
	for l, all := range g.Layers {
		idx, rest := all, []int(nil)
		if keep != nil {
			idx = nil
			for _, i := range all {
				if keep[i] {
					idx = append(idx, i)
				} else {
					rest = append(rest, i)
				}
			}
			if len(idx) == 0 {
				continue
			}
		}
		var row []item
		if len(idx) > WideLayer {
			for _, i := range idx[:WideLayer-1] {
				row = append(row, item{Node: i, Layer: l})
			}
			rest = append(idx[WideLayer-1:len(idx):len(idx)], rest...)
		} else {
			for _, i := range idx {
				row = append(row, item{Node: i, Layer: l})
			}
		}
		if len(rest) > 0 {
			grp := item{Node: -1, Layer: l, Group: rest}
			for _, i := range grp.Group {
				grp.Counts.add(g.Nodes[i].State, 1)
			}
			row = append(row, grp)
		}
		if len(cur)+len(row) > WindowNodes && len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, row...)
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

func (g *graph) String() string {
	return fmt.Sprintf("graph(%d nodes, %d edges)", len(g.Nodes), len(g.Edges))
}
