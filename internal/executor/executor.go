package executor

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// CancelTimeoutDefault is the drain bound of a map without a
// CancelTimeout of its own (sdk's CancelTimeoutDefault).
const CancelTimeoutDefault = time.Second

// MaxResultBuffer bounds the buffer of finished item results between a
// batched map's workers and its loop.
const MaxResultBuffer = 1024

// Limits are what Run needs to know about one map, as plain values.
type Limits struct {
	// Node is the map's node id (errors and progress name it).
	Node string
	// Window is the most items open at once (0 or less: every item at
	// once).
	Window int
	// MaxItems is the most items the map runs (0 or less: no cap).
	MaxItems int
	// BatchSize is how many items one unit runs (1 or less: one; never
	// more than the window).
	BatchSize int
	// Auto makes BatchSize (when above 1) the cap of units whose sizes
	// the executor chooses itself (sdk's WithAutoBatching; see Sizer), for
	// an engine of this cost. nil: every unit holds BatchSize items.
	Auto *TaskCost
	// CancelTimeout bounds the wait for the items in flight after a
	// failure (0 or less: CancelTimeoutDefault).
	CancelTimeout time.Duration
	// Ordered is set for a fold: an item's window slot is freed once it
	// and every item before it were added to the sink.
	Ordered bool
	// InOrder hands the sink the items in input order (an ordered fold
	// that incorporates them itself); otherwise the sink gets each item
	// as it finishes.
	InOrder bool
	// Resume makes the map resumable when its backend is a Resumer (nil:
	// not resumable, and Run does no ledger work at all).
	Resume *Resume
}

// Backend runs a map's items. Its methods are called from several
// goroutines at once (Item and Batch on the map's workers).
type Backend[In, Out any] interface {
	// Item runs the map body on item index (input in) and returns its
	// result. It returns soon after ctx is done (the map failed or the
	// run was cancelled); a leaf that ignores ctx is abandoned by Run
	// after the cancel timeout.
	Item(ctx context.Context, index int, in In) (Out, error)
	// Batch runs items base, base+1, ... (inputs items) as one unit and
	// calls each once per item, in order, as it finishes (j is the
	// position in the unit). After an item's error it may stop: the
	// items after it are not run. It returns once the unit is over.
	Batch(ctx context.Context, base int, items []In, each func(j int, out Out, err error))
	// Discard takes back the result of item index that Run will not hand
	// to the sink (it arrived after the map failed).
	Discard(index int, out Out)
	// Abort is called once after the map failed (failure) or its run was
	// cancelled, when the items in flight ended or timeout passed: it
	// cancels and releases what the backend still holds for them.
	Abort(ctx context.Context, failure error, timeout time.Duration)
}

// Sink takes a map's item results and fetches its result.
type Sink[Out, R any] interface {
	// Add takes item index's result (in input order when Limits.InOrder).
	Add(ctx context.Context, index int, out Out) error
	// Finish returns the map's result once all n items were added.
	Finish(ctx context.Context, n int) (R, error)
}

// CheckSize refuses, before any item runs, a sized input of n items over
// the map's MaxItems.
func CheckSize(lim Limits, n int) error {
	if lim.MaxItems > 0 && n > lim.MaxItems {
		return &flowgraph.MaxItemsError{Node: lim.Node, MaxItems: lim.MaxItems, Items: n}
	}
	return nil
}

// unit is the work of one worker: one item, or the items of one batch.
type unit[In any] struct {
	base  int
	one   In
	items []In // nil: one
	// Automatic batching: the unit's number (Sizer.Start) and when it
	// started.
	seq int
	at  time.Time
}

// completion is one finished item (or the end of a unit that stopped
// early: n items end with it, none of them with a result).
type completion[Out any] struct {
	index int
	out   Out
	err   error
	enc   []byte // a resumable map's encoded result (Resumer.Result), made on the worker
	n     int    // items that end with this message (1, or what a unit that stopped left)
	empty bool   // no item result: a unit that stopped before its last items
	last  bool   // the unit is over: its worker is free
	// Automatic batching, on a unit's last message: its size, number,
	// start and end.
	size    int
	seq     int
	at, end time.Time
}

// Run runs a map: it reads items from seq while the window has room,
// runs them through b, hands their results to sink and returns
// sink.Finish's result, or the map's first failure (see the package
// documentation). report (may be nil) gets the map's counters after each
// finished item and once when the map ends (not when its run was
// cancelled); it is on the hot path, so it should only record them
// (progress.Run.Map coalesces them into events).
func Run[In, Out, R any](parent context.Context, lim Limits, seq iter.Seq2[In, error], b Backend[In, Out],
	sink Sink[Out, R], report func(progress.MapCounters)) (R, error) {
	pull, stop := iter.Pull2(seq)
	defer stop()
	next := func() (v In, ok bool, err error) {
		var perr error
		if err := protect(func() { v, perr, ok = pull() }); err != nil {
			return v, false, fmt.Errorf("rayflow: map %s: reading its input: %w", lim.Node, err)
		}
		return v, ok, perr
	}
	return run(parent, lim, -1, next, b, sink, report)
}

// RunIndexed is Run over a sized input of n items, item i read by at(i)
// (a plain read that neither fails nor panics) when its window slot frees:
// no iterator is pulled, so no coroutine switch per item. An input over
// lim.MaxItems fails before any item (CheckSize); otherwise every
// guarantee of Run holds unchanged.
func RunIndexed[In, Out, R any](parent context.Context, lim Limits, n int, at func(i int) In, b Backend[In, Out],
	sink Sink[Out, R], report func(progress.MapCounters)) (R, error) {
	if err := CheckSize(lim, n); err != nil {
		var zero R
		return zero, err
	}
	i := 0
	next := func() (v In, ok bool, err error) {
		if i == n {
			return v, false, nil
		}
		i++
		return at(i - 1), true, nil
	}
	return run(parent, lim, n, next, b, sink, report)
}

// run is Run and RunIndexed: read1 reads the next item (ok false: the input
// ended; err: the input failed); total is the number of input items (below
// 0: unknown).
func run[In, Out, R any](parent context.Context, lim Limits, total int, read1 func() (In, bool, error), b Backend[In, Out],
	sink Sink[Out, R], report func(progress.MapCounters)) (R, error) {
	var zero R
	id := lim.Node
	window := lim.Window
	if window <= 0 {
		window = int(^uint(0) >> 1)
	}
	k := min(max(lim.BatchSize, 1), window)
	var az *Sizer // automatic batching: sizes each unit, 1 … k
	if lim.Auto != nil && k > 1 {
		az = NewSizer(k, window, *lim.Auto)
	}
	timeout := lim.CancelTimeout
	if timeout <= 0 {
		timeout = CancelTimeoutDefault
	}
	if report == nil {
		report = func(progress.MapCounters) {}
	}
	rs := newResume(lim, b, window)

	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	work := make(chan unit[In])
	defer close(work)
	// A worker hands each item's result over without waiting for the loop
	// (at most window results are outstanding), so it is free for the next
	// unit at once and the loop takes several results at one wake-up.
	done := make(chan completion[Out], min(window, MaxResultBuffer))
	worker := func() {
		for u := range work {
			if u.items == nil {
				out, err := protectItem(ctx, b, u.base, u.one)
				var enc []byte
				if rs != nil && err == nil {
					enc = rs.encode(ctx, u.base, out)
				}
				done <- completion[Out]{index: u.base, out: out, err: err, enc: enc, n: 1, last: true}
				continue
			}
			n, sent := len(u.items), 0
			err := protect(func() {
				b.Batch(ctx, u.base, u.items, func(j int, out Out, err error) {
					if j != sent || sent == n {
						return // out of order or repeated: not an item of this unit
					}
					sent++
					var enc []byte
					if rs != nil && err == nil {
						enc = rs.encode(ctx, u.base+j, out)
					}
					c := completion[Out]{index: u.base + j, out: out, err: err, enc: enc, n: 1, last: sent == n}
					if c.last && az != nil {
						c.size, c.seq, c.at, c.end = n, u.seq, u.at, time.Now()
					}
					done <- c
				})
			})
			if sent < n {
				// The unit stopped early (after an item's error, or a panic).
				done <- completion[Out]{index: u.base + sent, err: err, n: n - sent, empty: true, last: true}
			}
		}
	}

	var (
		read      int              // items read from the input
		started   int              // items in started units
		inFlight  int              // started items not yet finished
		completed int              // items finished and added to the sink
		open      int              // items holding a window slot (forming ones too)
		units     int              // units whose worker has not finished them
		workers   int              // workers started
		forming   []In             // items read, waiting for their batch to start
		exhausted bool             // the input ended
		next      int              // Ordered: items incorporated (the contiguous prefix)
		arrived   map[int]Out      // InOrder: finished items past the prefix, not yet added
		added     map[int]struct{} // Ordered, not InOrder: items added past the prefix
		failure   error
	)
	if lim.InOrder {
		arrived = map[int]Out{}
	} else if lim.Ordered {
		added = map[int]struct{}{}
	}
	// Automatic batching: the probe timer (Sizer.ProbeWait), armed as the
	// first unit starts.
	var (
		origin time.Time
		probe  *time.Timer
		probed <-chan time.Time
	)
	if az != nil {
		origin = time.Now()
		defer func() {
			if probe != nil {
				probe.Stop()
			}
		}()
	}
	start := func(u unit[In]) {
		if units == workers {
			workers++
			go worker()
		}
		if az != nil && u.items != nil {
			if probe == nil && az.Probing() {
				probe = time.NewTimer(az.ProbeWait())
				probed = probe.C
			}
			u.seq, u.at = az.Start(), time.Now()
		}
		work <- u
		n := max(len(u.items), 1)
		started += n
		inFlight += n
		units++
	}
	// startAuto starts units of automatic batching from the front of
	// forming, at most Sizer.MaxUnits in flight, while they are full
	// (Sizer.Size), or, when short is set (no item can be read now), while
	// fewer than CPUs units are in flight. While the sizer is probing, at
	// most CPUs units of one item run.
	startAuto := func(short bool) {
		for len(forming) > 0 {
			remaining := -1
			switch {
			case total >= 0:
				remaining = total - started
			case exhausted:
				remaining = len(forming)
			}
			size := az.Size(remaining)
			if units >= az.MaxUnits() {
				return
			}
			if len(forming) < size && (!short || units >= az.CPUs()) {
				return
			}
			size = min(size, len(forming))
			start(unit[In]{base: read - len(forming), items: forming[:size:size]})
			forming = forming[size:]
		}
		forming = nil
	}
	reused := 0 // items of a resumable map taken from its ledger
	counters := func() progress.MapCounters {
		return progress.MapCounters{Node: id, Admitted: started, Completed: completed, InFlight: inFlight,
			Exhausted: exhausted && started == read, Reused: reused}
	}
	// add hands a finished item to the sink and returns the window slots
	// it frees.
	add := func(index int, out Out) (freed int, err error) {
		if !lim.Ordered {
			if err := sink.Add(ctx, index, out); err != nil {
				return 0, err
			}
			completed++
			return 1, nil
		}
		if !lim.InOrder {
			// The sink orders the items itself: the slots follow the prefix.
			if err := sink.Add(ctx, index, out); err != nil {
				return 0, err
			}
			completed++
			added[index] = struct{}{}
			for {
				if _, ok := added[next]; !ok {
					return freed, nil
				}
				delete(added, next)
				next++
				freed++
			}
		}
		arrived[index] = out
		for {
			v, ok := arrived[next]
			if !ok {
				return freed, nil
			}
			delete(arrived, next)
			next++
			freed++
			if err := sink.Add(ctx, next-1, v); err != nil {
				return freed, err
			}
			completed++
		}
	}

	readLimit := 0 // a resumable map reads ahead up to item MaxItems+1 (which fails it)
	if lim.MaxItems > 0 {
		readLimit = lim.MaxItems + 1
	}
	for {
		reusedNow := false
		for failure == nil && !exhausted && open < window {
			var (
				v   In
				ok  bool
				err error
				a   ahead[In]
			)
			if rs == nil {
				v, ok, err = read1()
			} else {
				a, ok, err = rs.next(ctx, read1, readLimit)
				v = a.v
			}
			if err != nil {
				failure = err
				break
			}
			if !ok {
				exhausted = true
				break
			}
			if lim.MaxItems > 0 && read == lim.MaxItems {
				failure = &flowgraph.MaxItemsError{Node: id, MaxItems: lim.MaxItems, Items: lim.MaxItems + 1}
				break
			}
			if rs != nil && a.hit {
				out, err := rs.r.Reuse(ctx, read, a.result)
				if err == nil {
					if len(forming) > 0 { // a unit's items are consecutive: the forming one starts short
						start(unit[In]{base: read - len(forming), items: forming})
						forming = nil
					}
					read++
					open++
					started++
					reused++
					reusedNow = true
					freed, err := add(read-1, out)
					open -= freed
					if err != nil {
						failure = err
					}
					continue
				}
				slog.WarnContext(ctx, "rayflow: a recorded item result could not be reused; the item runs", "node", id, "index", read, "err", err)
			}
			read++
			open++
			if rs != nil {
				rs.started(read-1, a)
			}
			if k == 1 {
				start(unit[In]{base: read - 1, one: v})
				continue
			}
			forming = append(forming, v)
			if az != nil {
				startAuto(false)
				continue
			}
			if len(forming) == k {
				start(unit[In]{base: read - k, items: forming})
				forming = nil
			}
		}
		if az != nil && failure == nil {
			startAuto(true)
		}
		if az == nil && failure == nil && exhausted && len(forming) > 0 {
			start(unit[In]{base: read - len(forming), items: forming}) // the last, short batch
			forming = nil
		}
		if reusedNow {
			report(counters())
		}
		if failure != nil || units == 0 {
			break
		}
		var c completion[Out]
		select {
		case c = <-done:
		case <-parent.Done():
			// The run was cancelled: no item is to blame.
			failure = flowgraph.Canceled(parent)
		case <-probed:
			// The first units outlast a unit's aim: the items are long.
			probed = nil
			az.ProbeExpired()
			slog.DebugContext(ctx, AutoBatchingLong, "node", id, "after", az.ProbeWait())
			continue
		}
		if failure != nil {
			break
		}
		inFlight -= c.n
		if c.last {
			units--
		}
		if c.err != nil {
			failure = c.err
			break
		}
		if c.last && az != nil && !c.empty {
			az.Finish(c.seq, c.size, c.at.Sub(origin), c.end.Sub(origin))
			probed = nil // the probe is over
			if slog.Default().Enabled(ctx, slog.LevelDebug) {
				slog.DebugContext(ctx, AutoBatchingUnit, "node", id, "unit", c.seq, "items", c.size,
					"started", c.at.Sub(origin), "ended", c.end.Sub(origin), "in_flight", units+1,
					"fixed_cost", az.Overhead(), "per_item", az.PerItem())
			}
		}
		if c.empty {
			failure = fmt.Errorf("rayflow: map %s: the unit of item %d ended without its result", id, c.index)
			break
		}
		if rs != nil {
			if err := rs.finished(ctx, c.index, c.enc); err != nil {
				failure = err
				break
			}
		}
		freed, err := add(c.index, c.out)
		open -= freed
		if err != nil {
			failure = err
			break
		}
		report(counters())
	}
	if failure == nil && rs != nil {
		failure = rs.flushLast(ctx) // the map's last results; an error: the fence was lost
	}
	if failure != nil {
		if rs != nil && !errors.Is(failure, itemledger.ErrFenceLost) {
			rs.flushAfter(parent) // what succeeded before the failure is kept
		}
		cancel(failure)
		for i, v := range arrived {
			b.Discard(i, v)
		}
		drain(b, done, units, timeout)
		b.Abort(parent, failure, timeout)
		if err := flowgraph.Canceled(parent); err != nil {
			// A cancelled run's map reports no failure of its own: its
			// progress keeps the counters it reported last.
			return zero, err
		}
		report(progress.MapCounters{Node: id, Admitted: started, Completed: completed, Exhausted: exhausted, Failed: true, Reused: reused})
		return zero, failure
	}
	report(progress.MapCounters{Node: id, Admitted: started, Completed: completed, Exhausted: true, Reused: reused})
	return sink.Finish(ctx, started)
}

// drain waits up to timeout for the units still running to end after a
// failure cancelled them, handing their results back to the backend;
// stragglers are abandoned to a background receiver that does the same,
// so no worker blocks forever.
func drain[In, Out any](b Backend[In, Out], done <-chan completion[Out], units int, timeout time.Duration) {
	take := func(c completion[Out]) {
		if c.last {
			units--
		}
		if c.err == nil && !c.empty {
			b.Discard(c.index, c.out)
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for units > 0 {
		select {
		case c := <-done:
			take(c)
		case <-t.C:
			go func() {
				for units > 0 {
					take(<-done)
				}
			}()
			return
		}
	}
}

// protectItem runs b.Item, turning a panic into a *flowgraph.PanicError.
func protectItem[In, Out any](ctx context.Context, b Backend[In, Out], index int, in In) (out Out, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero Out
			out, err = zero, &flowgraph.PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	return b.Item(ctx, index, in)
}

// protect runs f (application code: an input iterator, a batch), turning
// a panic into a *flowgraph.PanicError.
func protect(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &flowgraph.PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	f()
	return nil
}
