package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"time"

	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

type itemDone struct {
	index int
	h     objHandle
	sc    *scope
	err   error
	items []objHandle // a batch (starting at index): each item's result
}

// items returns the map's input as encoded items. An in-process input (the
// run's own input) is pulled lazily and encoded item by item; a value in
// the object store is fetched and split into its JSON elements without
// decoding them.
func (r *runner) items(ctx context.Context, m *flowgraph.Map, id string, in value) (int, iter.Seq2[[]byte, error], error) {
	if in.local {
		items, err := m.Items(in.v)
		if err != nil {
			return 0, nil, fmt.Errorf("rayflow: map %s: %w", id, err)
		}
		return items.Len, func(yield func([]byte, error) bool) {
			for v := range items.Seq {
				b, err := r.e.codec.Marshal(v)
				if err != nil {
					err = fmt.Errorf("rayflow: map %s: encoding an item: %w", id, err)
				}
				if !yield(b, err) || err != nil {
					return
				}
			}
		}, nil
	}
	data := in.raw
	if data == nil {
		var err error
		if data, err = r.fetch(ctx, in.h, id); err != nil {
			return 0, nil, err
		}
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return 0, nil, fmt.Errorf("rayflow: map %s: the input is not a JSON array: %w", id, err)
	}
	return len(raw), func(yield func([]byte, error) bool) {
		for _, b := range raw {
			if !yield(b, nil) {
				return
			}
		}
	}, nil
}

// mapNode runs the body once per item within the admission window,
// awaiting items as they finish, and collects the results in input order
// in Ray. On the first failure it stops admission, cancels every retained
// physical reference of the in-flight items (recursively), waits up to
// CancelTimeout for them, releases everything and returns the failure.
func (r *runner) mapNode(ctx context.Context, n *flowgraph.Node, id string, in value, sc *scope) (value, error) {
	m := n.Map
	maxItems, window, cancelTimeout := 0, 0, time.Duration(0)
	if m.Limits != nil {
		maxItems, window, cancelTimeout = m.Limits.MaxItems, m.Limits.MaxConcurrency, m.Limits.CancelTimeout
	}
	if cancelTimeout <= 0 {
		cancelTimeout = time.Second
	}
	size, seq, err := r.items(ctx, m, id, in)
	if err != nil {
		return value{}, err
	}
	if maxItems > 0 && size > maxItems {
		return value{}, &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: size}
	}
	if window <= 0 {
		window = int(^uint(0) >> 1)
	}

	// A result buffer or fold: its actor is ready before any leaf effect.
	sk, err := r.openSink(ctx, m, id)
	if err != nil {
		return value{}, err
	}

	body := n.Children[0]
	if k := m.BatchSize(window); k > 1 && body.Kind == flowgraph.KindStep {
		return r.mapBatched(ctx, body.Step, id, k, window, maxItems, cancelTimeout, seq, sk, sc)
	}
	mw := telemetry.OpenMapWindow(engineName, window)
	defer mw.Close()
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan itemDone)
	inflight := map[int]*scope{}
	var (
		results   chunkCollector // without a sink
		admitted  int
		completed int
		running   int // item goroutines not yet returned
		open      int // items holding a window slot (a fold frees it when the item is incorporated)
		failure   error
	)
	pull, stop := iter.Pull2(seq)
	defer stop()
	exhausted := false
	for {
		for failure == nil && !exhausted && open < window {
			b, perr, ok := pull()
			if !ok {
				exhausted = true
				break
			}
			if perr != nil {
				failure = perr
				break
			}
			if maxItems > 0 && admitted == maxItems {
				failure = &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: maxItems + 1}
				break
			}
			isc := &scope{rt: r.e.rt, retain: true}
			idx := admitted
			inflight[idx] = isc
			admitted++
			running++
			open++
			go func() {
				v, err := r.item(ictx, mw, body, id, idx, value{raw: b}, isc)
				done <- itemDone{index: idx, h: v.h, sc: isc, err: err}
			}()
		}
		if failure != nil || running == 0 {
			break
		}
		var d itemDone
		select {
		case d = <-done:
		case <-ctx.Done():
			failure = context.Cause(ctx)
			continue
		}
		running--
		delete(inflight, d.index)
		if d.err == nil && sk != nil {
			var freed int
			if freed, d.err = sk.add(ctx, d.index, d.h); d.err == nil {
				d.sc.releaseAll() // the actor holds the item now
				open -= freed
				completed++
				r.report(mapProgress{Node: id, Admitted: admitted, Completed: completed, InFlight: running, Exhausted: exhausted})
				continue
			}
		}
		if d.err != nil {
			failure = d.err
			d.sc.mu.Lock()
			inflight[d.index] = d.sc // still to be cancelled and released
			d.sc.mu.Unlock()
			continue
		}
		open--
		d.sc.releaseExcept(d.h)
		sc.add(d.h)
		if err := results.add(ctx, r.e.rt, sc, d.index, d.h); err != nil {
			failure = err
			continue
		}
		completed++
		r.report(mapProgress{Node: id, Admitted: admitted, Completed: completed, InFlight: running, Exhausted: exhausted})
	}
	if failure != nil {
		r.abort(ctx, cancel, failure, done, running, inflight, cancelTimeout)
		if sk != nil {
			sk.kill() // discards the retained state
		}
		r.report(mapProgress{Node: id, Admitted: admitted, Completed: completed, Exhausted: exhausted, Failed: true})
		return value{}, failure
	}
	r.report(mapProgress{Node: id, Admitted: admitted, Completed: completed, Exhausted: true})
	if sk != nil {
		h, err := sk.finalize(ctx, admitted)
		if err != nil {
			sk.kill()
			return value{}, err
		}
		sc.add(h)
		return value{h: h}, nil
	}
	h, err := results.finish(ctx, r.e.rt, sc, admitted)
	if err != nil {
		return value{}, err
	}
	return value{h: h}, nil
}

// collectChunk is how many item results one collector task joins.
const collectChunk = 1024

// chunkCollector joins a plain map's results in input order, in Ray, a
// chunk of collectChunk items at a time as soon as all of them are done,
// then the chunks' arrays at the end. The coordinator (and the bridge)
// thus hold a handle per running item and per chunk, not per item: their
// memory does not grow with the number of items.
type chunkCollector struct {
	open   map[int]*resultChunk // chunks still missing items, by chunk index
	chunks []objHandle          // collected chunks, by chunk index (0: not yet)
}

type resultChunk struct {
	hs   []objHandle
	done int
}

// add records item index's result handle (held by sc) and collects its
// chunk when it is the chunk's last.
func (c *chunkCollector) add(ctx context.Context, rt rayRuntime, sc *scope, index int, h objHandle) error {
	ci := index / collectChunk
	if c.open == nil {
		c.open = map[int]*resultChunk{}
	}
	ch := c.open[ci]
	if ch == nil {
		ch = &resultChunk{hs: make([]objHandle, collectChunk)}
		c.open[ci] = ch
	}
	ch.hs[index%collectChunk] = h
	ch.done++
	if ch.done < collectChunk {
		return nil
	}
	return c.collect(ctx, rt, sc, ci, ch.hs)
}

func (c *chunkCollector) collect(ctx context.Context, rt rayRuntime, sc *scope, ci int, hs []objHandle) error {
	args := make([]taskArg, len(hs))
	for i, h := range hs {
		args[i] = taskArg{Handle: h}
	}
	h, err := rt.Collect(ctx, args, false)
	if err != nil {
		return err
	}
	sc.add(h)
	sc.releaseMany(hs) // the collector holds them now
	delete(c.open, ci)
	for len(c.chunks) <= ci {
		c.chunks = append(c.chunks, 0)
	}
	c.chunks[ci] = h
	return nil
}

// finish collects the last, partial chunk of n items and joins the chunks
// into the map's result.
func (c *chunkCollector) finish(ctx context.Context, rt rayRuntime, sc *scope, n int) (objHandle, error) {
	if n%collectChunk != 0 || n == 0 {
		ci := n / collectChunk
		var hs []objHandle
		if ch := c.open[ci]; ch != nil {
			hs = ch.hs[:ch.done]
		}
		if err := c.collect(ctx, rt, sc, ci, hs); err != nil {
			return 0, err
		}
	}
	if len(c.chunks) == 1 {
		return c.chunks[0], nil
	}
	args := make([]taskArg, len(c.chunks))
	for i, h := range c.chunks {
		args[i] = taskArg{Handle: h}
	}
	h, err := rt.Collect(ctx, args, true)
	if err != nil {
		return 0, err
	}
	sc.add(h)
	sc.releaseMany(c.chunks)
	return h, nil
}

// mapBatched is mapNode for a map whose body is one step and whose tasks
// run up to k items each: items are pulled into the forming batch while
// fewer than window items are open (forming, running, or retained by a
// fold), a batch starts when it holds k items or the input ends, and each
// item keeps its own result, its own error (the leaf names the failing
// item's node) and its own progress count.
func (r *runner) mapBatched(ctx context.Context, s *flowgraph.Step, id string, k, window, maxItems int, cancelTimeout time.Duration,
	seq iter.Seq2[[]byte, error], sk *sink, sc *scope) (value, error) {
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var bound []byte
	if s.Bound > 0 {
		b, err := r.e.codec.Marshal(s.BoundValue)
		if err != nil {
			return value{}, fmt.Errorf("rayflow: node %s: encoding the bound value: %w", flowgraph.ItemID(id, -1), err)
		}
		bound = b
	}
	opts, key, err := r.options(s)
	if err != nil {
		return value{}, fmt.Errorf("rayflow: node %s: %w", id, err)
	}
	done := make(chan itemDone)
	inflight := map[int]*scope{}
	var (
		results   chunkCollector
		forming   [][]byte
		admitted  int // items pulled and not dropped
		started   int // items whose batch started
		completed int
		running   int // batch goroutines not yet returned
		runItems  int // items of those batches
		open      int
		failure   error
	)
	start := func() {
		base, items := started, forming
		forming = nil
		started += len(items)
		runItems += len(items)
		isc := &scope{rt: r.e.rt, retain: true}
		inflight[base] = isc
		running++
		go func() {
			t := leafTask{Exe: r.e.exe, Callable: s.Callable.Name, Node: flowgraph.ItemID(id, base), Bound: bound, Options: opts, OptionsKey: key,
				Digest: r.digest, Bootstrap: s.Bootstrap, Items: items, Map: id, Base: base, Trace: telemetry.Inject(ictx)}
			h, hs, err := r.e.rt.SubmitBatch(ictx, t)
			if err == nil {
				isc.add(h)
				for _, ih := range hs {
					isc.add(ih)
				}
				err = r.await(ictx, h, flowgraph.ItemID(id, base))
			}
			done <- itemDone{index: base, h: h, sc: isc, err: err, items: hs}
		}()
		r.report(mapProgress{Node: id, Admitted: started, Completed: completed, InFlight: runItems})
	}
	pull, stop := iter.Pull2(seq)
	defer stop()
	exhausted := false
	for {
		for failure == nil && !exhausted && open < window {
			b, perr, ok := pull()
			if !ok {
				exhausted = true
				break
			}
			if perr != nil {
				failure = perr
				break
			}
			if maxItems > 0 && admitted == maxItems {
				failure = &flowgraph.MaxItemsError{Node: id, MaxItems: maxItems, Items: maxItems + 1}
				break
			}
			admitted++
			open++
			forming = append(forming, b)
			if len(forming) == k {
				start()
			}
		}
		if failure == nil && exhausted && len(forming) > 0 {
			start()
		}
		if failure != nil || running == 0 {
			break
		}
		var d itemDone
		select {
		case d = <-done:
		case <-ctx.Done():
			failure = context.Cause(ctx)
			continue
		}
		running--
		runItems -= len(d.items)
		delete(inflight, d.index)
		if d.err != nil {
			failure = d.err
			inflight[d.index] = d.sc // still to be cancelled and released
			continue
		}
		// The batch's status handle goes; each item's result handle moves
		// to the collector's scope or to the sink.
		r.e.rt.Release([]objHandle{d.h})
		for j, ih := range d.items {
			idx := d.index + j
			if sk != nil {
				freed, err := sk.add(ctx, idx, ih)
				r.e.rt.Release([]objHandle{ih}) // the actor holds the item now
				if err != nil {
					failure = err
					r.e.rt.Release(d.items[j+1:])
					break
				}
				open -= freed
			} else {
				open--
				sc.add(ih)
				if err := results.add(ctx, r.e.rt, sc, idx, ih); err != nil {
					failure = err
					r.e.rt.Release(d.items[j+1:])
					break
				}
			}
			completed++
		}
		r.report(mapProgress{Node: id, Admitted: started, Completed: completed, InFlight: runItems, Exhausted: exhausted && len(forming) == 0})
	}
	if failure != nil {
		r.abort(ctx, cancel, failure, done, running, inflight, cancelTimeout)
		if sk != nil {
			sk.kill()
		}
		r.report(mapProgress{Node: id, Admitted: started, Completed: completed, Exhausted: exhausted, Failed: true})
		return value{}, failure
	}
	r.report(mapProgress{Node: id, Admitted: started, Completed: completed, Exhausted: true})
	if sk != nil {
		h, err := sk.finalize(ctx, started)
		if err != nil {
			sk.kill()
			return value{}, err
		}
		sc.add(h)
		return value{h: h}, nil
	}
	h, err := results.finish(ctx, r.e.rt, sc, started)
	if err != nil {
		return value{}, err
	}
	return value{h: h}, nil
}

func (r *runner) report(p mapProgress) { r.rp.mapProgress(p) }

// abort stops the in-flight items after a failure: their goroutines are
// stopped and drained, every retained physical reference is cancelled
// (recursively), the engine waits up to timeout for them to become
// terminal and then releases them all.
func (r *runner) abort(ctx context.Context, cancel context.CancelCauseFunc, failure error, done <-chan itemDone,
	running int, inflight map[int]*scope, timeout time.Duration) {
	t0 := time.Now()
	defer func() { debugf("abort: %v", time.Since(t0)) }()
	cancel(failure)
	for ; running > 0; running-- {
		d := <-done
		inflight[d.index] = d.sc
	}
	var hs []objHandle
	for _, isc := range inflight {
		hs = append(hs, isc.all()...)
	}
	if len(hs) == 0 {
		return
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+5*time.Second)
	defer ccancel()
	start := time.Now()
	debugf("abort: drained in %v, cancelling %d handles", time.Since(t0), len(hs))
	cancelUntilDone(cctx, r.e.rt, hs, start.Add(timeout))
	debugf("abort: cancelled at %v", time.Since(t0))
	r.e.rt.Release(hs)
}

// cancelUntilDone force-cancels hs and waits until every one is terminal
// or the deadline passes. Ray can lose a cancellation that races with the
// task's dispatch to a worker (it then runs to completion), so the cancel
// is repeated about every 500 ms for the handles still pending (the bridge
// cancels only those).
func cancelUntilDone(ctx context.Context, rt rayRuntime, hs []objHandle, deadline time.Time) {
	for {
		if rt.Cancel(ctx, hs) != nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		ready, err := rt.Wait(ctx, hs, true, min(left, 500*time.Millisecond))
		if err != nil || len(ready) >= len(hs) {
			return
		}
	}
}

func debugf(format string, args ...any) {
	if os.Getenv("RAYFLOW_DEBUG") == "1" {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" rayflow: "+format+"\n", args...)
	}
}
