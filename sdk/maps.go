package sdk

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Bounds and defaults of a definition.
const (
	// CancelTimeoutDefault is how long a failed map waits for its
	// in-flight items to finish after cancelling them, unless Limits says
	// otherwise.
	CancelTimeoutDefault = time.Second
	// MaxItemsPerTask is the largest WithItemBatching value.
	MaxItemsPerTask = plan.MaxItemsPerTask
	// MaxActorCustomResources caps ActorOptions.Resources.
	MaxActorCustomResources = 32
	// MaxLabelBytes caps a label (Named): 512 bytes of UTF-8, the progress
	// contract's cap for a human label.
	MaxLabelBytes = 512
)

// Limits bound a map (WithLimits): MaxConcurrency, the admission window
// (required, ≥ 1); MaxItems, the cap on input items (0: unbounded; a sized
// input over it fails before any leaf runs, a sequence when item
// MaxItems+1 is read); CancelTimeout, the wait for cancelled in-flight
// items after the first failure (0: CancelTimeoutDefault). It is the
// graph's own type, so the map keeps exactly what is given.
type Limits = flowgraph.Limits

// ActorOptions are the resources of a result-buffer or fold actor:
// NumCPUs (required, > 0), Memory (required, ≥ MaxSerializedBytes), at
// most 32 custom Resources (each > 0) and SchedulingStrategy ("DEFAULT"
// or "", or "SPREAD"). Only these fields exist, so no other Ray actor
// option can be passed.
type ActorOptions = flowgraph.ActorOptions

// ResultBuffer keeps a bounded map's ordered results in one Ray actor so
// the coordinator never holds the list (WithResultBuffer):
// MaxSerializedBytes (required, > 0) bounds the retained encoded bytes.
// Local runs validate and fingerprint it but keep results in memory.
type ResultBuffer = flowgraph.ResultBuffer

// FoldOptions configure Reduce.
type FoldOptions struct {
	MaxSerializedBytes int64 // required, > 0: accumulator plus retained items
	Actor              ActorOptions
	RuntimeEnv         string // named runtime environment profile of the reducer
	Bootstrap          bool   // run the worker-start hook before the reducer
}

// Map runs each once per input item and returns the results in input
// order. Without WithLimits it is eager: every item is admitted at once.
func Map[In, Out any](each Flow[In, Out]) Flow[[]In, []Out] {
	return Flow[[]In, []Out]{mapNode[Out](each.nodeOf(), func(in any) (flowgraph.Items, error) {
		items, err := as[[]In](in)
		if err != nil {
			return flowgraph.Items{}, err
		}
		return flowgraph.Items{Len: len(items), Seq: func(yield func(any) bool) {
			for _, v := range items {
				if !yield(v) {
					return
				}
			}
		}, At: func(i int) any { return items[i] }}, nil
	})}
}

// MapSeq is Map over an in-process sequence, admitted lazily: items are
// pulled only as the admission window has room.
func MapSeq[In, Out any](each Flow[In, Out]) Flow[iter.Seq[In], []Out] {
	return Flow[iter.Seq[In], []Out]{mapNode[Out](each.nodeOf(), func(in any) (flowgraph.Items, error) {
		seq, err := as[iter.Seq[In]](in)
		if err != nil {
			return flowgraph.Items{}, err
		}
		if seq == nil {
			seq = func(func(In) bool) {}
		}
		return flowgraph.Items{Len: -1, Seq: func(yield func(any) bool) {
			for v := range seq {
				if !yield(v) {
					return
				}
			}
		}}, nil
	})}
}

func mapNode[Out any](body *flowgraph.Node, items func(any) (flowgraph.Items, error)) *flowgraph.Node {
	return &flowgraph.Node{
		Kind:     flowgraph.KindMap,
		Children: []*flowgraph.Node{body},
		Map:      &flowgraph.Map{Items: items, Codec: itemCodec[Out]()},
		Collect:  collectSlice[Out],
	}
}

// itemCodec encodes a map's items and results with the value codec, as
// they cross to and from a Ray leaf.
func itemCodec[Out any]() *flowgraph.ItemCodec {
	return &flowgraph.ItemCodec{
		Input:  DefaultCodec.Marshal,
		Result: DefaultCodec.Marshal,
		Decode: func(b []byte) (any, error) {
			var v Out
			if err := DefaultCodec.Unmarshal(b, &v); err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

// ResumeResultBytesDefault is a resumable map's per-item result cap
// unless ResumeResultCap says otherwise; MaxResumeResultBytes is the
// largest cap.
const (
	ResumeResultBytesDefault = 64 << 10
	MaxResumeResultBytes     = plan.MaxLedgerResultBytes
)

// ResumeOption configures WithResume.
type ResumeOption struct{ apply func(*flowgraph.Resume) }

// ResumeResultCap sets the largest encoded item result a resumable map
// keeps (1 … MaxResumeResultBytes bytes; ResumeResultBytesDefault
// otherwise). An item whose result is bigger is not kept: it runs again on
// the next attempt. Another value is an INVALID_RESUME definition error.
func ResumeResultCap(bytes int) ResumeOption {
	return ResumeOption{func(r *flowgraph.Resume) { r.MaxResultBytes = bytes }}
}

// WithResume makes a map (Map or MapSeq) resumable: when its run has an
// item ledger (a durable task's attempt supplies one), each succeeded
// item's encoded result is kept under the digest of its encoded input and
// the map's item code identity, and a later attempt (a retry, or a repair
// under a new build) runs only the items without a kept result. A reused
// result flows on exactly as a computed one: in input order to Reduce and
// WithResultBuffer, counted by MaxItems, the admission window and
// progress (which also counts the reused items). A run without a ledger
// (a plain Run) behaves as without WithResume.
//
// The item code identity covers every step the items depend on (the
// steps before the map and the map's body), each by its Go symbol and its
// declared Version, or, for a step without one, the build's code
// identity: declare versions to keep the items across rebuilds; without
// them a rebuild runs every item again. A changed version invalidates the
// items of this map and of every resumable map after it.
//
// The result cap (ResumeResultCap) is part of the plan (bounds.
// maximum_ledger_result_bytes of the map node, fingerprinted); a map
// without WithResume does not carry it. On any other flow WithResume is a
// NOT_A_MAP definition error.
func (f Flow[In, Out]) WithResume(opts ...ResumeOption) Flow[In, Out] {
	n := f.nodeOf().Clone()
	if n.Kind != flowgraph.KindMap {
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "WithResume applies to sdk.Map and sdk.MapSeq only"}
		return Flow[In, Out]{n}
	}
	r := flowgraph.Resume{MaxResultBytes: ResumeResultBytesDefault}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&r)
		}
	}
	if err := checkResume(&r); err != nil {
		n.Err = err
		return Flow[In, Out]{n}
	}
	n.Map.Resume = &r
	return Flow[In, Out]{n}
}

// checkResume refuses a result cap outside 1 … MaxResumeResultBytes.
func checkResume(r *flowgraph.Resume) error {
	if r.MaxResultBytes < 1 || r.MaxResultBytes > MaxResumeResultBytes {
		return &DefinitionError{Code: CodeInvalidResume, Msg: fmt.Sprintf("ResumeResultCap needs 1 to %d bytes, got %d", MaxResumeResultBytes, r.MaxResultBytes)}
	}
	return nil
}

// WithLimits bounds a map (Map or MapSeq); on any other flow it is a
// definition error reported before the flow runs.
func (f Flow[In, Out]) WithLimits(l Limits) Flow[In, Out] {
	n := f.nodeOf().Clone()
	if n.Kind != flowgraph.KindMap {
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "WithLimits applies to sdk.Map and sdk.MapSeq only"}
		return Flow[In, Out]{n}
	}
	fl := l
	if fl.CancelTimeout == 0 {
		fl.CancelTimeout = CancelTimeoutDefault
	}
	n.Map.Limits = &fl
	return Flow[In, Out]{n}
}

// WithItemBatching runs up to itemsPerTask items of a map (Map or MapSeq)
// per task instead of one: for tiny steps, where a task's own cost
// dominates, it divides the number of tasks by itemsPerTask. 1 (the
// default) is one item per task; the bound is 1 … MaxItemsPerTask, and the
// map's body must be a single step (a batch is that step called once per
// item, one item after another, in one task). Other values, or a body that
// is not a step, are a definition error; on any other flow WithItemBatching
// is a NOT_A_MAP definition error.
//
// Every per-item guarantee holds as without batching: results come back
// one per item in input order (to Reduce and WithResultBuffer too);
// MaxItems and the admission window (MaxConcurrency) count items, not
// tasks, so a batch holds min(itemsPerTask, MaxConcurrency) items and
// MaxConcurrency/itemsPerTask tasks run at once; a failing item fails the
// map with the error it fails with unbatched, naming that item (the items
// after it in its batch are not run); progress counts items; cancellation
// stops a batch before its next item and the run returns within
// CancelTimeout. A batch starts once it holds its items or the input ends.
// The step's resources and Ray options apply per task, so a batch holds
// them for all its items, and a retried task runs its whole batch again.
//
// The value is part of the plan (bounds.maximum_items_per_task of the map
// node, fingerprinted); an unbatched map's plan does not carry it.
func (f Flow[In, Out]) WithItemBatching(itemsPerTask int) Flow[In, Out] {
	n := f.nodeOf().Clone()
	switch {
	case n.Kind != flowgraph.KindMap:
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "WithItemBatching applies to sdk.Map and sdk.MapSeq only"}
	case itemsPerTask < 1 || itemsPerTask > MaxItemsPerTask:
		n.Err = &DefinitionError{Code: CodeInvalidLimits, Msg: fmt.Sprintf("WithItemBatching needs 1 to %d items per task, got %d", MaxItemsPerTask, itemsPerTask)}
	default:
		n.Map.ItemsPerTask = itemsPerTask
		n.Map.AutoBatching = false
	}
	return Flow[In, Out]{n}
}

// itemBatchingAuto is bounds.item_batching of a map with WithAutoBatching.
const itemBatchingAuto = "auto"

// WithAutoBatching is item batching (see WithItemBatching) whose batch
// size the executor chooses itself, task by task, between 1 and maxPerTask
// (and never above the window): from the item durations it observes and
// the engine's per-task cost (about 2 ms on Ray, a few microseconds on the
// local engine) it makes each task long enough for that cost to be a
// small part of it, while keeping at least as many tasks in flight as the
// cluster (or the local machine) has CPUs whenever items remain, and it
// starts unbatched until it has seen items finish. Short steps are batched
// up to maxPerTask; steps far longer than the per-task cost run one item
// per task. The local engine and the Ray engine size batches by the same
// rule, so a local run predicts a Ray run.
//
// Every per-item guarantee of WithItemBatching holds unchanged (order,
// the window counted in items, the failing item's own error, per-item
// progress, cancellation). maxPerTask must be 2 … MaxItemsPerTask and the
// map's body a single step; otherwise, as for WithItemBatching, it is a
// definition error. The latest of WithItemBatching and WithAutoBatching
// wins.
//
// The mode is part of the plan: bounds.item_batching "auto" beside
// bounds.maximum_items_per_task (the cap), both fingerprinted; a plan
// without WithAutoBatching does not carry item_batching.
func (f Flow[In, Out]) WithAutoBatching(maxPerTask int) Flow[In, Out] {
	n := f.nodeOf().Clone()
	switch {
	case n.Kind != flowgraph.KindMap:
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "WithAutoBatching applies to sdk.Map and sdk.MapSeq only"}
	case maxPerTask < 2 || maxPerTask > MaxItemsPerTask:
		n.Err = &DefinitionError{Code: CodeInvalidLimits, Msg: fmt.Sprintf("WithAutoBatching needs a cap of 2 to %d items per task, got %d", MaxItemsPerTask, maxPerTask)}
	default:
		n.Map.ItemsPerTask = maxPerTask
		n.Map.AutoBatching = true
	}
	return Flow[In, Out]{n}
}

// WithResultBuffer keeps the map's results in a Ray actor (see
// ResultBuffer). It requires WithLimits with MaxItems.
func (f Flow[In, Out]) WithResultBuffer(b ResultBuffer) Flow[In, Out] {
	n := f.nodeOf().Clone()
	if n.Kind != flowgraph.KindMap {
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "WithResultBuffer applies to sdk.Map and sdk.MapSeq only"}
		return Flow[In, Out]{n}
	}
	n.Map.Buffer = &b
	return Flow[In, Out]{n}
}

// Reduce folds a bounded map's results, strictly in input order, into one
// accumulator: acc = reducer(ctx, acc, item). initial is invocation data:
// every run gets a fresh copy through the value codec. reducer should be a
// package-level function (its identity is part of the plan).
func Reduce[MapIn, Out, Acc any](m Flow[MapIn, []Out], reducer func(ctx context.Context, acc Acc, item Out) (Acc, error), initial Acc, opts FoldOptions) Flow[MapIn, Acc] {
	n := m.nodeOf().Clone()
	if n.Kind != flowgraph.KindMap {
		n.Err = &DefinitionError{Code: CodeNotAMap, Msg: "Reduce applies to sdk.Map and sdk.MapSeq only"}
		return Flow[MapIn, Acc]{n}
	}
	if reducer == nil {
		n.Err = &DefinitionError{Code: CodeNotAStep, Msg: "Reduce needs a reducer function"}
		return Flow[MapIn, Acc]{n}
	}
	if err := encodable[Acc]("Acc"); err != nil {
		n.Err = err
		return Flow[MapIn, Acc]{n}
	}
	codec := DefaultCodec
	initialBytes, initErr := codec.Marshal(initial)
	id := identify(reducer)
	register(id, nil)
	RegisterReducer(reducer) // so a Ray fold actor's process can call it by name
	n.Map.Fold = &flowgraph.Fold{
		Reducer: flowgraph.Step{Callable: id, RuntimeEnv: opts.RuntimeEnv, Bootstrap: opts.Bootstrap,
			InputType: typeName[Out](), OutputType: typeName[Acc]()},
		Apply: func(ctx context.Context, acc, item any) (any, error) {
			if opts.Bootstrap {
				if err := runBootstrap(ctx); err != nil {
					return nil, err
				}
			}
			a, err := as[Acc](acc)
			if err != nil {
				return nil, err
			}
			it, err := as[Out](item)
			if err != nil {
				return nil, err
			}
			return reducer(ctx, a, it)
		},
		Initial: func() (any, error) {
			if initErr != nil {
				return nil, fmt.Errorf("rayflow: encoding the initial accumulator: %w", initErr)
			}
			var fresh Acc
			if err := codec.Unmarshal(initialBytes, &fresh); err != nil {
				return nil, fmt.Errorf("rayflow: decoding the initial accumulator: %w", err)
			}
			return fresh, nil
		},
		Accumulator:        roundTripOf[Acc](),
		MaxSerializedBytes: opts.MaxSerializedBytes,
		Actor:              opts.Actor,
	}
	n.Collect = nil // the engine returns the accumulator itself
	return Flow[MapIn, Acc]{n}
}
