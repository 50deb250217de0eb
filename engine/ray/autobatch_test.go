package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// Automatic item batching on Ray (sdk's WithAutoBatching): the executor
// sizes each task's batch, 1 … the cap, and every item keeps its own
// result, error, window slot and progress count; the local engine, which
// sizes by the same rule, gives the reference outcome. The executor suite
// (TestExecutorSuite) runs its automatic batching scenarios here too.

const aworkCap = 8

// aworkFlow maps Work over Jobs with automatic batching up to aworkCap.
func aworkFlow(l sdk.Limits) sdk.Flow[JobsSpec, []int] {
	return sdk.Then(sdk.Step(Jobs), sdk.Map(sdk.Step(Work, quarter)).WithLimits(l).WithAutoBatching(aworkCap))
}

// anoopFlow is the no-op map with automatic batching (window 64, cap 32).
var anoopFlow = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: benchMaxItems}).WithAutoBatching(32)

// The engine's TaskCost: Ray's per-task overhead and the cluster's CPUs
// (as Ray reported them to the bridge), GOMAXPROCS on a runtime that
// cannot tell.
func TestAutoBatchingTaskCost(t *testing.T) {
	_, frt := newFakeEngine()
	r := &runner{e: newWithRuntime(frt, exeOf(t))}
	if c := r.taskCost(); c.Overhead != taskOverhead || c.CPUs < 1 {
		t.Fatalf("fake runtime: %+v, want %v and GOMAXPROCS CPUs", c, taskOverhead)
	}
	if testEngine == nil {
		return
	}
	if testBridge.ClusterCPUs() < 1 {
		t.Fatalf("the bridge reports %d cluster CPUs", testBridge.ClusterCPUs())
	}
	if c := (&runner{e: testEngine}).taskCost(); c.CPUs != testBridge.ClusterCPUs() {
		t.Fatalf("Ray: %+v, want the cluster's %d CPUs", c, testBridge.ClusterCPUs())
	}
}

// Results come back one per item, in input order, from batches of 1 … the
// cap that hold every item once, the first a probe of one item; equal to
// the local engine's.
func TestAutoBatchedMapResults(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, n := range []int{0, 1, 2, aworkCap + 1, 300} {
				br := &batchingRuntime{rayRuntime: rt}
				e := newWithRuntime(br, exeOf(t))
				in := make([]int, n)
				for i := range in {
					in[i] = i
				}
				got, err := runOn(context.Background(), e, anoopFlow, in, noProgress)
				if err != nil {
					t.Fatalf("%d items: %v", n, err)
				}
				want, err := sdk.Run(context.Background(), anoopFlow, in)
				if err != nil || !slices.Equal(got, want) || len(got) != n {
					t.Fatalf("%d items: ray %v, local %v (%v)", n, got, want, err)
				}
				sum := 0
				for _, s := range br.sizes {
					if s < 1 || s > 32 {
						t.Fatalf("%d items: batches %v, want 1 … 32 items each", n, br.sizes)
					}
					sum += s
				}
				if sum != n || (n > 0 && br.sizes[0] != 1) {
					t.Fatalf("%d items: batches %v, want %d items in all, a probe of one first", n, br.sizes, n)
				}
				if br.peak > 64 {
					t.Fatalf("%d items: %d items in flight, want at most the window of 64", n, br.peak)
				}
			}
		})
	}
}

// A failing item fails the map with the same error as the local engine
// (the item's own node and typed error, never a batch-level error).
func TestAutoBatchedMapError(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newWithRuntime(rt, exeOf(t))
			in := JobsSpec{N: 40, FailAt: 27, Template: Job{SleepMS: 1}}
			f := aworkFlow(sdk.Limits{MaxConcurrency: 16, MaxItems: 100})
			_, err := runOn(context.Background(), e, f, in, noProgress)
			var jf *JobFailure
			var se *sdk.StepError
			if !errors.As(err, &jf) || jf.Item != 27 || !errors.As(err, &se) || se.Node != "0.1.m27" {
				t.Fatalf("want the *JobFailure of item 27 at 0.1.m27, got %v", err)
			}
			_, lerr := sdk.Run(context.Background(), f, in)
			if lerr == nil || lerr.Error() != err.Error() {
				t.Fatalf("local %v, ray %v", lerr, err)
			}
		})
	}
}

// Progress counts items, not tasks: the final counters are the items', and
// items in flight never exceed the window.
func TestAutoBatchedMapProgress(t *testing.T) {
	needRay(t)
	t.Parallel()
	rec := &fanoutRecorder{}
	const n = 3*aworkCap + 1
	f := aworkFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
	got, err := sdk.Run(context.Background(), f, JobsSpec{N: n, FailAt: -1, Template: Job{SleepMS: 50}},
		sdk.WithEngine(testEngine), sdk.WithProgress(rec), sdk.WithProgressInterval(20*time.Millisecond))
	if err != nil || len(got) != n {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.last.CompletedItems != n || rec.last.SubmittedItems != n || rec.last.InFlightItems != 0 {
		t.Fatalf("final map counters %+v, want %d items", rec.last, n)
	}
	if rec.maxInFlight > 8 || rec.maxInFlight < 1 {
		t.Fatalf("in-flight items peaked at %d, want 1..8 (items, not tasks)", rec.maxInFlight)
	}
}

// Cancelling the run stops the batches in flight: with a CancelTimeout of
// 30 s the run returns within seconds of its cancellation, which it can
// only do once the sleeping leaves are terminal.
func TestAutoBatchedMapCancels(t *testing.T) {
	needRay(t)
	t.Parallel()
	const cancelTimeout = 30 * time.Second
	log := filepath.Join(t.TempDir(), "leaves")
	f := aworkFlow(sdk.Limits{MaxConcurrency: 16, MaxItems: 100, CancelTimeout: cancelTimeout})
	in := JobsSpec{N: 16, FailAt: -1, Template: Job{SleepMS: 60_000, Log: log}}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan time.Time, 1)
	tm := time.AfterFunc(2*time.Second, func() { cancelled <- time.Now(); cancel() })
	defer tm.Stop()
	_, err := runOn(ctx, testEngine, f, in)
	returned := time.Now()
	var ce *sdk.CanceledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want the run's *sdk.CanceledError, got %v", err)
	}
	elapsed := returned.Sub(<-cancelled)
	t.Logf("returned %v after the cancellation (cancel timeout %v)", elapsed, cancelTimeout)
	if limit := 10 * time.Second; elapsed > limit {
		t.Fatalf("the cancelled run returned %v after its cancellation, want < %v: its batches were not cancelled", elapsed, limit)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("a sleeping leaf finished after the cancellation")
	}
}
