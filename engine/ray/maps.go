package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

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

// mapNode runs the body once per item through the executor's map
// scheduler (internal/executor), which owns the window, MaxItems, item
// batching, the first failure and its drain, the ordered fold's window
// credits and the progress counters. What is Ray's here is mapBackend:
// items are submitted and awaited through the bridge, results stay in the
// object store (collected in input order in Ray, or handed to the map's
// result-buffer or fold actor), and after a failure every retained
// physical reference of the items in flight is cancelled (recursively)
// within CancelTimeout and released.
func (r *runner) mapNode(ctx context.Context, n *program.Node, id string, in value, sc *scope) (value, error) {
	m := n.Map
	lim := executor.Limits{Node: id}
	if m.Limits != nil {
		lim.MaxItems, lim.Window, lim.CancelTimeout = m.Limits.MaxItems, m.Limits.MaxConcurrency, m.Limits.CancelTimeout
	}
	if lim.CancelTimeout <= 0 {
		lim.CancelTimeout = time.Second
	}
	size, seq, err := r.items(ctx, m, id, in)
	if err != nil {
		return value{}, err
	}
	if err := executor.CheckSize(lim, size); err != nil {
		return value{}, err
	}
	window := lim.Window
	if window <= 0 {
		window = int(^uint(0) >> 1)
	}
	// A result buffer or fold: its actor is ready before any leaf effect.
	sk, err := r.openSink(ctx, m, id)
	if err != nil {
		return value{}, err
	}
	b := &mapBackend{r: r, id: id, body: n.Children[0], sk: sk, sc: sc, mw: telemetry.OpenMapWindow(engineName, window)}
	defer b.mw.Close()
	if k := m.BatchSize(window); k > 1 && b.body.Kind == flowgraph.KindStep {
		if err := b.batched(k); err != nil {
			return value{}, err
		}
		lim.BatchSize = k
		if m.AutoBatching {
			c := r.taskCost()
			lim.Auto = &c
		}
	}
	lim.Ordered = sk != nil && sk.kind == "fold" // the actor incorporates items in input order itself
	if m.Resume != nil {
		if l := itemledger.From(ctx); l != nil {
			lim.Resume = &executor.Resume{Ledger: l, Scope: itemledger.Scope{Node: id, Code: n.ItemCode}, MaxResultBytes: m.Resume.MaxResultBytes}
			if b.body.Kind == flowgraph.KindStep {
				// The ledger records every item's result: each comes
				// with its leaf's ready event, not by a get of its own.
				b.inline = maxInlineResult
				if c := m.Resume.MaxResultBytes; c > 0 {
					b.inline = min(c, maxInlineResult)
				}
			}
		}
	}
	v, err := executor.Run(ctx, lim, seq, b, b, r.report)
	if err != nil && ctx.Err() != nil {
		return value{}, context.Cause(ctx)
	}
	return v, err
}

// mapBackend is a map's Ray backend (executor.Backend) and its results
// (executor.Sink): a plain map collects its item results in input order in
// Ray (chunkCollector), a map with a result buffer or fold hands them to
// its actor (sink).
type mapBackend struct {
	r    *runner
	id   string
	body *program.Node
	sk   *sink  // a result buffer or fold, nil for a plain map
	sc   *scope // the map's scope (collected results)
	mw   *telemetry.MapWindow

	// Batched (body one step, more than one item per task).
	step  *flowgraph.Step
	bound []byte
	opts  map[string]any
	key   string

	results chunkCollector // without a sink
	inline  int            // an item's leaf sends its result with its ready event when at most this size (leafTask.Inline)

	running sync.WaitGroup // Item and Batch calls not yet returned
	mu      sync.Mutex
	left    []*scope // the retained references of failed or discarded items, to cancel
	aborted bool
}

// inlineKey marks the context of a resumable map's item whose body is one
// step (mapBackend.inline): its value is the step's leafTask.Inline.
type inlineKey struct{}

// maxInlineResult bounds a result sent with its ready event: the largest
// result an item ledger keeps.
const maxInlineResult = 1 << 20

// item is one item's result: its handle, and for an item run on its own
// the item's scope (every reference it retained, the result among them).
type item struct {
	h  objHandle
	sc *scope
}

// batched prepares the map's single-step body for batches of k items.
func (b *mapBackend) batched(k int) error {
	s := b.body.Step
	if s.Bound > 0 {
		v, err := b.r.e.codec.Marshal(s.BoundValue)
		if err != nil {
			return fmt.Errorf("rayflow: node %s: encoding the bound value: %w", program.ItemID(b.id, -1), err)
		}
		b.bound = v
	}
	opts, key, err := b.r.options(s)
	if err != nil {
		return fmt.Errorf("rayflow: node %s: %w", b.id, err)
	}
	b.step, b.opts, b.key = s, opts, key
	return nil
}

// Item submits the body on one item (any subtree: a chain, a group, a
// nested map) in the item's span and awaits it.
func (b *mapBackend) Item(ctx context.Context, index int, in []byte) (item, error) {
	b.running.Add(1)
	defer b.running.Done()
	if b.inline > 0 {
		ctx = context.WithValue(ctx, inlineKey{}, b.inline)
	}
	isc := &scope{rt: b.r.rt, retain: true}
	v, err := b.r.item(ctx, b.mw, b.body, b.id, index, value{raw: in}, isc)
	if err != nil {
		b.leave(isc)
		return item{}, err
	}
	return item{h: v.h, sc: isc}, nil
}

// Batch submits one task running items base.. of the step and awaits it:
// each item keeps its own result handle (and its own error: the leaf
// names the failing item's node). The window metrics count the batch's
// items in flight from its start to its task's end.
func (b *mapBackend) Batch(ctx context.Context, base int, items [][]byte, each func(int, item, error)) {
	b.running.Add(1)
	defer b.running.Done()
	for range items {
		b.mw.ItemStarted()
	}
	isc := &scope{rt: b.r.rt, retain: true}
	r, s := b.r, b.step
	t := leafTask{Exe: r.e.exe, Lib: r.e.lib, LibRevision: r.libRev, Callable: s.Callable.Name, Node: program.ItemID(b.id, base), Bound: b.bound, Options: b.opts, OptionsKey: b.key,
		Digest: r.digest, Identity: r.ident, Bootstrap: s.Bootstrap, Items: items, Map: b.id, Base: base, Trace: telemetry.Inject(ctx)}
	h, hs, err := r.e.rt.SubmitBatch(ctx, t)
	if err == nil {
		isc.add(h)
		for _, ih := range hs {
			isc.add(ih)
		}
		err = r.await(ctx, h, program.ItemID(b.id, base))
	}
	for range items {
		b.mw.ItemDone()
	}
	if err != nil {
		b.leave(isc)
		each(0, item{}, err)
		return
	}
	// The batch's status handle goes; each item's result handle moves to
	// the map's scope or to the sink.
	r.e.rt.Release([]objHandle{h})
	for j, ih := range hs {
		each(j, item{h: ih}, nil)
	}
}

// leave keeps isc's references for Abort to cancel and release (after
// Abort: cancels and releases them now).
func (b *mapBackend) leave(isc *scope) {
	b.mu.Lock()
	if !b.aborted {
		b.left = append(b.left, isc)
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	hs := isc.all()
	if len(hs) > 0 {
		_ = b.r.e.rt.Cancel(context.Background(), hs)
		b.r.e.rt.Release(hs)
	}
}

// Input is an item's encoded input: the bytes its leaf gets.
func (b *mapBackend) Input(in []byte) ([]byte, error) { return in, nil }

// Result fetches item index's encoded result from the object store (a
// resumable map records it).
func (b *mapBackend) Result(ctx context.Context, index int, it item) ([]byte, error) {
	return b.r.fetch(ctx, it.h, program.ItemID(b.id, index))
}

// Reuse puts item index's recorded result in the object store, where the
// map's results collector or actor takes it as a leaf's result.
func (b *mapBackend) Reuse(ctx context.Context, _ int, result []byte) (item, error) {
	h, err := b.r.e.rt.Put(ctx, result)
	if err != nil {
		return item{}, err
	}
	return item{h: h}, nil
}

// Discard takes back a result the failed map does not collect.
func (b *mapBackend) Discard(_ int, it item) {
	if it.sc != nil {
		b.leave(it.sc)
		return
	}
	b.r.e.rt.Release([]objHandle{it.h})
}

// Abort waits for the map's Item and Batch calls to return (the map's
// context is cancelled, so they do at once), cancels every retained
// physical reference of the items in flight (recursively), waits up to
// timeout for them to become terminal, releases them all and kills the
// map's actor.
func (b *mapBackend) Abort(ctx context.Context, failure error, timeout time.Duration) {
	if ctx.Err() == nil {
		// The map's own failure (an item's error, MaxItems, a sink's
		// limit), not its run's cancellation: said as such, since the
		// items in flight are cancelled now and their workers end.
		slog.WarnContext(ctx, "rayflow: map failed; cancelling its items in flight", "node", b.id, "err", failure)
	}
	t0 := time.Now()
	defer func() { debugf("abort: %v", time.Since(t0)) }()
	b.running.Wait()
	b.mu.Lock()
	b.aborted = true
	left := b.left
	b.left = nil
	b.mu.Unlock()
	var hs []objHandle
	for _, isc := range left {
		hs = append(hs, isc.all()...)
	}
	if len(hs) > 0 {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+5*time.Second)
		defer ccancel()
		start := time.Now()
		debugf("abort: drained in %v, cancelling %d handles", time.Since(t0), len(hs))
		cancelUntilDone(cctx, b.r.e.rt, hs, start.Add(timeout))
		debugf("abort: cancelled at %v", time.Since(t0))
		b.r.e.rt.Release(hs)
	}
	if b.sk != nil {
		b.sk.kill() // discards the retained state
	}
}

// Add hands item index's result to the sink (the actor holds it then) or
// to the result collector (the handle moves to the map's scope).
func (b *mapBackend) Add(ctx context.Context, index int, it item) error {
	if b.sk != nil {
		err := b.sk.add(ctx, index, it.h)
		switch {
		case it.sc == nil:
			b.r.e.rt.Release([]objHandle{it.h})
		case err == nil:
			it.sc.releaseAll()
		default:
			b.leave(it.sc) // still to be cancelled and released
		}
		return err
	}
	if it.sc != nil {
		it.sc.releaseExcept(it.h)
	}
	b.sc.add(it.h)
	return b.results.add(ctx, b.r.e.rt, b.sc, index, it.h)
}

// Finish fetches the map's result: the actor's payload, or the collected
// chunks joined in input order.
func (b *mapBackend) Finish(ctx context.Context, n int) (value, error) {
	if b.sk != nil {
		h, err := b.sk.finalize(ctx, n)
		if err != nil {
			b.sk.kill()
			return value{}, err
		}
		b.sc.add(h)
		return value{h: h}, nil
	}
	h, err := b.results.finish(ctx, b.r.e.rt, b.sc, n)
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

func (r *runner) report(p mapProgress) { r.rp.mapProgress(p) }

func debugf(format string, args ...any) {
	if os.Getenv("RAYFLOW_DEBUG") == "1" {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" rayflow: "+format+"\n", args...)
	}
}
