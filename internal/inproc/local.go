package inproc

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

// CancelTimeoutDefault is how long a run waits, once cancelled, for leaves
// that are not inside a map with its own CancelTimeout (sdk's
// CancelTimeoutDefault).
const CancelTimeoutDefault = time.Second

// Options tune a local run.
type Options struct {
	// Sequential runs one leaf at a time, in order, for step-by-step
	// debugging: groups run their branches in order and every map window
	// is 1.
	Sequential bool
	// Progress is the run's progress handle (nil: no progress).
	Progress *progress.Run
	// Preview builds a step's output-preview envelope from its result
	// (sdk supplies it; nil: every preview is FAILED).
	Preview func(p *flowgraph.Preview, result any) progress.PreviewEnvelope
	// NoCodecRoundTrip skips the value codec. By default every value that
	// crosses a step boundary (the run's input where a step receives it,
	// every step's output, a bound value per call, a fold's accumulator)
	// is encoded and decoded into a fresh value of its declared type, as
	// on Ray, so a local run predicts a Ray run: what the codec drops is
	// dropped here too and what it refuses fails here too, naming the
	// node. Skipping it is faster but lets values Ray cannot carry pass.
	NoCodecRoundTrip bool
}

// RunProgram executes the compiled flow p on input and returns its
// result. Once ctx is done it returns a *flowgraph.CanceledError within
// the cancel timeout of the running nodes, whatever the leaves do (see the
// package documentation).
func RunProgram(ctx context.Context, p *program.Program, input any, opts Options) (any, error) {
	r := &runner{opts: opts}
	out, err := r.exec(ctx, p.Root, p.Root.ID, input, frame{grace: CancelTimeoutDefault, external: true})
	if cerr := flowgraph.Canceled(ctx); cerr != nil {
		// Never a result nor an item's error after cancellation.
		return nil, cerr
	}
	return out, err
}

type runner struct {
	opts Options
}

// frame is what a node inherits from where it runs.
type frame struct {
	// grace bounds the wait for leaves once the context is done: the
	// enclosing map's CancelTimeout, or CancelTimeoutDefault.
	grace time.Duration
	// guarded is true when the node runs on a goroutine that its waiter
	// abandons on cancellation (a map item, a group branch), so a leaf
	// may run on it directly.
	guarded bool
	// external is true when the node's input comes from outside the
	// workflow (the run's input, or items of it) rather than from a
	// step's already round-tripped output.
	external bool
}

func (r *runner) execNode(ctx context.Context, n *program.Node, id string, in any, f frame) (any, error) {
	if err := flowgraph.Canceled(ctx); err != nil {
		return nil, err
	}
	switch n.Kind {
	case flowgraph.KindStep:
		// A map item's step (guarded: the scheduler bounds it) is called
		// directly, with no closure: this is every item's path.
		if f.guarded {
			return r.step(ctx, n.Step, nodeRef{id: id, item: -1}, in, f.external)
		}
		external := f.external
		return await(ctx, f.grace, func() (any, error) { return r.step(ctx, n.Step, nodeRef{id: id, item: -1}, in, external) })
	case flowgraph.KindChain:
		v := in
		for _, c := range n.Children {
			var err error
			if v, err = r.exec(ctx, c, c.At(id), v, f); err != nil {
				return nil, err
			}
			f.external = false // the next child gets a step's output
		}
		return v, nil
	case flowgraph.KindGroup:
		return r.group(ctx, n, id, in, f)
	case flowgraph.KindMap:
		return r.mapNode(ctx, n, id, in, f)
	}
	return nil, fmt.Errorf("rayflow: node %s: unknown kind %v", id, n.Kind)
}

// nodeRef is a node's runtime id, spelled only when needed (an error names
// it): the body of item item of map id when item ≥ 0 (program.ItemID),
// else id itself. A map item's step is on every item's path, and its id
// is rarely needed.
type nodeRef struct {
	id   string
	item int
	// bare: a map item whose context carries no progress reporter to
	// hide from its leaf (mapBackend.hide is false).
	bare bool
}

func (n nodeRef) String() string {
	if n.item < 0 {
		return n.id
	}
	return program.ItemID(n.id, n.item)
}

// step runs one leaf call (at node id). Unless the codec round trip is
// off, an external input is passed through the codec into the step's input
// type, and the result into its output type, as on Ray. The leaf's own
// error comes back as a *flowgraph.StepError; a value the codec refuses as
// a *flowgraph.ValueError.
func (r *runner) step(ctx context.Context, s *flowgraph.Step, id nodeRef, in any, external bool) (any, error) {
	vals := s.Values
	if r.opts.NoCodecRoundTrip {
		vals = nil
	}
	invoke := s.Invoke
	if vals != nil {
		if external {
			var err error
			if in, err = vals.Input(in); err != nil {
				return nil, &flowgraph.ValueError{Node: id.String(), Value: "input", Type: s.InputType, Err: err}
			}
		}
		if vals.Invoke != nil {
			invoke = vals.Invoke
		}
	}
	lctx, prod := r.leafStart(ctx, s, id)
	out, err := protect(func() (any, error) { return invoke(lctx, in) })
	if err != nil {
		r.leafEnd(prod, s, nil, err)
		var ve *flowgraph.ValueError
		if errors.As(err, &ve) && ve.Node == "" { // the bound value
			c := *ve
			c.Node = id.String()
			return nil, &c
		}
		return nil, &flowgraph.StepError{Node: id.String(), Callable: s.Callable.Name, Err: err}
	}
	if vals != nil {
		if out, err = vals.Output(out); err != nil {
			verr := &flowgraph.ValueError{Node: id.String(), Value: "output", Type: s.OutputType, Err: err}
			r.leafEnd(prod, s, nil, verr)
			return nil, verr
		}
	}
	r.leafEnd(prod, s, out, nil)
	return out, nil
}

// await runs call on its own goroutine and returns its result, unless ctx
// is done first: then it waits up to grace for call to return and returns
// ctx's *flowgraph.CanceledError either way. A call still running after
// grace is abandoned: its goroutine ends whenever the leaf returns, and
// its result is discarded.
func await(ctx context.Context, grace time.Duration, call func() (any, error)) (any, error) {
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1) // never blocks an abandoned call
	go func() {
		v, err := call()
		ch <- result{v, err}
	}()
	select {
	case res := <-ch:
		return res.v, res.err
	case <-ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
	return nil, flowgraph.Canceled(ctx)
}

// drainBound is the longest a node waits for its leaves once cancelled:
// the largest CancelTimeout of the maps it runs (not counting maps inside
// their items), or 0.
func drainBound(n *program.Node) time.Duration {
	if n.Kind == flowgraph.KindMap {
		return n.Limits.CancelTimeout
	}
	var d time.Duration
	for _, c := range n.Children {
		d = max(d, drainBound(c))
	}
	return d
}

func collect(n *program.Node, rs []any) (any, error) {
	if n.Collect == nil {
		return rs, nil
	}
	return n.Collect(rs)
}

// group runs every branch on in, concurrently unless sequential. The first
// failure cancels the other branches; its error is returned once they end,
// or once the cancel timeout passes (stragglers are abandoned).
func (r *runner) group(parent context.Context, n *program.Node, id string, in any, f frame) (any, error) {
	rs := make([]any, len(n.Children))
	if r.opts.Sequential {
		for i, c := range n.Children {
			v, err := r.exec(parent, c, c.At(id), in, f)
			if err != nil {
				return nil, err
			}
			rs[i] = v
		}
		return collect(n, rs)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	branch := frame{grace: f.grace, guarded: true, external: f.external}
	for i, c := range n.Children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := r.exec(ctx, c, c.At(id), in, branch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
					cancel(err)
				}
				return
			}
			rs[i] = v
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-ctx.Done():
		t := time.NewTimer(max(f.grace, drainBound(n)))
		defer t.Stop()
		select {
		case <-all:
		case <-t.C: // stragglers are abandoned
		}
	}
	if err := flowgraph.Canceled(parent); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return nil, first
	}
	return collect(n, rs)
}

// mapNode runs the map body once per input item through the executor's
// map scheduler (internal/executor), which owns the window, MaxItems, item
// batching, the first failure and its drain, the ordered fold and the
// progress counters; this engine's backend (mapBackend) runs the items on
// goroutines in process.
func (r *runner) mapNode(parent context.Context, n *program.Node, id string, in any, f frame) (any, error) {
	m := n.Map
	items, err := m.Items(in)
	if err != nil {
		return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
	}
	lim := executor.Limits{Node: id}
	if m.Limits != nil {
		lim.MaxItems, lim.Window, lim.CancelTimeout = m.Limits.MaxItems, m.Limits.MaxConcurrency, m.Limits.CancelTimeout
	}
	if lim.CancelTimeout <= 0 {
		lim.CancelTimeout = CancelTimeoutDefault
	}
	if err := executor.CheckSize(lim, items.Len); err != nil {
		return nil, err
	}
	if r.opts.Sequential {
		lim.Window = 1
	}
	lim.BatchSize = m.BatchSize(lim.Window) // 1 unless batched; never above the window
	if m.AutoBatching && lim.BatchSize > 1 {
		c := executor.LocalTaskCost()
		lim.Auto = &c
	}
	report := r.mapReport
	window := lim.Window
	if window <= 0 { // eager map: every item at once
		window = int(^uint(0) >> 1)
	}
	mw := telemetry.OpenMapWindow(engineName, window)
	defer mw.Close()
	b := &mapBackend{r: r, mw: mw, body: n.Children[0], id: id,
		item: frame{grace: lim.CancelTimeout, guarded: true, external: f.external}}
	if m.Resume != nil && m.Codec != nil {
		if l := itemledger.From(parent); l != nil {
			lim.Resume = &executor.Resume{Ledger: l, Scope: itemledger.Scope{Node: id, Code: n.ItemCode}, MaxResultBytes: m.Resume.MaxResultBytes}
			b.codec = m.Codec
		}
	}
	if b.body.Kind == flowgraph.KindStep && !telemetry.Recording(parent) {
		b.items = telemetry.MapItems(parent, id)
		b.hide = reporterIn(parent)
	}
	if m.Fold == nil {
		ls := &listSink{n: n}
		if items.Len > 0 {
			ls.results = make([]any, 0, items.Len) // a sized input: the list never grows
		}
		return runItems(parent, lim, items, b, executor.Sink[any, any](ls), report)
	}
	acc, err := m.Fold.Initial()
	if err != nil {
		return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
	}
	lim.Ordered, lim.InOrder = true, true
	return runItems(parent, lim, items, b, executor.Sink[any, any](&foldSink{r: r, m: m, id: id, acc: acc, timeout: lim.CancelTimeout}), report)
}

// runItems runs the map's items through the executor: a sized input with
// an indexed read (Items.At) item by item by index, else its sequence,
// pulled as the window has room.
func runItems(parent context.Context, lim executor.Limits, items flowgraph.Items, b *mapBackend,
	sink executor.Sink[any, any], report func(progress.MapCounters)) (any, error) {
	if items.At != nil && items.Len >= 0 {
		return executor.RunIndexed(parent, lim, items.Len, items.At, b, sink, report)
	}
	seq := func(yield func(any, error) bool) {
		for v := range items.Seq {
			if !yield(v, nil) {
				return
			}
		}
	}
	return executor.Run(parent, lim, seq, b, sink, report)
}

// mapBackend runs a map's items in process: each item's body on the
// map's worker goroutine (guarded: the scheduler abandons it after the
// cancel timeout), a batch's items one after another with
// flowgraph.RunBatch.
type mapBackend struct {
	r    *runner
	mw   *telemetry.MapWindow
	body *program.Node
	id   string
	item frame
	// items is set when the body is one step and the map's context
	// records no span: each item then runs on the hot path (runner.item).
	items *telemetry.Items
	// hide is set on the hot path when the map's context carries a
	// progress reporter (its run runs inside a leaf of another run) that
	// each item's leaf must not see.
	hide bool
	// codec encodes the items and results of a resumable map run with an
	// item ledger (executor.Resumer); nil otherwise.
	codec *flowgraph.ItemCodec
}

// Input encodes an item's input as a Ray leaf would get it.
func (b *mapBackend) Input(in any) ([]byte, error) { return b.codec.Input(in) }

// Result encodes an item's result as a Ray leaf would return it.
func (b *mapBackend) Result(_ context.Context, _ int, out any) ([]byte, error) {
	return b.codec.Result(out)
}

// Reuse decodes a recorded result into a fresh value of the body's output
// type, as a Ray leaf's result is decoded.
func (b *mapBackend) Reuse(_ context.Context, _ int, result []byte) (any, error) {
	return b.codec.Decode(result)
}

// reporterIn reports whether ctx carries a progress reporter that
// progress.WithReporter(ctx, nil) hides. A map asks once for all its
// items instead of each item looking for one: WithReporter returns its
// context itself when there is nothing to hide, so a probe (a pointer,
// comparable) comes back unchanged. Were it ever to wrap the probe
// anyway, every item would only call WithReporter again, as before.
func reporterIn(ctx context.Context) bool {
	probe := context.WithValue(ctx, reporterProbe{}, nil)
	return progress.WithReporter(probe, nil) != probe
}

type reporterProbe struct{}

func (b *mapBackend) Item(ctx context.Context, index int, in any) (any, error) {
	return b.r.item(ctx, b, index, in)
}

func (b *mapBackend) Batch(ctx context.Context, base int, items []any, each func(int, any, error)) {
	flowgraph.RunBatch(ctx, len(items), func(ctx context.Context, i int) (any, error) {
		return b.r.item(ctx, b, base+i, items[i])
	}, func(i int, o flowgraph.Outcome[any]) { each(i, o.Value, o.Err) })
}

// Discard has nothing to release: an in-process result is garbage.
func (b *mapBackend) Discard(int, any) {}

// Abort has nothing to cancel beyond the items' context.
func (b *mapBackend) Abort(context.Context, error, time.Duration) {}

// listSink collects a plain map's results by input index.
type listSink struct {
	n       *program.Node
	results []any
}

func (s *listSink) Add(_ context.Context, index int, v any) error {
	if index >= len(s.results) {
		s.results = append(s.results, make([]any, index+1-len(s.results))...)
	}
	s.results[index] = v
	return nil
}

func (s *listSink) Finish(_ context.Context, n int) (any, error) {
	if n > len(s.results) {
		s.results = append(s.results, make([]any, n-len(s.results))...)
	}
	return collect(s.n, s.results[:n:n])
}

// foldSink incorporates a fold's items (in input order) into its
// accumulator: the reducer runs under the map's cancel timeout, and the
// accumulator crosses the codec as on Ray.
type foldSink struct {
	r       *runner
	m       *flowgraph.Map
	id      string
	acc     any
	timeout time.Duration
}

func (s *foldSink) Add(ctx context.Context, _ int, v any) error {
	f := s.m.Fold
	prev := s.acc
	call := func() (any, error) { return protect(func() (any, error) { return f.Apply(ctx, prev, v) }) }
	acc, err := await(ctx, s.timeout, call)
	if err != nil {
		if _, ok := err.(*flowgraph.CanceledError); ok {
			return err
		}
		return &flowgraph.StepError{Node: s.id + ".reducer", Callable: f.Reducer.Callable.Name, Err: err}
	}
	if f.Accumulator != nil && !s.r.opts.NoCodecRoundTrip {
		if acc, err = f.Accumulator(acc); err != nil {
			return &flowgraph.ValueError{Node: s.id + ".reducer", Value: "accumulator", Type: f.Reducer.OutputType, Err: err}
		}
	}
	s.acc = acc
	return nil
}

func (s *foldSink) Finish(context.Context, int) (any, error) { return s.acc, nil }

// protect runs application code (a step, a reducer, an input iterator),
// turning a panic into a *flowgraph.PanicError.
func protect(f func() (any, error)) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &flowgraph.PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	return f()
}
