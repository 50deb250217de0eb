package program

import (
	"iter"
	"strconv"
	"time"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// RootID is the node id of a program's root.
const RootID = "0"

// CancelTimeoutDefault is a map's cancel timeout when its limits set none
// (sdk.CancelTimeoutDefault), and how long a run waits, once cancelled,
// for leaves that are not inside a map.
const CancelTimeoutDefault = time.Second

// Program is a compiled flow: immutable once Compile returns it.
type Program struct {
	// Root is the root node (id RootID).
	Root *Node
	// HasMap is true when the flow contains a map anywhere (its topology
	// is dynamic).
	HasMap bool

	source *flowgraph.Node
	byID   map[string]*Node
}

// Source reports whether the program was compiled from the builder graph
// root (a plan run with its own flow, sdk.WithPlan).
func (p *Program) Source(root *flowgraph.Node) bool { return p != nil && p.source == root }

// Node returns the node of plan id id (a template id inside a map).
func (p *Program) Node(id string) (*Node, bool) {
	n, ok := p.byID[id]
	return n, ok
}

// All yields every node of the program, in no particular order.
func (p *Program) All() iter.Seq[*Node] {
	return func(yield func(*Node) bool) {
		for _, n := range p.byID {
			if !yield(n) {
				return
			}
		}
	}
}

// Node is one compiled node.
type Node struct {
	// ID is the node's plan id; inside a map, the template id of every
	// item ("0.1.m*.0").
	ID string
	// Kind is what the node does.
	Kind flowgraph.Kind
	// Label is the node's own label (sdk's Flow.Named; "" when unset),
	// DisplayLabel its label for views.
	Label, DisplayLabel string
	// Children: a chain's in order, a group's branches; a map's single
	// body (see Body).
	Children []*Node
	// Step is the leaf call of a step node, Map the fan-out of a map node
	// (the builder's bindings to the Go functions).
	Step *flowgraph.Step
	Map  *flowgraph.Map
	// Collect turns a group's or a map's ordered results into the node's
	// typed result (nil: []any).
	Collect func([]any) (any, error)
	// Err is a definition error the builder recorded on the node.
	Err error
	// HasMap is true when the node is a map or contains one.
	HasMap bool
	// Limits are a map's normalized limits (zero for other kinds).
	Limits Limits
	// InMap is true under a dynamic map; InFold under a fold's mapper.
	InMap, InFold bool
	// Missing is true for a nil builder node (a definition error the
	// validation reports); such a node has only its ID.
	Missing bool
	// ItemCode is a resumable map's item code identity (Map.Resume set;
	// zero otherwise): the domain-separated SHA-256 of every step its
	// items depend on (the steps before the map and the steps of its
	// body), each by its callable's symbol and its declared version, or
	// the build's code identity when it declares none (see CompileFor).
	ItemCode [32]byte

	seg string // the node's id segment under its parent (Segment)
}

// Limits are a map's limits as every engine applies them.
type Limits struct {
	// Bounded is false for the eager map (no WithLimits).
	Bounded bool
	// Window is the most items in flight (0: unbounded).
	Window int
	// MaxItems is the most items the map admits (0: no cap).
	MaxItems int
	// CancelTimeout is how long the map waits for its items once
	// cancelled (CancelTimeoutDefault when the limits set none).
	CancelTimeout time.Duration
	// BatchSize is the most items one task runs (1 unless batched; never
	// above the window).
	BatchSize int
	// AutoBatching: BatchSize is the cap of batches the executor sizes
	// itself (sdk's WithAutoBatching; only when BatchSize is above 1).
	AutoBatching bool
}

// Body is a map's body (nil for other kinds or a map without one).
func (n *Node) Body() *Node {
	if n.Kind != flowgraph.KindMap || len(n.Children) == 0 {
		return nil
	}
	return n.Children[0]
}

// At is the node's runtime id when its parent runs as parent: its plan
// id outside a map, an item's own id inside one.
func (n *Node) At(parent string) string { return parent + n.seg }

// ItemID is the runtime id of the body of item i of the map whose
// runtime id is mapID ("0.2.m3"); a negative i gives the template id of
// every item ("0.2.m*").
// It is on every map item's path, so it builds the id in one allocation.
func ItemID(mapID string, i int) string {
	var buf [64]byte
	return string(appendSegment(append(buf[:0], mapID...), flowgraph.KindMap, i))
}

// Segment is the one function that spells node ids: the id of child i of
// a node of kind parent is the parent's id followed by Segment(parent, i):
// ".i" under a chain, ".gi" under a group, ".mi" for a map's item i and
// ".m*" for a map's body template (i < 0) (docs/contracts.md#the-effective-plan).
func Segment(parent flowgraph.Kind, i int) string { return string(appendSegment(nil, parent, i)) }

// appendSegment appends Segment(parent, i) to b.
func appendSegment(b []byte, parent flowgraph.Kind, i int) []byte {
	switch {
	case parent == flowgraph.KindGroup:
		b = append(b, ".g"...)
	case parent == flowgraph.KindMap && i < 0:
		return append(b, ".m*"...)
	case parent == flowgraph.KindMap:
		b = append(b, ".m"...)
	default:
		b = append(b, '.')
	}
	return strconv.AppendInt(b, int64(i), 10)
}

// Compile turns the builder graph rooted at root into a program. It never
// fails: what the graph gets wrong (a nil node, a recorded definition
// error, bad limits) is kept for the validation to report with the
// node's id.
func Compile(root *flowgraph.Node) *Program { return CompileFor(root, "") }

// CompileFor is Compile for a build whose code identity is build (sdk's
// build revision: an environment or VCS revision, or the executable's
// digest): it is the identity of every step without a declared version in
// the item code identities of the resumable maps (Node.ItemCode). So a
// rebuild keeps a map's items only when every step they depend on
// declares an unchanged version. "" (unknown) stands for this process
// alone: its items are never reused by another process.
func CompileFor(root *flowgraph.Node, build string) *Program {
	p := &Program{source: root, byID: map[string]*Node{}}
	p.Root = p.compile(root, "", RootID, false, false)
	p.HasMap = p.Root.HasMap
	if p.HasMap {
		if build == "" {
			build = unknownBuild()
		}
		itemCodes(p.Root, nil, build)
	}
	return p
}

func (p *Program) compile(g *flowgraph.Node, parent, seg string, inMap, inFold bool) *Node {
	if g == nil {
		n := &Node{ID: parent + seg, seg: seg, Missing: true, InMap: inMap, InFold: inFold}
		p.byID[n.ID] = n
		return n
	}
	n := &Node{ID: parent + seg, seg: seg, Kind: g.Kind, Label: g.Label, DisplayLabel: g.DisplayLabel(),
		Step: g.Step, Map: g.Map, Collect: g.Collect, Err: g.Err, InMap: inMap, InFold: inFold}
	p.byID[n.ID] = n
	children := g.Children
	if g.Kind == flowgraph.KindMap && len(children) > 1 {
		children = children[:1] // a map has one body
	}
	if len(children) > 0 {
		n.Children = make([]*Node, len(children))
	}
	for i, c := range children {
		var cn *Node
		if g.Kind == flowgraph.KindMap {
			cn = p.compile(c, n.ID, Segment(flowgraph.KindMap, -1), true, g.Map != nil && g.Map.Fold != nil)
		} else {
			cn = p.compile(c, n.ID, Segment(g.Kind, i), inMap, inFold)
		}
		n.Children[i] = cn
		n.HasMap = n.HasMap || cn.HasMap
	}
	if g.Kind == flowgraph.KindMap {
		n.HasMap = true
		if g.Map != nil {
			n.Limits = limitsOf(g.Map)
		}
	}
	return n
}

func limitsOf(m *flowgraph.Map) Limits {
	l := Limits{CancelTimeout: CancelTimeoutDefault}
	if m.Limits != nil {
		l.Bounded = true
		l.Window, l.MaxItems = m.Limits.MaxConcurrency, m.Limits.MaxItems
		if m.Limits.CancelTimeout > 0 {
			l.CancelTimeout = m.Limits.CancelTimeout
		}
	}
	l.BatchSize = m.BatchSize(l.Window)
	l.AutoBatching = m.AutoBatching && l.BatchSize > 1
	return l
}

// Topology visits the program's run-time topology, the graph progress
// shows: every step outside a map and every map is a node (a map's items
// are not), visited in plan order; the edges are the dependencies between
// them (a chain links every exit of one child to every entry of the next;
// a group's entries and exits are its branches'). Edges are generated
// while edge returns true (a consumer bounds them, as the progress limits
// do); the nodes are all visited regardless.
func (p *Program) Topology(node func(n *Node), edge func(source, target *Node) bool) {
	emitting := edge != nil
	var walk func(n *Node) (entries, exits []*Node)
	walk = func(n *Node) (entries, exits []*Node) {
		if n.Kind == flowgraph.KindStep || n.Kind == flowgraph.KindMap {
			node(n)
			return []*Node{n}, []*Node{n}
		}
		for i, c := range n.Children {
			en, ex := walk(c)
			switch {
			case n.Kind == flowgraph.KindGroup:
				entries, exits = append(entries, en...), append(exits, ex...)
			case i == 0:
				entries, exits = en, ex
			default:
				for _, s := range exits {
					for _, t := range en {
						if emitting {
							emitting = edge(s, t)
						}
					}
				}
				if len(en) > 0 {
					exits = ex
				}
			}
		}
		return entries, exits
	}
	walk(p.Root)
}
