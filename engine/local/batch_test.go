package local_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// Item batching (sdk.Flow.WithItemBatching) on the local engine: every
// per-item guarantee of an unbatched map, one test per guarantee.

// batchLog records which items a leaf ran and how many leaf calls overlap.
type batchLog struct {
	mu            sync.Mutex
	ran           []int
	running, peak int
	finished      atomic.Int64
}

func (l *batchLog) enter(v int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran = append(l.ran, v)
	l.running++
	l.peak = max(l.peak, l.running)
}

func (l *batchLog) exit() {
	l.mu.Lock()
	l.running--
	l.mu.Unlock()
	l.finished.Add(1)
}

func (l *batchLog) ranItems() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ran)
}

// shuffled sleeps a pseudo-random few milliseconds (on synctest's clock
// when run in a bubble), so batches finish out of order, and doubles v.
func shuffled(l *batchLog) func(context.Context, int) (int, error) {
	return func(ctx context.Context, v int) (int, error) {
		l.enter(v)
		defer l.exit()
		time.Sleep(time.Duration((v*7919)%13) * time.Millisecond)
		return 2 * v, nil
	}
}

// JoinInts is a non-commutative reducer: it shows the fold's order.
func JoinInts(_ context.Context, acc string, v int) (string, error) {
	if acc == "" {
		return fmt.Sprint(v), nil
	}
	return acc + "," + fmt.Sprint(v), nil
}

// Results come back one per item, in input order, whatever the batch size,
// window and input kind, and folds stay strict input-order folds.
func TestBatchedMapOrder(t *testing.T) {
	t.Parallel()
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}}
	for _, c := range []struct{ items, perTask, window int }{
		{0, 4, 8}, {1, 4, 8}, {3, 4, 8}, {100, 1, 8}, {100, 2, 8}, {100, 3, 8}, {100, 16, 64},
		{100, 64, 16}, {100, 7, 7}, {100, 4, 1}, {2500, sdk.MaxItemsPerTask, 4096}, {100, 8, 0},
	} {
		t.Run(fmt.Sprintf("items=%d/k=%d/window=%d", c.items, c.perTask, c.window), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := &batchLog{}
				m := sdk.Map(sdk.Step(shuffled(l)))
				ms := sdk.MapSeq(sdk.Step(shuffled(l)))
				if c.window > 0 { // 0: an eager map
					m = m.WithLimits(sdk.Limits{MaxConcurrency: c.window, MaxItems: 10_000})
					ms = ms.WithLimits(sdk.Limits{MaxConcurrency: c.window, MaxItems: 10_000})
				}
				m, ms = m.WithItemBatching(c.perTask), ms.WithItemBatching(c.perTask)
				want := make([]int, c.items)
				labels := make([]string, c.items)
				for i := range want {
					want[i] = 2 * i
					labels[i] = fmt.Sprint(2 * i)
				}
				got, err := sdk.Run(context.Background(), m, ints(c.items))
				if err != nil || !slices.Equal(got, want) && c.items > 0 {
					t.Fatalf("Map: %v, %v; want %v", got, err, want)
				}
				got, err = sdk.Run(context.Background(), ms, slices.Values(ints(c.items)))
				if err != nil || !slices.Equal(got, want) && c.items > 0 {
					t.Fatalf("MapSeq: %v, %v", got, err)
				}
				if c.window > 0 {
					joined, err := sdk.Run(context.Background(), sdk.Reduce(m, JoinInts, "", fold), ints(c.items))
					if err != nil || joined != strings.Join(labels, ",") {
						t.Fatalf("Reduce: %q, %v", joined, err)
					}
				}
				if n := len(l.ranItems()); n != 3*c.items && c.window > 0 || n != 2*c.items && c.window == 0 {
					t.Fatalf("%d leaf calls for %d items: every item runs exactly once", n, c.items)
				}
			})
		})
	}
}

// The admission window counts items, not batches: at no time are more
// than MaxConcurrency items read and unfinished, and with blocked leaves
// exactly MaxConcurrency items are read while only the full batches run
// (one leaf call each, the first item of each batch).
func TestBatchedWindowCountsItems(t *testing.T) {
	t.Parallel()
	type tc struct {
		perTask, window, running int
		fold                     bool
	}
	var cases []tc
	for _, c := range []tc{{1, 8, 8, false}, {2, 8, 4, false}, {3, 8, 2, false}, {4, 8, 2, false}, {8, 8, 1, false}, {16, 8, 1, false}, {5, 16, 3, false}} {
		cases = append(cases, c)
		c.fold = true // a fold frees a slot only when it incorporates the item
		cases = append(cases, c)
	}
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("k=%d/window=%d/fold=%v", c.perTask, c.window, c.fold), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := &batchLog{}
				release := make(chan struct{})
				var read atomic.Int64
				var over atomic.Int64 // the largest excess of unfinished read items over the window
				items := func(yield func(int) bool) {
					for i := range 200 {
						if n := read.Add(1) - l.finished.Load(); n > int64(c.window) {
							over.Store(max(over.Load(), n))
						}
						if !yield(i) {
							return
						}
					}
				}
				leaf := func(ctx context.Context, v int) (int, error) {
					l.enter(v)
					defer l.exit()
					<-release
					return v, nil
				}
				f := sdk.MapSeq(sdk.Step(leaf)).WithLimits(sdk.Limits{MaxConcurrency: c.window, MaxItems: 1000}).WithItemBatching(c.perTask)
				done := make(chan error)
				go func() {
					var err error
					if c.fold {
						_, err = sdk.Run(context.Background(), sdk.Reduce(f, JoinInts, "", fold), iter.Seq[int](items))
					} else {
						_, err = sdk.Run(context.Background(), f, iter.Seq[int](items))
					}
					done <- err
				}()
				synctest.Wait() // every leaf is blocked
				if n := read.Load(); n != int64(c.window) {
					t.Errorf("%d items read with blocked leaves; want the window, %d", n, c.window)
				}
				l.mu.Lock()
				if l.running != c.running {
					t.Errorf("%d leaf calls running; want %d (one per started batch)", l.running, c.running)
				}
				l.mu.Unlock()
				close(release)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if n := over.Load(); n != 0 {
					t.Fatalf("%d items were read and unfinished at once; the window is %d items", n, c.window)
				}
				if l.peak > c.running {
					t.Fatalf("peak %d leaf calls at once; want at most %d", l.peak, c.running)
				}
			})
		})
	}
}

// MaxItems counts items: a sized input at the cap runs, one over fails
// before any leaf; a sequence at the cap runs, one over fails when item
// MaxItems+1 is read (read exactly MaxItems+1 times), whatever the batch.
func TestBatchedMaxItems(t *testing.T) {
	t.Parallel()
	const maxItems = 10
	for _, perTask := range []int{2, 3, 4, 10, 16} {
		t.Run(fmt.Sprint("k=", perTask), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				limits := sdk.Limits{MaxConcurrency: 8, MaxItems: maxItems}
				l := &batchLog{}
				m := sdk.Map(sdk.Step(shuffled(l))).WithLimits(limits).WithItemBatching(perTask)
				if got, err := sdk.Run(context.Background(), m, ints(maxItems)); err != nil || len(got) != maxItems {
					t.Fatalf("sized, at the cap: %v, %v", got, err)
				}
				before := len(l.ranItems())
				_, err := sdk.Run(context.Background(), m, ints(maxItems+1))
				var mie *sdk.MaxItemsError
				if !errors.As(err, &mie) || mie.Items != maxItems+1 || mie.MaxItems != maxItems || mie.Node != "0" {
					t.Fatalf("sized, one over: %v", err)
				}
				if n := len(l.ranItems()) - before; n != 0 {
					t.Fatalf("a sized input over MaxItems ran %d leaves", n)
				}
				ms := sdk.MapSeq(sdk.Step(shuffled(l))).WithLimits(limits).WithItemBatching(perTask)
				var read atomic.Int32
				if got, err := sdk.Run(context.Background(), ms, seqOf(maxItems, &read)); err != nil || len(got) != maxItems {
					t.Fatalf("sequence, at the cap: %v, %v", got, err)
				}
				read.Store(0)
				_, err = sdk.Run(context.Background(), ms, seqOf(1000, &read))
				if !errors.As(err, &mie) || mie.Items != maxItems+1 {
					t.Fatalf("sequence, one over: %v", err)
				}
				if n := read.Load(); n != maxItems+1 {
					t.Fatalf("the sequence was read %d times; want MaxItems+1 = %d", n, maxItems+1)
				}
			})
		})
	}
}

type batchItemError struct{ Item int }

func (e *batchItemError) Error() string { return fmt.Sprintf("item %d failed", e.Item) }

// A failing item fails the map with exactly the error it gives unbatched
// (a *StepError, *ValueError or panic naming that item, the original error
// inside); the items after it in its batch never run.
func TestBatchedErrorNamesTheItem(t *testing.T) {
	t.Parallel()
	const bad = 5
	for _, c := range []struct {
		name  string
		leaf  func(context.Context, int) (float64, error)
		check func(error) bool
	}{
		{"error", func(_ context.Context, v int) (float64, error) {
			if v == bad {
				return 0, &batchItemError{Item: v}
			}
			return float64(v), nil
		}, func(err error) bool {
			var ie *batchItemError
			var se *sdk.StepError
			return errors.As(err, &ie) && ie.Item == bad && errors.As(err, &se) && se.Node == "0.m5" && se.Callable != ""
		}},
		{"panic", func(_ context.Context, v int) (float64, error) {
			if v == bad {
				panic("item five exploded")
			}
			return float64(v), nil
		}, func(err error) bool {
			var pe *sdk.PanicError
			var se *sdk.StepError
			return errors.As(err, &pe) && pe.Value == "item five exploded" && errors.As(err, &se) && se.Node == "0.m5"
		}},
		{"unencodable output", func(_ context.Context, v int) (float64, error) {
			if v == bad {
				return math.NaN(), nil
			}
			return float64(v), nil
		}, func(err error) bool {
			var ve *sdk.ValueError
			return errors.As(err, &ve) && ve.Node == "0.m5" && ve.Value == "output"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			messages := map[int]string{}
			for _, perTask := range []int{1, 4} {
				l := &batchLog{}
				leaf := func(ctx context.Context, v int) (float64, error) {
					l.enter(v)
					defer l.exit()
					return c.leaf(ctx, v)
				}
				// One batch of 4 at a time: items 4…7 are one batch.
				f := sdk.Map(sdk.Step(leaf)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100}).WithItemBatching(perTask)
				_, err := sdk.Run(context.Background(), f, ints(40))
				if !c.check(err) {
					t.Fatalf("k=%d: the error does not name item %d: %T %v", perTask, bad, err, err)
				}
				messages[perTask] = err.Error()
				if perTask > 1 {
					if ran := l.ranItems(); !slices.Equal(ran, []int{0, 1, 2, 3, 4, 5}) {
						t.Fatalf("k=%d: ran %v; want items 0…5 (4 items per batch, the batch stops at item 5, admission stops)", perTask, ran)
					}
				}
			}
			if messages[1] != messages[4] {
				t.Fatalf("batched error %q differs from unbatched %q", messages[4], messages[1])
			}
		})
	}
}

// pubRecorder is a progress sink that keeps every publication.
type pubRecorder struct {
	mu   sync.Mutex
	pubs []*progress.Publication
}

func (r *pubRecorder) Publish(_ context.Context, p *progress.Publication) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pubs = append(r.pubs, p)
	return nil
}

func (r *pubRecorder) all() []*progress.Publication {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pubs)
}

// startProgress starts a full-policy progress run for the flow's graph,
// publishing to sink every interval.
func startProgress(t *testing.T, f any, sink progress.Sink, interval time.Duration) *progress.Run {
	t.Helper()
	id := sdk.NewRunIdentity()
	rid := common.RunIdentity{SchemaVersion: 1, TaskExecutionPK: id.TaskExecutionPK, AttemptNumber: id.AttemptNumber,
		ExecutionGeneration: id.ExecutionGeneration, RunID: id.RunID}
	pr, err := progress.Start(context.Background(), progress.RunConfig{Identity: rid, Root: sdkrt.Graph(f), Sink: sink, FlushInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// fanoutOf is a map node's counters and state in a publication.
type fanoutOf struct {
	Submitted, Completed, InFlight int64
	Exhausted                      bool
	State                          detail.NodeState
}

// mapFanout returns the map node's fan-out counters in p.
func mapFanout(t *testing.T, p *progress.Publication, node string) fanoutOf {
	t.Helper()
	for _, n := range p.Snapshot.Graph.Nodes {
		if n.NodeID == node && n.Fanout != nil {
			return fanoutOf{n.Fanout.SubmittedItems, n.Fanout.CompletedItems, n.Fanout.InFlightItems, n.Fanout.InputExhausted, n.State}
		}
	}
	t.Fatalf("no map node %s in %+v", node, p.Snapshot.Graph.Nodes)
	return fanoutOf{}
}

// Progress counts items, not batches: a publication after some items of a
// batch finished counts those items. The counters are published at most
// once per flush interval however many items finish in it (one
// map_progress event per interval besides the map's first and final ones),
// and the final publication has the exact end state.
func TestBatchedProgressPerItem(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		gates := make([]chan struct{}, 8)
		for i := range gates {
			gates[i] = make(chan struct{})
		}
		leaf := func(_ context.Context, v int) (int, error) { <-gates[v]; return v, nil }
		f := sdk.Map(sdk.Step(leaf)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 8}).WithItemBatching(4)
		sink := &pubRecorder{}
		pr := startProgress(t, f, sink, interval)
		done := make(chan error)
		start := time.Now()
		go func() {
			_, err := local.Run(context.Background(), sdkrt.Graph(f), ints(8), local.Options{Progress: pr})
			done <- err
		}()
		// Each step releases its items a millisecond apart within one
		// interval, then waits for the interval's publication.
		step := func(release []int, want fanoutOf) {
			t.Helper()
			before := len(sink.all())
			for _, i := range release {
				close(gates[i])
				time.Sleep(time.Millisecond)
			}
			time.Sleep(interval - time.Duration(len(release))*time.Millisecond)
			synctest.Wait()
			pubs := sink.all()
			if len(pubs) != before+1 {
				t.Fatalf("after releasing %v: %d publications in the interval, want 1", release, len(pubs)-before)
			}
			want.State = detail.NodeStateRunning
			if got := mapFanout(t, pubs[len(pubs)-1], "0"); got != want {
				t.Fatalf("after releasing %v: %+v, want %+v", release, got, want)
			}
		}
		// Two batches of 4 started. Counters move per item.
		step([]int{0}, fanoutOf{Submitted: 8, Completed: 1, InFlight: 7}) // the end of the input is read after item 0
		step([]int{1, 4}, fanoutOf{Submitted: 8, Completed: 3, InFlight: 5, Exhausted: true})
		step([]int{2, 3, 5, 6}, fanoutOf{Submitted: 8, Completed: 7, InFlight: 1, Exhausted: true})
		close(gates[7])
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if err := pr.Finish(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		pubs := sink.all()
		final := pubs[len(pubs)-1]
		if !final.Final {
			t.Fatalf("the last of %d publications is not the final one", len(pubs))
		}
		if got, want := mapFanout(t, final, "0"), (fanoutOf{Submitted: 8, Completed: 8, Exhausted: true, State: detail.NodeStateSucceeded}); got != want {
			t.Fatalf("final fan-out %+v, want %+v", got, want)
		}
		running := int64(len(pubs) - 1)
		if intervals := int64(elapsed / interval); running > intervals {
			t.Fatalf("%d running publications in %v, want at most one per %v", running, elapsed, interval)
		}
		if n := final.Snapshot.Ingress.AcceptedByKind[progress.KindMapProgress]; n > running+2 {
			t.Fatalf("%d map_progress events for 8 items and %d publications, want at most %d (first, one per publication, final)", n, running, running+2)
		}
	})
}

// Cancellation stops a batch before its next item, and Run returns the
// cancellation within CancelTimeout whatever the running item does.
func TestBatchedCancellation(t *testing.T) {
	t.Parallel()
	const deadline, timeout = 200 * time.Millisecond, 100 * time.Millisecond
	for _, c := range []struct {
		name    string
		deaf    bool
		perTask int
		want    time.Duration // Run's return, from its start
	}{
		{"cooperative items", false, 8, deadline},
		{"deaf items", true, 8, deadline + timeout},
		{"deaf items, batch at the cap", true, sdk.MaxItemsPerTask, deadline + timeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := &batchLog{}
				leaf := func(ctx context.Context, v int) (int, error) {
					l.enter(v)
					defer l.exit()
					if c.deaf {
						time.Sleep(time.Hour)
						return v, nil
					}
					return Polite(ctx, v)
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				f := sdk.Map(sdk.Step(leaf)).WithLimits(sdk.Limits{MaxConcurrency: 2 * c.perTask, CancelTimeout: timeout}).WithItemBatching(c.perTask)
				start := time.Now()
				_, err := sdk.Run(ctx, f, ints(4*c.perTask))
				checkCanceled(t, err, context.DeadlineExceeded)
				if got := time.Since(start); got != c.want {
					t.Errorf("Run returned after %s, want %s", got, c.want)
				}
				time.Sleep(2 * time.Hour) // the deaf items end on the fake clock
				synctest.Wait()
				// Two batches started, each ran its first item only.
				if ran := l.ranItems(); len(ran) != 2 || !slices.Contains(ran, 0) || !slices.Contains(ran, c.perTask) {
					t.Errorf("items run %v; want the first item of each of the two batches only", ran)
				}
			})
		})
	}
}

// Another batch's failure stops a batch before its next item too.
func TestBatchedFailureStopsOtherBatches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := &batchLog{}
		leaf := func(ctx context.Context, v int) (int, error) {
			l.enter(v)
			defer l.exit()
			if v == 4 {
				time.Sleep(10 * time.Millisecond)
				return 0, &batchItemError{Item: v}
			}
			return Polite(ctx, v)
		}
		f := sdk.Map(sdk.Step(leaf)).WithLimits(sdk.Limits{MaxConcurrency: 8, CancelTimeout: time.Second}).WithItemBatching(4)
		start := time.Now()
		_, err := sdk.Run(context.Background(), f, ints(16))
		var ie *batchItemError
		var se *sdk.StepError
		if !errors.As(err, &ie) || ie.Item != 4 || !errors.As(err, &se) || se.Node != "0.m4" {
			t.Fatalf("want item 4's error, got %v", err)
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Errorf("Run returned after %s, want 10ms (the cooperative item returns at once)", got)
		}
		if ran := l.ranItems(); len(ran) != 2 {
			t.Errorf("items run %v; want items 0 and 4 only", ran)
		}
	})
}

// Sequential mode runs one item at a time even with batching.
func TestBatchedSequential(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := &batchLog{}
		f := sdk.Map(sdk.Step(shuffled(l))).WithLimits(sdk.Limits{MaxConcurrency: 16}).WithItemBatching(4)
		got, err := sdk.Run(context.Background(), f, ints(20), sdk.Sequential())
		if err != nil || len(got) != 20 || got[19] != 38 {
			t.Fatalf("%v, %v", got, err)
		}
		if ran := l.ranItems(); !slices.Equal(ran, ints(20)) || l.peak != 1 {
			t.Fatalf("ran %v with peak %d; want 0…19 in order, one at a time", ran, l.peak)
		}
	})
}

// A batched fold keeps head-of-line backpressure in items: while item 0
// blocks, the later items finish but are not incorporated, so their slots
// stay taken and no more than the window is ever read.
func TestBatchedFoldHeadOfLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ perTask, window, started int }{
		// window 8 of batches of 2: [0 1] blocks at 0, [2 3] [4 5] [6 7] finish: 7 items started.
		{2, 8, 7},
		// batches of 4: [0…3] blocks at 0, [4…7] finishes: 5 started.
		{4, 8, 5},
		// one batch holds the window: only item 0 started.
		{8, 8, 1},
	} {
		t.Run(fmt.Sprintf("k=%d/window=%d", c.perTask, c.window), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var started, read atomic.Int32
				headBlocks := func(ctx context.Context, v int) (string, error) {
					started.Add(1)
					if v == 0 {
						<-release
					}
					return fmt.Sprint(v), nil
				}
				f := sdk.Reduce(sdk.MapSeq(sdk.Step(headBlocks)).WithLimits(sdk.Limits{MaxConcurrency: c.window, MaxItems: 50}).WithItemBatching(c.perTask),
					Concat, nil, sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}})
				done := make(chan error)
				var got []string
				go func() {
					var err error
					got, err = sdk.Run(context.Background(), f, seqOf(50, &read))
					done <- err
				}()
				synctest.Wait()
				if n := read.Load(); n != int32(c.window) {
					t.Errorf("%d items read while the head blocked; want the window, %d", n, c.window)
				}
				if n := started.Load(); n != int32(c.started) {
					t.Errorf("%d items started while the head blocked; want %d", n, c.started)
				}
				close(release)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				want := make([]string, 50)
				for i := range want {
					want[i] = fmt.Sprint(i)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("folded %v, want 0…49 in order", got)
				}
			})
		})
	}
}
