package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"time"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

type itemDone struct {
	index int
	h     objHandle
	sc    *scope
	err   error
	items []objHandle // a batch (starting at index): each item's result
	n     int         // a batch: its items (items is nil when it failed)
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
func (r *runner) mapNode(ctx context.Context, n *program.Node, id string, in value, sc *scope) (value, error) {
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
	l := &mapLoop{r: r, id: id, window: window, maxItems: maxItems, cancelTimeout: cancelTimeout, sk: sk, sc: sc,
		done: make(chan itemDone), inflight: map[int]*scope{}, mw: telemetry.OpenMapWindow(engineName, window)}
	defer l.mw.Close()
	body := n.Children[0]
	if k := m.BatchSize(window); k > 1 && body.Kind == flowgraph.KindStep {
		return r.mapBatched(ctx, l, body.Step, k, seq)
	}
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// One goroutine per item: the body may be any subtree (a chain, a
	// group, a nested map), submitted and awaited in the item's span.
	admit := func(b []byte) {
		isc := &scope{rt: r.rt, retain: true}
		idx := l.started
		l.inflight[idx] = isc
		l.started++
		l.running++
		l.inFlight++
		go func() {
			v, err := r.item(ictx, l.mw, body, id, idx, value{raw: b}, isc)
			l.done <- itemDone{index: idx, h: v.h, sc: isc, err: err}
		}()
	}
	finished := func(d itemDone) {
		l.inFlight--
		if d.err == nil && l.sk != nil {
			if d.err = l.itemDone(ctx, d.index, d.h); d.err == nil {
				d.sc.releaseAll() // the actor holds the item now
				return
			}
		}
		if d.err != nil {
			l.failure = d.err
			l.inflight[d.index] = d.sc // still to be cancelled and released
			return
		}
		d.sc.releaseExcept(d.h) // the result moves to the map's scope
		l.failure = l.itemDone(ctx, d.index, d.h)
	}
	return l.run(ctx, cancel, seq, admit, nil, finished)
}

// mapLoop is the admission loop that plain and batched maps share: it
// pulls items while fewer than window items are open (admitted and not yet
// done, or retained by a fold), counts MaxItems, awaits completions,
// collects results in input order (or hands them to the sink), reports
// the map's progress and window metrics, and on the first failure stops
// admission and cancels what is in flight within CancelTimeout.
type mapLoop struct {
	r             *runner
	id            string
	window        int
	maxItems      int
	cancelTimeout time.Duration
	sk            *sink  // a result buffer or fold, nil for a plain map
	sc            *scope // the map's scope (collected results)
	mw            *telemetry.MapWindow

	done     chan itemDone
	inflight map[int]*scope // by first item index: what abort cancels
	results  chunkCollector // without a sink

	admitted  int  // items pulled and counted (window, MaxItems)
	started   int  // items submitted (batched: their batch was)
	inFlight  int  // submitted items whose task has not returned
	completed int  // items done (collected, or added to the sink)
	running   int  // goroutines (items, or batches) not yet returned
	open      int  // items holding a window slot (a fold frees it when the item is incorporated)
	exhausted bool // the input ended
	failure   error
}

// run drives the loop: admit takes each admitted item's encoded input,
// flush (may be nil) runs once the input is exhausted and after admission,
// finished handles what the done channel returns (setting l.failure on a
// failure).
func (l *mapLoop) run(ctx context.Context, cancel context.CancelCauseFunc, seq iter.Seq2[[]byte, error],
	admit func([]byte), flush func(), finished func(itemDone)) (value, error) {
	pull, stop := iter.Pull2(seq)
	defer stop()
	for {
		for l.failure == nil && !l.exhausted && l.open < l.window {
			b, perr, ok := pull()
			if !ok {
				l.exhausted = true
				break
			}
			if perr != nil {
				l.failure = perr
				break
			}
			if l.maxItems > 0 && l.admitted == l.maxItems {
				l.failure = &flowgraph.MaxItemsError{Node: l.id, MaxItems: l.maxItems, Items: l.maxItems + 1}
				break
			}
			l.admitted++
			l.open++
			admit(b)
		}
		if l.failure == nil && l.exhausted && flush != nil {
			flush()
		}
		if l.failure != nil || l.running == 0 {
			break
		}
		var d itemDone
		select {
		case d = <-l.done:
		case <-ctx.Done():
			l.failure = context.Cause(ctx)
			continue
		}
		l.running--
		delete(l.inflight, d.index)
		finished(d)
		if l.failure == nil {
			l.report()
		}
	}
	r := l.r
	if l.failure != nil {
		if ctx.Err() == nil {
			// The map's own failure (an item's error, MaxItems, a sink's
			// limit), not its run's cancellation: said as such, since the
			// items in flight are cancelled now and their workers end.
			slog.WarnContext(ctx, "rayflow: map failed; cancelling its items in flight", "node", l.id, "err", l.failure)
		}
		r.abort(ctx, cancel, l.failure, l.done, l.running, l.inflight, l.cancelTimeout)
		if l.sk != nil {
			l.sk.kill() // discards the retained state
		}
		r.report(mapProgress{Node: l.id, Admitted: l.started, Completed: l.completed, Exhausted: l.exhausted, Failed: true})
		return value{}, l.failure
	}
	r.report(mapProgress{Node: l.id, Admitted: l.started, Completed: l.completed, Exhausted: true})
	if l.sk != nil {
		h, err := l.sk.finalize(ctx, l.started)
		if err != nil {
			l.sk.kill()
			return value{}, err
		}
		l.sc.add(h)
		return value{h: h}, nil
	}
	h, err := l.results.finish(ctx, r.e.rt, l.sc, l.started)
	if err != nil {
		return value{}, err
	}
	return value{h: h}, nil
}

// report reports the map's counters after each finished item (or batch),
// as the local engine does: a local run predicts a Ray run's progress
// events, and a time-based throttle would make their number depend on
// timing (TestComplexProgressMatchesLocal).
func (l *mapLoop) report() {
	l.r.report(mapProgress{Node: l.id, Admitted: l.started, Completed: l.completed, InFlight: l.inFlight,
		Exhausted: l.exhausted && l.started == l.admitted})
}

// itemDone hands item index's result h to the sink (which may free
// several window slots: a fold frees a slot when its item is incorporated)
// or to the result collector (the handle moves to the map's scope), and
// counts the item as completed.
func (l *mapLoop) itemDone(ctx context.Context, index int, h objHandle) error {
	if l.sk != nil {
		freed, err := l.sk.add(ctx, index, h)
		if err != nil {
			return err
		}
		l.open -= freed
	} else {
		l.open--
		l.sc.add(h)
		if err := l.results.add(ctx, l.r.e.rt, l.sc, index, h); err != nil {
			return err
		}
	}
	l.completed++
	return nil
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
	// free is the last collected chunk, cleared for the next one (rt.Collect
	// and Release copy what they need).
	free *resultChunk
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
		ch, c.free = c.free, nil
		if ch == nil {
			ch = &resultChunk{hs: make([]objHandle, collectChunk)}
		}
		c.open[ci] = ch
	}
	ch.hs[index%collectChunk] = h
	ch.done++
	if ch.done < collectChunk {
		return nil
	}
	if err := c.collect(ctx, rt, sc, ci, ch.hs); err != nil {
		return err
	}
	clear(ch.hs)
	ch.done = 0
	c.free = ch
	return nil
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
// item's node) and its own progress count. The window metrics count a
// batch's items in flight from its start to its task's end.
func (r *runner) mapBatched(ctx context.Context, l *mapLoop, s *flowgraph.Step, k int, seq iter.Seq2[[]byte, error]) (value, error) {
	id := l.id
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var bound []byte
	if s.Bound > 0 {
		b, err := r.e.codec.Marshal(s.BoundValue)
		if err != nil {
			return value{}, fmt.Errorf("rayflow: node %s: encoding the bound value: %w", program.ItemID(id, -1), err)
		}
		bound = b
	}
	opts, key, err := r.options(s)
	if err != nil {
		return value{}, fmt.Errorf("rayflow: node %s: %w", id, err)
	}
	var forming [][]byte
	start := func() {
		base, items := l.started, forming
		forming = nil
		l.started += len(items)
		l.inFlight += len(items)
		for range items {
			l.mw.ItemStarted()
		}
		isc := &scope{rt: r.rt, retain: true}
		l.inflight[base] = isc
		l.running++
		go func() {
			t := leafTask{Exe: r.e.exe, Lib: r.e.lib, LibRevision: r.libRev, Callable: s.Callable.Name, Node: program.ItemID(id, base), Bound: bound, Options: opts, OptionsKey: key,
				Digest: r.digest, Bootstrap: s.Bootstrap, Items: items, Map: id, Base: base, Trace: telemetry.Inject(ictx)}
			h, hs, err := r.e.rt.SubmitBatch(ictx, t)
			if err == nil {
				isc.add(h)
				for _, ih := range hs {
					isc.add(ih)
				}
				err = r.await(ictx, h, program.ItemID(id, base))
			}
			l.done <- itemDone{index: base, h: h, sc: isc, err: err, items: hs, n: len(items)}
		}()
		l.report()
	}
	admit := func(b []byte) {
		forming = append(forming, b)
		if len(forming) == k {
			start()
		}
	}
	flush := func() {
		if len(forming) > 0 {
			start()
		}
	}
	finished := func(d itemDone) {
		l.inFlight -= d.n
		for range d.n {
			l.mw.ItemDone()
		}
		if d.err != nil {
			l.failure = d.err
			l.inflight[d.index] = d.sc // still to be cancelled and released
			return
		}
		// The batch's status handle goes; each item's result handle moves
		// to the map's scope or to the sink.
		r.e.rt.Release([]objHandle{d.h})
		for j, ih := range d.items {
			err := l.itemDone(ctx, d.index+j, ih)
			if l.sk != nil {
				r.e.rt.Release([]objHandle{ih}) // the actor holds the item now
			}
			if err != nil {
				l.failure = err
				r.e.rt.Release(d.items[j+1:])
				return
			}
		}
	}
	return l.run(ctx, cancel, seq, admit, flush, finished)
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
