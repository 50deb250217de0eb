package local_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// tracker records how many leaves run at once.
type tracker struct {
	mu             sync.Mutex
	running, peak  int
	started, ended int
}

func (t *tracker) enter() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running++
	t.started++
	t.peak = max(t.peak, t.running)
}

func (t *tracker) exit() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	t.ended++
}

type ctxKey struct{}

func trackerOf(ctx context.Context) *tracker { return ctx.Value(ctxKey{}).(*tracker) }

// Slow sleeps (v % 7) ms, so items finish out of order, and doubles v.
func Slow(ctx context.Context, v int) (int, error) {
	t := trackerOf(ctx)
	t.enter()
	defer t.exit()
	select {
	case <-time.After(time.Duration(v%7) * time.Millisecond):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return 2 * v, nil
}

var errBoom = errors.New("boom")

type itemError struct{ Item int }

func (e *itemError) Error() string { return fmt.Sprintf("item %d failed", e.Item) }

// FailAt fails on item 5 after a short delay and otherwise waits for
// cancellation, recording whether it saw it.
func FailAt(ctx context.Context, v int) (int, error) {
	t := trackerOf(ctx)
	t.enter()
	defer t.exit()
	if v == 5 {
		time.Sleep(5 * time.Millisecond)
		return 0, &itemError{Item: v}
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(10 * time.Second):
		return v, nil
	}
}

func withTracker() (context.Context, *tracker) {
	t := &tracker{}
	return context.WithValue(context.Background(), ctxKey{}, t), t
}

func ints(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestMapOrderedAndWindowed(t *testing.T) {
	t.Parallel()
	for _, window := range []int{1, 3, 16} {
		t.Run(fmt.Sprint("window=", window), func(t *testing.T) {
			t.Parallel()
			ctx, tr := withTracker()
			f := sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: 100})
			got, err := sdk.Run(ctx, f, ints(100))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v != 2*i {
					t.Fatalf("result %d = %d, want %d (input order)", i, v, 2*i)
				}
			}
			if tr.peak > window {
				t.Fatalf("peak in-flight %d exceeds window %d", tr.peak, window)
			}
			if window > 1 && tr.peak < 2 {
				t.Fatalf("peak in-flight %d: the window was not used", tr.peak)
			}
		})
	}
}

func TestMaxItemsEdges(t *testing.T) {
	t.Parallel()
	f := sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 10})
	ctx, tr := withTracker()
	if _, err := sdk.Run(ctx, f, ints(10)); err != nil || tr.started != 10 {
		t.Fatalf("exactly MaxItems: %v (%d leaves)", err, tr.started)
	}
	ctx, tr = withTracker()
	_, err := sdk.Run(ctx, f, ints(11))
	var mie *sdk.MaxItemsError
	if !errors.As(err, &mie) || mie.Items != 11 || mie.MaxItems != 10 || mie.Node != "0" {
		t.Fatalf("MaxItems+1 sized: got %v", err)
	}
	if tr.started != 0 {
		t.Fatalf("a sized input over MaxItems started %d leaves; want none", tr.started)
	}
}

func seqOf(n int, read *atomic.Int32) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			read.Add(1)
			if !yield(i) {
				return
			}
		}
	}
}

func TestMaxItemsLazySequence(t *testing.T) {
	t.Parallel()
	f := sdk.MapSeq(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10})
	var read atomic.Int32
	ctx, _ := withTracker()
	got, err := sdk.Run(ctx, f, seqOf(10, &read))
	if err != nil || len(got) != 10 {
		t.Fatalf("exactly MaxItems from a sequence: %v, %v", got, err)
	}
	read.Store(0)
	ctx, _ = withTracker()
	_, err = sdk.Run(ctx, f, seqOf(1000, &read))
	var mie *sdk.MaxItemsError
	if !errors.As(err, &mie) || mie.Items != 11 {
		t.Fatalf("MaxItems+1 from a sequence: %v", err)
	}
	if n := read.Load(); n != 11 {
		t.Fatalf("the sequence was read %d times; want exactly MaxItems+1 = 11 (lazy admission)", n)
	}
}

func TestLazyAdmissionReadsOnlyWhatTheWindowAdmits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{}) // in the bubble: blocking on it is durable
		var read atomic.Int32
		block := func(ctx context.Context, v int) (int, error) { <-release; return v, nil }
		f := sdk.MapSeq(sdk.Step(block)).WithLimits(sdk.Limits{MaxConcurrency: 3})
		done := make(chan error)
		go func() { _, err := sdk.Run(context.Background(), f, seqOf(100, &read)); done <- err }()
		synctest.Wait() // every goroutine of the run is blocked
		if n := read.Load(); n != 3 {
			t.Errorf("with a window of 3 and blocked leaves, %d items were read; want 3", n)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestFirstFailureCancelsAndReturnsOriginalError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, tr := withTracker()
		f := sdk.Map(sdk.Step(FailAt)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 100, CancelTimeout: 2 * time.Second})
		_, err := sdk.Run(ctx, f, ints(100))
		var ie *itemError
		if !errors.As(err, &ie) || ie.Item != 5 {
			t.Fatalf("want the original *itemError for item 5, got %v", err)
		}
		var se *sdk.StepError
		if !errors.As(err, &se) || se.Node != "0.m5" || !strings.HasSuffix(se.Callable, "local_test.FailAt") {
			t.Fatalf("want a StepError naming node 0.m5, got %v", err)
		}
		if tr.started > 8 {
			t.Fatalf("admission continued after the failure: %d leaves started", tr.started)
		}
		if tr.ended != tr.started {
			t.Fatalf("%d leaves were still running when Run returned; cancellation should have drained them", tr.started-tr.ended)
		}
	})
}

// Stubborn ignores cancellation.
func Stubborn(ctx context.Context, v int) (int, error) {
	if v == 0 {
		return 0, errBoom
	}
	time.Sleep(3 * time.Second)
	return v, nil
}

func TestCancelTimeoutBoundsTheDrain(t *testing.T) {
	t.Parallel()
	f := sdk.Map(sdk.Step(Stubborn)).WithLimits(sdk.Limits{MaxConcurrency: 4, CancelTimeout: 100 * time.Millisecond})
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := sdk.Run(context.Background(), f, ints(4))
		if !errors.Is(err, errBoom) {
			t.Fatalf("want errBoom, got %v", err)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Fatalf("Run waited %s for uncooperative leaves; CancelTimeout is 100ms", d)
		}
		settle()
	})
}

// Concat is a non-commutative reducer.
func Concat(_ context.Context, acc []string, item string) ([]string, error) {
	return append(acc, item), nil
}

// Reverse finishes later items first: item i sleeps (10-i) ms.
func Reverse(ctx context.Context, v int) (string, error) {
	trackerOf(ctx).enter()
	defer trackerOf(ctx).exit()
	time.Sleep(time.Duration(10-v) * time.Millisecond)
	return fmt.Sprint(v), nil
}

func TestFoldIsStrictInputOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := sdk.Reduce(sdk.Map(sdk.Step(Reverse)).WithLimits(sdk.Limits{MaxConcurrency: 10, MaxItems: 10}),
			Concat, []string{"init"}, sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}})
		for range 2 { // the initial accumulator is a fresh copy each run
			ctx, _ := withTracker()
			got, err := sdk.Run(ctx, f, ints(10))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"init", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
			if !slices.Equal(got, want) {
				t.Fatalf("fold = %v, want %v", got, want)
			}
		}
	})
}

func TestFoldHeadOfLineBackpressure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{}) // in the bubble: blocking on it is durable
		var started atomic.Int32
		headBlocks := func(ctx context.Context, v int) (string, error) {
			started.Add(1)
			if v == 0 {
				<-release
			}
			return fmt.Sprint(v), nil
		}
		const window = 4
		f := sdk.Reduce(sdk.Map(sdk.Step(headBlocks)).WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: 50}),
			Concat, nil, sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}})
		done := make(chan error)
		go func() { _, err := sdk.Run(context.Background(), f, ints(50)); done <- err }()
		synctest.Wait() // every goroutine of the run is blocked
		// Item 0 holds the head: credits return only when items are folded,
		// so only window-1 later items may have been admitted.
		if n := started.Load(); n != window {
			t.Errorf("%d items started while the head was blocked; want exactly the window, %d", n, window)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := started.Load(); n != 50 {
			t.Fatalf("%d items ran, want 50", n)
		}
	})
}

// MutatingReducer mutates its accumulator in place.
func MutatingReducer(_ context.Context, acc map[string]int, item int) (map[string]int, error) {
	acc["sum"] += item
	return acc, nil
}

func TestFoldInitialIsFreshPerRun(t *testing.T) {
	t.Parallel()
	initial := map[string]int{"sum": 100}
	f := sdk.Reduce(sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 5}),
		MutatingReducer, initial, sdk.FoldOptions{MaxSerializedBytes: 1024, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1024}})
	for range 2 {
		ctx, _ := withTracker()
		got, err := sdk.Run(ctx, f, ints(5))
		if err != nil || got["sum"] != 100+2*(0+1+2+3+4) {
			t.Fatalf("got %v, %v", got, err)
		}
	}
	if initial["sum"] != 100 {
		t.Fatalf("the caller's initial value was mutated: %v", initial)
	}
}

func Min(_ context.Context, v []int) (int, error) { return slices.Min(v), nil }
func Max(_ context.Context, v []int) (int, error) { return slices.Max(v), nil }
func Len(_ context.Context, v []int) (string, error) {
	return fmt.Sprint(len(v)), nil
}

func TestGroups(t *testing.T) {
	t.Parallel()
	got, err := sdk.Run(context.Background(), sdk.Group(sdk.Step(Min), sdk.Step(Max)), []int{3, 1, 4})
	if err != nil || !slices.Equal(got, []int{1, 4}) {
		t.Fatalf("homogeneous group = %v, %v", got, err)
	}
	pair, err := sdk.Run(context.Background(), sdk.Group2(sdk.Step(Max), sdk.Step(Len)), []int{3, 1, 4})
	if err != nil || pair.V0 != 4 || pair.V1 != "3" {
		t.Fatalf("heterogeneous group = %+v, %v", pair, err)
	}
}

func TestGroupFailureCancelsSiblings(t *testing.T) {
	t.Parallel()
	sawCancel := make(chan bool, 1)
	waits := func(ctx context.Context, _ int) (int, error) {
		select {
		case <-ctx.Done():
			sawCancel <- true
			return 0, ctx.Err()
		case <-time.After(5 * time.Second):
			sawCancel <- false
			return 0, nil
		}
	}
	fails := func(context.Context, int) (int, error) { return 0, errBoom }
	_, err := sdk.Run(context.Background(), sdk.Group(sdk.Step(waits), sdk.Step(fails)), 1)
	if !errors.Is(err, errBoom) {
		t.Fatalf("want errBoom, got %v", err)
	}
	// Run returns after every branch ended: the sibling either saw the
	// cancellation or was never started.
	select {
	case cancelled := <-sawCancel:
		if !cancelled {
			t.Fatal("the sibling branch was not cancelled")
		}
	default:
	}
}

func TestSequential(t *testing.T) {
	t.Parallel()
	ctx, tr := withTracker()
	f := sdk.Group(sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 8}), sdk.Map(sdk.Step(Slow)))
	got, err := sdk.Run(ctx, f, ints(20), sdk.Sequential())
	if err != nil || len(got) != 2 || got[1][19] != 38 {
		t.Fatalf("got %v, %v", got, err)
	}
	if tr.peak != 1 {
		t.Fatalf("sequential run had %d leaves at once", tr.peak)
	}
}

func Panics(context.Context, int) (int, error) { panic("leaf exploded") }

func TestLeafPanicBecomesError(t *testing.T) {
	t.Parallel()
	_, err := sdk.Run(context.Background(), sdk.Map(sdk.Step(Panics)), ints(3))
	var pe *sdk.PanicError
	if !errors.As(err, &pe) || pe.Value != "leaf exploded" || !strings.Contains(pe.Stack, "Panics") {
		t.Fatalf("want a PanicError with the stack, got %v", err)
	}
}

func TestNestedMaps(t *testing.T) {
	t.Parallel()
	ctx, _ := withTracker()
	inner := sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 5})
	outer := sdk.Map(inner).WithLimits(sdk.Limits{MaxConcurrency: 3, MaxItems: 4})
	got, err := sdk.Run(ctx, outer, [][]int{{1, 2}, {3}, {}, {4, 5, 6, 7, 8}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{2, 4}, {6}, {}, {8, 10, 12, 14, 16}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	_, err = sdk.Run(ctx, outer, [][]int{{1}, {1, 2, 3, 4, 5, 6}})
	var mie *sdk.MaxItemsError
	if !errors.As(err, &mie) || mie.Node != "0.m1" {
		t.Fatalf("inner MaxItems: %v", err)
	}
}
