package inproc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"time"

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
		call := func() (any, error) { return r.step(ctx, n.Step, id, in, f.external) }
		if f.guarded {
			return call()
		}
		return await(ctx, f.grace, call)
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

// step runs one leaf call. Unless the codec round trip is off, an external
// input is passed through the codec into the step's input type, and the
// result into its output type, as on Ray. The leaf's own error comes back
// as a *flowgraph.StepError; a value the codec refuses as a
// *flowgraph.ValueError.
func (r *runner) step(ctx context.Context, s *flowgraph.Step, id string, in any, external bool) (any, error) {
	vals := s.Values
	if r.opts.NoCodecRoundTrip {
		vals = nil
	}
	invoke := s.Invoke
	if vals != nil {
		if external {
			var err error
			if in, err = vals.Input(in); err != nil {
				return nil, &flowgraph.ValueError{Node: id, Value: "input", Type: s.InputType, Err: err}
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
			c.Node = id
			return nil, &c
		}
		return nil, &flowgraph.StepError{Node: id, Callable: s.Callable.Name, Err: err}
	}
	if vals != nil {
		if out, err = vals.Output(out); err != nil {
			verr := &flowgraph.ValueError{Node: id, Value: "output", Type: s.OutputType, Err: err}
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

// maxResultBuffer bounds the buffer of finished item results a map keeps
// between its workers and its loop.
const maxResultBuffer = 1024

type itemResult struct {
	index int
	value any
	err   error
	// last is set on the result of the last item of its batch: the worker
	// that ran it is free again.
	last bool
}

// batch is the work of one worker: one item (unbatched, held inline) or
// the items of one batch, in input order.
type batch struct {
	one   itemResult
	items []itemResult // nil: one
}

// mapNode runs the map body once per input item within the admission
// window, collecting results as items finish. With item batching
// (flowgraph.Map.BatchSize above 1) items are started in batches: a worker
// runs a batch's items one after another with flowgraph.RunBatch and
// reports each item as it finishes, so results, errors, progress and the
// window stay per item.
func (r *runner) mapNode(parent context.Context, n *program.Node, id string, in any, f frame) (any, error) {
	m := n.Map
	items, err := m.Items(in)
	if err != nil {
		return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
	}
	maxItems, window, cancelTimeout := 0, 0, time.Duration(0)
	if m.Limits != nil {
		maxItems, window, cancelTimeout = m.Limits.MaxItems, m.Limits.MaxConcurrency, m.Limits.CancelTimeout
	}
	if cancelTimeout <= 0 {
		cancelTimeout = CancelTimeoutDefault
	}
	if maxItems > 0 && items.Len > maxItems {
		return nil, &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: items.Len}
	}
	if window <= 0 { // eager map: every item at once
		window = int(^uint(0) >> 1)
	}
	if r.opts.Sequential {
		window = 1
	}
	var acc any
	if m.Fold != nil {
		if acc, err = m.Fold.Initial(); err != nil {
			return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
		}
	}

	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	body := n.Children[0]
	item := frame{grace: cancelTimeout, guarded: true, external: f.external}
	batchSize := m.BatchSize(window) // 1 unless batched; never above the window
	work := make(chan batch)
	// Batched, a worker hands each item's result over without waiting for
	// the map loop (at most window results are outstanding), so the loop
	// takes several at one wake-up; unbatched, the hand-off is direct.
	done := make(chan itemResult)
	if batchSize > 1 {
		done = make(chan itemResult, min(window, maxResultBuffer))
	}
	workers := 0
	mw := telemetry.OpenMapWindow(engineName, window)
	defer mw.Close()
	worker := func() {
		for bt := range work {
			if bt.items == nil {
				it := bt.one
				v, err := r.item(ctx, mw, body, id, it.index, it.value, item)
				done <- itemResult{index: it.index, value: v, err: err, last: true}
				continue
			}
			b := bt.items
			flowgraph.RunBatch(ctx, len(b), func(ctx context.Context, i int) (any, error) {
				return r.item(ctx, mw, body, id, b[i].index, b[i].value, item)
			}, func(i int, o flowgraph.Outcome[any]) {
				done <- itemResult{index: b[i].index, value: o.Value, err: o.Err, last: i == len(b)-1}
			})
		}
	}

	var (
		results   []any           // plain map: by input index
		retained  = map[int]any{} // fold: finished, not yet incorporated
		next      int             // fold: next input index to incorporate
		read      int             // items read from the input
		forming   []itemResult    // items read, waiting for their batch to start
		admitted  int             // items started
		completed int             // items finished successfully (progress)
		open      int             // items holding a window slot (forming ones too)
		running   int             // started items whose result has not arrived
		batches   int             // batches (workers) still running
		failure   error
	)
	// A batch starts once it holds batchSize items or the input ends.
	start := func(bt batch) {
		if batches == workers {
			workers++
			go worker()
		}
		work <- bt
		n := max(len(bt.items), 1)
		admitted += n
		running += n
		batches++
	}
	// The next item is read only when the window has room.
	pull, stop := iter.Pull(items.Seq)
	defer stop()
	exhausted := false
	defer close(work)

	for {
		for failure == nil && !exhausted && open < window {
			var v any
			ok := false
			if _, err := protect(func() (any, error) { v, ok = pull(); return nil, nil }); err != nil {
				failure = fmt.Errorf("rayflow: map %s: reading its input: %w", id, err)
				break
			}
			if !ok {
				exhausted = true
				break
			}
			if maxItems > 0 && read == maxItems {
				failure = &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: maxItems + 1}
				break
			}
			it := itemResult{index: read, value: v}
			read++
			open++
			if m.Fold == nil {
				results = append(results, nil)
			}
			if batchSize == 1 {
				start(batch{one: it})
				continue
			}
			forming = append(forming, it)
			if len(forming) == batchSize {
				start(batch{items: forming})
				forming = nil
			}
		}
		if failure == nil && exhausted && len(forming) > 0 {
			start(batch{items: forming}) // the last, short batch
			forming = nil
		}
		if failure != nil || running == 0 {
			break
		}
		var res itemResult
		select {
		case res = <-done:
		case <-ctx.Done():
			// The run was cancelled: no item is to blame.
			failure = flowgraph.Canceled(parent)
		}
		if failure != nil {
			break
		}
		running--
		if res.last {
			batches--
		}
		if res.err != nil {
			failure = res.err
			break
		}
		completed++
		r.mapReport(progress.MapCounters{Node: id, Admitted: admitted, Completed: completed, InFlight: running, Exhausted: exhausted})
		if m.Fold == nil {
			results[res.index] = res.value
			open--
			continue
		}
		// Fold: incorporate the contiguous prefix; credits return only for
		// incorporated items (head-of-line backpressure).
		retained[res.index] = res.value
		for {
			v, ok := retained[next]
			if !ok {
				break
			}
			delete(retained, next)
			prev := acc
			call := func() (any, error) { return protect(func() (any, error) { return m.Fold.Apply(ctx, prev, v) }) }
			if acc, err = await(ctx, cancelTimeout, call); err != nil {
				if _, ok := err.(*flowgraph.CanceledError); ok {
					failure = err
					break
				}
				failure = &flowgraph.StepError{Node: id + ".reducer", Callable: m.Fold.Reducer.Callable.Name, Err: err}
				break
			}
			if m.Fold.Accumulator != nil && !r.opts.NoCodecRoundTrip {
				if acc, err = m.Fold.Accumulator(acc); err != nil {
					failure = &flowgraph.ValueError{Node: id + ".reducer", Value: "accumulator", Type: m.Fold.Reducer.OutputType, Err: err}
					break
				}
			}
			next++
			open--
		}
		if failure != nil {
			break
		}
	}
	if failure != nil {
		cancel(failure)
		r.drain(done, running, cancelTimeout)
		if err := flowgraph.Canceled(parent); err != nil {
			return nil, err
		}
		r.mapReport(progress.MapCounters{Node: id, Admitted: admitted, Completed: completed, Exhausted: exhausted, Failed: true})
		return nil, failure
	}
	r.mapReport(progress.MapCounters{Node: id, Admitted: admitted, Completed: completed, Exhausted: true})
	if m.Fold != nil {
		return acc, nil
	}
	return collect(n, results)
}

// drain waits up to timeout for the running items to return after a
// failure cancelled them; stragglers are abandoned (their results are
// discarded by a background receiver so no goroutine blocks forever).
func (r *runner) drain(done <-chan itemResult, running int, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for running > 0 {
		select {
		case <-done:
			running--
		case <-t.C:
			go func(n int) {
				for range n {
					<-done
				}
			}(running)
			return
		}
	}
}

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
