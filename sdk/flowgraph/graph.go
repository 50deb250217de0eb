package flowgraph

import (
	"context"
	"iter"
	"strings"
	"time"
)

// Kind is what a node does.
type Kind uint8

// Node kinds.
const (
	KindStep  Kind = iota + 1 // one leaf call
	KindChain                 // children in order, each fed the previous result
	KindGroup                 // children fed the same input, results in branch order
	KindMap                   // the single child runs once per input item
)

func (k Kind) String() string {
	switch k {
	case KindStep:
		return "step"
	case KindChain:
		return "chain"
	case KindGroup:
		return "group"
	case KindMap:
		return "map"
	}
	return "invalid"
}

// Node is one workflow node.
type Node struct {
	Kind     Kind
	Label    string
	Children []*Node // chain: in order; group: branches; map: exactly one body
	Step     *Step   // KindStep only
	Map      *Map    // KindMap only
	// Collect turns the ordered child results of a group, or the ordered
	// item results of a map, into the node's typed result ([]Out or a
	// tuple). Nil means []any.
	Collect func([]any) (any, error)
	// Err is a definition error recorded while building (a bad option);
	// the materializer reports it with the node's path before any effect.
	Err error
}

// DisplayLabel is the node's label in progress views and topology: its
// Label (sdk's Flow.Named) when set, else a step's function name (the last
// element of its Go symbol) or the node kind ("map", "chain", "group").
func (n *Node) DisplayLabel() string {
	if n.Label != "" {
		return n.Label
	}
	if n.Kind == KindStep && n.Step != nil && n.Step.Callable.Name != "" {
		name := n.Step.Callable.Name
		return name[strings.LastIndex(name, ".")+1:]
	}
	return n.Kind.String()
}

// Clone returns a shallow copy of n whose slices may be changed freely.
func (n *Node) Clone() *Node {
	c := *n
	c.Children = append([]*Node(nil), n.Children...)
	if n.Step != nil {
		s := *n.Step
		c.Step = &s
	}
	if n.Map != nil {
		m := *n.Map
		c.Map = &m
	}
	return &c
}

// Callable identifies application code.
type Callable struct {
	// Name is the Go symbol (runtime.FuncForPC), e.g.
	// "example.com/app/steps.Resize".
	Name string
	// Resolvable is true when another process running the same binary can
	// find the function by Name: a package-level function registered at
	// package initialization. Closures, method values and generic
	// instantiations are runtime-only identity.
	Resolvable bool
	// Async is always false in Go; kept so the plan's callable kind is
	// explicit ("sync").
	Async bool
}

// Step is one leaf call.
type Step struct {
	Callable Callable
	// Invoke runs the step on the decoded input (the exact Go type the
	// step declared) and returns its result.
	Invoke func(ctx context.Context, in any) (any, error)
	// Bound is the number of bound invocation values (0 or 1). Their
	// values are invocation data, never part of the plan.
	Bound int
	// BoundValue returns the bound value (nil when Bound == 0).
	BoundValue any

	Resources  Resources
	RayOptions map[string]any
	RuntimeEnv string // named profile, "" inherits the outer environment
	Bootstrap  bool
	Preview    *Preview
	// OutputType and InputType name the Go types (for diagnostics and
	// the binding schema), e.g. "[]int".
	InputType, OutputType string
	// Values passes the step's values through the value codec as a
	// process boundary does; nil for a step built without one.
	Values *StepValues
	// Version is the step's declared code version (sdk.CodeVersion; "" when
	// undeclared): a resumable map's item code identity uses it instead
	// of the build's code identity.
	Version string
}

// StepValues round-trip a step's values through the value codec: encode,
// then decode into a fresh value of the declared Go type, exactly as a
// value crossing to or from a Ray leaf. The local engine uses them so
// that a local run sees what a Ray run would. Errors are the codec's.
type StepValues struct {
	// Input round-trips a value of the step's input type.
	Input func(any) (any, error)
	// Output round-trips a value of the step's output type.
	Output func(any) (any, error)
	// Invoke is Step.Invoke with the bound value decoded afresh for the
	// call, as a Ray leaf does; nil when nothing is bound.
	Invoke func(ctx context.Context, in any) (any, error)
}

// Resources are per-leaf Ray resource requests; zero fields are unset
// (sdk.Resources, sdk.WithResources).
type Resources struct {
	NumCPUs         float64
	NumGPUs         float64
	Memory          int64 // bytes
	AcceleratorType string
	Custom          map[string]float64
}

// Preview projects a successful result into a small JSON value.
type Preview struct {
	Callable Callable
	Project  func(result any) (any, error)
}

// Map is a dynamic fan-out over its input items.
type Map struct {
	// Limits is nil for the eager (unbounded) map.
	Limits *Limits
	Buffer *ResultBuffer
	Fold   *Fold
	// Items adapts the node's input ([]In or iter.Seq[In]) to an item
	// source.
	Items func(in any) (Items, error)
	// ItemsPerTask is the map's item batching (sdk's WithItemBatching): one
	// task runs up to this many items, one after another (RunBatch). 0 or
	// 1 is one item per task. When it is above 1 the body is a single step.
	ItemsPerTask int
	// AutoBatching is sdk's WithAutoBatching: ItemsPerTask is then the cap
	// of a batch whose size the executor chooses, task by task, from the
	// item durations it observes (internal/executor's autobatch.go).
	AutoBatching bool
	// Resume is set on a resumable map (sdk's WithResume): its succeeded
	// items' results are kept in the run's item ledger and reused by a
	// later attempt.
	Resume *Resume
	// Codec encodes an item's input and result and decodes a result as
	// the value codec does across a process boundary (the bytes a Ray
	// leaf gets and returns); a resumable map's ledger keeps these bytes.
	Codec *ItemCodec
}

// Resume configures a resumable map (sdk's WithResume).
type Resume struct {
	// MaxResultBytes is the largest encoded item result kept: a bigger
	// one is not recorded and its item runs again next time.
	MaxResultBytes int
}

// ItemCodec is a map's item codec (Map.Codec).
type ItemCodec struct {
	// Input encodes an item's input (a value of the map's item type).
	Input func(any) ([]byte, error)
	// Result encodes an item's result (a value of the body's output type).
	Result func(any) ([]byte, error)
	// Decode decodes an encoded result into a fresh value of the body's
	// output type.
	Decode func([]byte) (any, error)
}

// BatchSize is the most items one task of the map runs, given its
// admission window (≤ 0: unbounded): min(max(ItemsPerTask, 1), window).
// The window counts items, so a batch never holds more items than the
// window has.
func (m *Map) BatchSize(window int) int {
	k := max(m.ItemsPerTask, 1)
	if window > 0 {
		k = min(k, window)
	}
	return k
}

// Limits bound a map (sdk.Limits, sdk's WithLimits).
type Limits struct {
	// MaxConcurrency is the admission window: at most this many items are
	// in flight at once. Required, ≥ 1.
	MaxConcurrency int
	// MaxItems caps the number of input items; 0 means unbounded. A sized
	// input over the cap fails before any leaf runs; a sequence fails when
	// item MaxItems+1 is read.
	MaxItems int
	// CancelTimeout bounds the wait for cancelled in-flight items after the
	// first failure; 0 means sdk.CancelTimeoutDefault.
	CancelTimeout time.Duration
}

// ActorOptions are the resources of a result-buffer or fold actor
// (sdk.ActorOptions). Only these fields exist, so no other Ray actor
// option can be passed.
type ActorOptions struct {
	NumCPUs            float64            // required, > 0
	Memory             int64              // required, ≥ MaxSerializedBytes
	Resources          map[string]float64 // ≤ 32 custom resources, each > 0
	SchedulingStrategy string             // "DEFAULT" (or "") or "SPREAD"
}

// ResultBuffer keeps a bounded map's ordered results in one Ray actor so
// the coordinator never holds the list (sdk.ResultBuffer, sdk's
// WithResultBuffer).
type ResultBuffer struct {
	MaxSerializedBytes int64 // required, > 0: retained encoded bytes
	Actor              ActorOptions
}

// Fold is a strict input-order left fold of a map's results.
type Fold struct {
	Reducer Step // Invoke is unused; see Apply
	Apply   func(ctx context.Context, acc, item any) (any, error)
	Initial func() (any, error) // a fresh copy through the value codec
	// Accumulator round-trips an accumulator through the value codec, as
	// a Ray fold actor keeps it between calls.
	Accumulator        func(any) (any, error)
	MaxSerializedBytes int64
	Actor              ActorOptions
}

// Items is a map's input: a known-length slice or a lazily pulled
// sequence.
type Items struct {
	// Len is the number of items when known (a slice), else -1.
	Len int
	// Seq yields the items in order.
	Seq iter.Seq[any]
	// At, when set (a sized input only), returns item i, 0 ≤ i < Len: the
	// same items Seq yields, read by index, so an engine that runs the
	// items in process reads each one as its window slot frees without
	// pulling Seq through a coroutine. It is a plain read: it neither
	// fails nor panics.
	At func(i int) any
}

// EffectiveRayOptions returns the leaf's Ray task options with its Resources laid
// over them (Resources win) and the display-only keys "name" and "_labels"
// dropped. The materializer normalizes this map into the plan; the Ray
// engine submits it. Callers may change the returned map.
func (s *Step) EffectiveRayOptions() map[string]any {
	o := make(map[string]any, len(s.RayOptions)+5)
	for k, v := range s.RayOptions {
		o[k] = v
	}
	r := s.Resources
	if r.NumCPUs != 0 {
		o["num_cpus"] = r.NumCPUs
	}
	if r.NumGPUs != 0 {
		o["num_gpus"] = r.NumGPUs
	}
	if r.Memory != 0 {
		o["memory"] = r.Memory
	}
	if r.AcceleratorType != "" {
		o["accelerator_type"] = r.AcceleratorType
	}
	if len(r.Custom) > 0 {
		o["resources"] = r.Custom
	}
	delete(o, "name")
	delete(o, "_labels")
	return o
}
