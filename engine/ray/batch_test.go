package ray

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry/prom"
)

// Item batching on Ray (sdk's WithItemBatching): up to K items of a map per
// task, each item keeping its own result, error, window slot and progress
// count; the local engine, which batches the same way, gives the reference
// outcome.

const bworkK = 4

// bworkFlow maps Work over Jobs in batches of bworkK items.
func bworkFlow(l sdk.Limits) sdk.Flow[JobsSpec, []int] {
	return sdk.Then(sdk.Step(Jobs), sdk.Map(sdk.Step(Work, quarter)).WithLimits(l).WithItemBatching(bworkK))
}

var (
	bworkSeqFlow = sdk.MapSeq(sdk.Step(Work, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 5}).WithItemBatching(bworkK)
	bnoop16      = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: 256, MaxItems: benchMaxItems}).WithItemBatching(16)
	bnoop64      = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: 256, MaxItems: benchMaxItems}).WithItemBatching(64)
)

// batchingRuntime records the batches submitted and the most items in
// batches the coordinator has submitted and not yet taken back (it
// releases a batch's handle when it has handled its outcome).
type batchingRuntime struct {
	rayRuntime
	mu      sync.Mutex
	sizes   []int
	open    map[objHandle]int
	running int
	peak    int
}

func (b *batchingRuntime) SubmitBatch(ctx context.Context, t leafTask) (objHandle, []objHandle, error) {
	h, hs, err := b.rayRuntime.SubmitBatch(ctx, t)
	if err == nil {
		b.mu.Lock()
		if b.open == nil {
			b.open = map[objHandle]int{}
		}
		b.open[h] = len(t.Items)
		b.sizes = append(b.sizes, len(t.Items))
		b.running += len(t.Items)
		b.peak = max(b.peak, b.running)
		b.mu.Unlock()
	}
	return h, hs, err
}

func (b *batchingRuntime) Release(hs []objHandle) {
	b.mu.Lock()
	for _, h := range hs {
		if n, ok := b.open[h]; ok {
			b.running -= n
			delete(b.open, h)
		}
	}
	b.mu.Unlock()
	b.rayRuntime.Release(hs)
}

func (b *batchingRuntime) Close() error { return nil }

// batchEngines are the engines a batching test runs on: the fake runtime
// always, the shared Ray engine unless -short.
func batchEngines(t *testing.T) map[string]rayRuntime {
	_, frt := newFakeEngine()
	out := map[string]rayRuntime{"fake": frt}
	if testEngine != nil {
		out["ray"] = testEngine.rt
	}
	return out
}

// Results come back one per item, in input order, from ceil(n/K) tasks of
// at most K items, at every batch edge; equal to the local engine's.
func TestBatchedMapResults(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, n := range []int{0, 1, bworkK - 1, bworkK, bworkK + 1, 3*bworkK + 2} {
				br := &batchingRuntime{rayRuntime: rt}
				e := newWithRuntime(br, exeOf(t))
				in := JobsSpec{N: n, FailAt: -1}
				f := bworkFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
				got, err := runOn(context.Background(), e, f, in, noProgress)
				if err != nil {
					t.Fatalf("%d items: %v", n, err)
				}
				want, err := sdk.Run(context.Background(), f, in)
				if err != nil || !slices.Equal(got, want) || len(got) != n {
					t.Fatalf("%d items: ray %v, local %v (%v)", n, got, want, err)
				}
				wantBatches := (n + bworkK - 1) / bworkK
				if len(br.sizes) != wantBatches || slices.ContainsFunc(br.sizes, func(s int) bool { return s > bworkK || s < 1 }) {
					t.Fatalf("%d items: batches %v, want %d of at most %d", n, br.sizes, wantBatches, bworkK)
				}
			}
		})
	}
}

// exeOf is the leaf binary: this test binary.
func exeOf(t *testing.T) string {
	if testEngine != nil {
		return testEngine.exe
	}
	return "/fake/leaf"
}

// A failing item fails the map with the same error as the local engine
// (the item's own node and typed error, never a batch-level error); the
// items after it in its batch do not run.
func TestBatchedMapError(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "leaves")
			e := newWithRuntime(rt, exeOf(t))
			// Item 5 is the second of batch 1 (items 4..7); window 4: one batch at a time.
			in := JobsSpec{N: 12, FailAt: 5, Template: Job{Log: log}}
			f := bworkFlow(sdk.Limits{MaxConcurrency: bworkK, MaxItems: 100})
			_, err := runOn(context.Background(), e, f, in, noProgress)
			var jf *JobFailure
			var se *sdk.StepError
			if !errors.As(err, &jf) || jf.Item != 5 || !errors.As(err, &se) || se.Node != "0.1.m5" {
				t.Fatalf("want the *JobFailure of item 5 at 0.1.m5, got %v", err)
			}
			_, lerr := sdk.Run(context.Background(), f, JobsSpec{N: 12, FailAt: 5})
			if lerr == nil || lerr.Error() != err.Error() {
				t.Fatalf("local %v, ray %v", lerr, err)
			}
			// Items 0..5 ran (item 5 logs, then fails), 6 and 7 did not.
			if _, n := peak(t, log); n != 6 {
				t.Fatalf("%d items ran, want 6 (batch 0, then batch 1 up to the failure)", n)
			}
		})
	}
}

// The window is counted in items: with window 8 and K = 4, two batches
// (8 items) are open at once, never more.
func TestBatchedMapWindowInItems(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			br := &batchingRuntime{rayRuntime: rt}
			e := newWithRuntime(br, exeOf(t))
			log := filepath.Join(t.TempDir(), "leaves")
			f := bworkFlow(sdk.Limits{MaxConcurrency: 2 * bworkK, MaxItems: 100})
			got, err := runOn(context.Background(), e, f, JobsSpec{N: 6 * bworkK, FailAt: -1, Template: Job{SleepMS: 100, Log: log}}, noProgress)
			if err != nil || len(got) != 6*bworkK {
				t.Fatal(err)
			}
			br.mu.Lock()
			p := br.peak
			br.mu.Unlock()
			if p != 2*bworkK {
				t.Fatalf("at most %d items in running batches, want exactly the window %d", p, 2*bworkK)
			}
			// Items of a batch run one after another: at most two at once.
			if pk, n := peak(t, log); n != 6*bworkK || pk > 2 {
				t.Fatalf("peak %d items running at once over %d, want at most 2", pk, n)
			}
		})
	}
}

// MaxItems: a sized input over the cap runs nothing; a sequence fails when
// item MaxItems+1 is read, and the forming batch is dropped.
func TestBatchedMapMaxItems(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			br := &batchingRuntime{rayRuntime: rt}
			e := newWithRuntime(br, exeOf(t))
			f := bworkFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 5})
			if got, err := runOn(ctx, e, f, JobsSpec{N: 5, FailAt: -1}, noProgress); err != nil || len(got) != 5 {
				t.Fatalf("at the cap: %v %v", got, err)
			}
			_, err := runOn(ctx, e, f, JobsSpec{N: 6, FailAt: -1}, noProgress)
			var me *sdk.MaxItemsError
			if !errors.As(err, &me) || *me != (sdk.MaxItemsError{Node: "0.1", MaxItems: 5, Items: 6}) {
				t.Fatalf("one over the cap: %v", err)
			}
			seq := func(n int) func(func(Job) bool) {
				return func(yield func(Job) bool) {
					for i := range n {
						if !yield(Job{I: i}) {
							return
						}
					}
				}
			}
			got, err := runOn(ctx, e, bworkSeqFlow, seq(5), noProgress)
			if err != nil || len(got) != 5 || got[4] != 16 {
				t.Fatalf("sequence at the cap: %v %v", got, err)
			}
			br.mu.Lock()
			br.sizes = nil
			br.mu.Unlock()
			_, err = runOn(ctx, e, bworkSeqFlow, seq(9), noProgress)
			_, lerr := sdk.Run(ctx, bworkSeqFlow, seq(9))
			if !errors.As(err, &me) || *me != (sdk.MaxItemsError{Node: "0", MaxItems: 5, Items: 6}) || lerr == nil || lerr.Error() != err.Error() {
				t.Fatalf("sequence over the cap: ray %v, local %v", err, lerr)
			}
			br.mu.Lock()
			defer br.mu.Unlock()
			if slices.ContainsFunc(br.sizes, func(s int) bool { return s != bworkK }) {
				t.Fatalf("batches %v: the forming batch of item 5 must be dropped", br.sizes)
			}
		})
	}
}

// Progress counts items, not tasks.
func TestBatchedMapProgress(t *testing.T) {
	needRay(t)
	t.Parallel()
	rec := &fanoutRecorder{}
	const n = 3*bworkK + 1
	f := bworkFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
	// Publications every 20 ms while every batch is in flight for at least
	// 4×100 ms: the peak is observed however fast the cluster is (at the
	// default 1 s interval a quiet head finished before the first one).
	got, err := sdk.Run(context.Background(), f, JobsSpec{N: n, FailAt: -1, Template: Job{SleepMS: 100}},
		sdk.WithEngine(testEngine), sdk.WithProgress(rec), sdk.WithProgressInterval(20*time.Millisecond))
	if err != nil || len(got) != n {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.last.CompletedItems != n || rec.last.SubmittedItems != n || rec.last.InFlightItems != 0 {
		t.Fatalf("final map counters %+v, want %d items", rec.last, n)
	}
	if rec.maxInFlight > 8 || rec.maxInFlight < bworkK {
		t.Fatalf("in-flight items peaked at %d, want %d..8 (items, not tasks)", rec.maxInFlight, bworkK)
	}
}

// fanoutRecorder keeps the map node's item counters from every
// publication.
type fanoutRecorder struct {
	mu          sync.Mutex
	last        struct{ SubmittedItems, CompletedItems, InFlightItems int64 }
	maxInFlight int64
}

func (r *fanoutRecorder) Publish(_ context.Context, p *progress.Publication) error {
	if p == nil || p.Snapshot == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range p.Snapshot.Graph.Nodes {
		if n.NodeID == "0.1" && n.Fanout != nil {
			r.last.SubmittedItems, r.last.CompletedItems, r.last.InFlightItems = n.Fanout.SubmittedItems, n.Fanout.CompletedItems, n.Fanout.InFlightItems
			r.maxInFlight = max(r.maxInFlight, n.Fanout.InFlightItems)
		}
	}
	return nil
}

// A failing item cancels the other running batch: with a CancelTimeout of
// 30 s the map returns within seconds of the failure, which it can only do
// once the sleeping batch is terminal (measured from the failure: on a
// busy cluster a batch may wait for a worker first).
func TestBatchedMapCancels(t *testing.T) {
	needRay(t)
	t.Parallel()
	const cancelTimeout = 30 * time.Second
	log := filepath.Join(t.TempDir(), "leaves")
	f := bworkFlow(sdk.Limits{MaxConcurrency: 2 * bworkK, MaxItems: 100, CancelTimeout: cancelTimeout})
	// Batch 0's first item sleeps a minute; batch 1's first item fails at 300 ms.
	in := JobsSpec{N: 2 * bworkK, FailAt: bworkK, FailAfterMS: 300, Template: Job{SleepMS: 60_000, Log: log}}
	_, err := runOn(context.Background(), testEngine, f, in)
	returned := time.Now()
	var se *sdk.StepError
	if !errors.As(err, &se) || se.Node != "0.1.m4" {
		t.Fatalf("want the StepError of item 4, got %v", err)
	}
	elapsed := returned.Sub(failedAt(t, log))
	t.Logf("returned %v after the failure (cancel timeout %v)", elapsed, cancelTimeout)
	if limit := 5 * time.Second; elapsed > limit {
		t.Fatalf("the failed map returned %v after the failure, want < %v: the other batch was not cancelled", elapsed, limit)
	}
}

// A batched map feeding a fold or a result buffer hands every item to the
// actor on its own: the fold's input order and the buffer's items are
// the local engine's.
func TestBatchedMapSinks(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	l := sdk.Limits{MaxConcurrency: 6, MaxItems: 20}
	fold := sdk.Reduce(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l).WithItemBatching(3), Concat, "",
		sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: tinyActor})
	buffer := sdk.Then(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l).WithItemBatching(3).
		WithResultBuffer(sdk.ResultBuffer{MaxSerializedBytes: 1 << 10, Actor: tinyActor}), sdk.Step(Count))
	in := revItems(10, 20, "", 0)
	got, err := runOn(ctx, testEngine, fold, in)
	want, lerr := sdk.Run(ctx, fold, in)
	if err != nil || lerr != nil || got != want {
		t.Fatalf("fold: ray %q (%v), local %q (%v)", got, err, want, lerr)
	}
	n, err := runOn(ctx, testEngine, buffer, in)
	wn, lerr := sdk.Run(ctx, buffer, in)
	if err != nil || lerr != nil || n != wn {
		t.Fatalf("buffer: ray %d (%v), local %d (%v)", n, err, wn, lerr)
	}
}

// A batched map records its window in the same gauges as a plain one: its
// slots while it runs, and a running batch's items in flight (items, not
// tasks), never more than the window; both return to where they were. Not
// parallel: the gauges are the process's.
func TestBatchedMapWindowMetrics(t *testing.T) {
	_, frt := newFakeEngine()
	e := newWithRuntime(frt, exeOf(t))
	m := prom.M
	slotsG, inFlightG := m.MapWindowSlots.WithLabelValues("ray"), m.MapItemsInFlight.WithLabelValues("ray")
	slots0, inFlight0 := testutil.ToFloat64(slotsG), testutil.ToFloat64(inFlightG)
	const window = 2 * bworkK
	var peakSlots, peakInFlight float64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peakSlots = max(peakSlots, testutil.ToFloat64(slotsG)-slots0)
			peakInFlight = max(peakInFlight, testutil.ToFloat64(inFlightG)-inFlight0)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f := bworkFlow(sdk.Limits{MaxConcurrency: window, MaxItems: 100})
	got, err := runOn(context.Background(), e, f, JobsSpec{N: 4 * bworkK, FailAt: -1, Template: Job{SleepMS: 100}}, noProgress)
	close(stop)
	<-sampled
	if err != nil || len(got) != 4*bworkK {
		t.Fatalf("%v, %d results", err, len(got))
	}
	if peakSlots != window || peakInFlight < bworkK || peakInFlight > window {
		t.Fatalf("window slots peaked at %v (want %d), items in flight at %v (want %d..%d)", peakSlots, window, peakInFlight, bworkK, window)
	}
	if s, f := testutil.ToFloat64(slotsG)-slots0, testutil.ToFloat64(inFlightG)-inFlight0; s != 0 || f != 0 {
		t.Fatalf("after the map: %v window slots and %v items in flight left", s, f)
	}
}
