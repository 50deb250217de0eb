package local

import (
	"context"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

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
}

// Run executes root on input and returns its result.
func Run(ctx context.Context, root *flowgraph.Node, input any, opts Options) (any, error) {
	r := &runner{opts: opts}
	return r.exec(ctx, root, flowgraph.RootID, input)
}

type runner struct {
	opts Options
}

func (r *runner) exec(ctx context.Context, n *flowgraph.Node, id string, in any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch n.Kind {
	case flowgraph.KindStep:
		lctx, prod := r.leafStart(ctx, n.Step, id)
		out, err := invoke(lctx, n.Step, in)
		r.leafEnd(prod, n.Step, out, err)
		if err != nil {
			return nil, &flowgraph.StepError{Node: id, Callable: n.Step.Callable.Name, Err: err}
		}
		return out, nil
	case flowgraph.KindChain:
		v := in
		for i, c := range n.Children {
			var err error
			if v, err = r.exec(ctx, c, flowgraph.ChildID(n.Kind, id, i), v); err != nil {
				return nil, err
			}
		}
		return v, nil
	case flowgraph.KindGroup:
		return r.group(ctx, n, id, in)
	case flowgraph.KindMap:
		return r.mapNode(ctx, n, id, in)
	}
	return nil, fmt.Errorf("rayflow: node %s: unknown kind %v", id, n.Kind)
}

func collect(n *flowgraph.Node, rs []any) (any, error) {
	if n.Collect == nil {
		return rs, nil
	}
	return n.Collect(rs)
}

// group runs every branch on in, concurrently unless sequential. The first
// failure cancels the other branches; its error is returned once they end.
func (r *runner) group(ctx context.Context, n *flowgraph.Node, id string, in any) (any, error) {
	rs := make([]any, len(n.Children))
	if r.opts.Sequential {
		for i, c := range n.Children {
			v, err := r.exec(ctx, c, flowgraph.ChildID(n.Kind, id, i), in)
			if err != nil {
				return nil, err
			}
			rs[i] = v
		}
		return collect(n, rs)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i, c := range n.Children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := r.exec(ctx, c, flowgraph.ChildID(n.Kind, id, i), in)
			if err != nil {
				once.Do(func() { first = err; cancel(err) })
				return
			}
			rs[i] = v
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return collect(n, rs)
}

type itemResult struct {
	index int
	value any
	err   error
}

// mapNode runs the map body once per input item within the admission
// window, collecting results as items finish.
func (r *runner) mapNode(ctx context.Context, n *flowgraph.Node, id string, in any) (any, error) {
	m := n.Map
	items, err := m.Items(in)
	if err != nil {
		return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
	}
	maxItems, window, cancelTimeout := 0, 0, time.Duration(0)
	if m.Limits != nil {
		maxItems, window, cancelTimeout = m.Limits.MaxItems, m.Limits.MaxConcurrency, m.Limits.CancelTimeout
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

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	body := n.Children[0]
	work := make(chan itemResult)
	done := make(chan itemResult)
	workers := 0
	worker := func() {
		for it := range work {
			v, err := r.exec(ctx, body, flowgraph.ItemID(id, it.index), it.value)
			done <- itemResult{index: it.index, value: v, err: err}
		}
	}

	var (
		results   []any           // plain map: by input index
		retained  = map[int]any{} // fold: finished, not yet incorporated
		next      int             // fold: next input index to incorporate
		admitted  int             // items read and started
		completed int             // items finished successfully (progress)
		open      int             // items holding a window slot
		running   int             // items whose leaf has not returned
		failure   error
	)
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
			if maxItems > 0 && admitted == maxItems {
				failure = &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: maxItems + 1}
				break
			}
			if running == workers {
				workers++
				go worker()
			}
			work <- itemResult{index: admitted, value: v}
			admitted++
			open++
			running++
			if m.Fold == nil {
				results = append(results, nil)
			}
		}
		if failure != nil || running == 0 {
			break
		}
		res := <-done
		running--
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
			if acc, err = protect(func() (any, error) { return m.Fold.Apply(ctx, acc, v) }); err != nil {
				failure = &flowgraph.StepError{Node: id + ".reducer", Callable: m.Fold.Reducer.Callable.Name, Err: err}
				break
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
	if timeout <= 0 {
		timeout = time.Second
	}
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

// invoke calls a step, turning a panic into a *flowgraph.PanicError so one
// bad leaf fails the run instead of the process.
func invoke(ctx context.Context, s *flowgraph.Step, in any) (any, error) {
	return protect(func() (any, error) { return s.Invoke(ctx, in) })
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
