package ray

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/sdk"
)

// peak reads "start end" lines and returns the largest number of leaves
// running at once.
func peak(t *testing.T, path string) (peak, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		s, _ := strconv.ParseInt(f[0], 10, 64)
		e, _ := strconv.ParseInt(f[1], 10, 64)
		evs = append(evs, ev{s, 1}, ev{e, -1})
		n++
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta // an end before a start at the same instant
	})
	cur := 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak, n
}

func TestMapWindowRespected(t *testing.T) {
	needRay(t)
	t.Parallel()
	log := filepath.Join(t.TempDir(), "leaves")
	f := mapFlow(sdk.Limits{MaxConcurrency: 3, MaxItems: 100})
	got, err := runOn(context.Background(), testEngine, f, JobsSpec{N: 15, FailAt: -1, Template: Job{SleepMS: 250, Log: log}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("result %d = %d", i, v)
		}
	}
	p, n := peak(t, log)
	t.Logf("peak in-flight leaves %d of window 3 (%d leaves)", p, n)
	if n != 15 || p > 3 || p < 2 {
		t.Fatalf("peak %d over %d leaves, want 2..3 of 15", p, n)
	}
}

func TestMapMaxItems(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "leaves")
	f := mapFlow(sdk.Limits{MaxConcurrency: 2, MaxItems: 5})
	got, err := runOn(ctx, testEngine, f, JobsSpec{N: 5, FailAt: -1, Template: Job{Log: log}})
	if err != nil || len(got) != 5 {
		t.Fatalf("at the cap: %v %v", got, err)
	}
	os.Remove(log)
	_, err = runOn(ctx, testEngine, f, JobsSpec{N: 6, FailAt: -1, Template: Job{Log: log}})
	var me *sdk.MaxItemsError
	if !errors.As(err, &me) || *me != (sdk.MaxItemsError{Node: "0.1", MaxItems: 5, Items: 6}) {
		t.Fatalf("one over the cap: want MaxItemsError, got %v", err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Fatalf("a sized input over the cap ran leaves")
	}

	// A sequence fails when item MaxItems+1 is read.
	var read atomic.Int32
	seq := func(n int) iter.Seq[Job] {
		return func(yield func(Job) bool) {
			for i := range n {
				read.Add(1)
				if !yield(Job{I: i, Log: log}) {
					return
				}
			}
		}
	}
	got, err = runOn(ctx, testEngine, seqFlow, seq(5))
	if err != nil || len(got) != 5 || got[4] != 16 {
		t.Fatalf("sequence at the cap: %v %v", got, err)
	}
	read.Store(0)
	_, err = runOn(ctx, testEngine, seqFlow, seq(9))
	if !errors.As(err, &me) || *me != (sdk.MaxItemsError{Node: "0", MaxItems: 5, Items: 6}) {
		t.Fatalf("sequence over the cap: want MaxItemsError, got %v", err)
	}
	if r := read.Load(); r != 6 {
		t.Fatalf("read %d items of the sequence, want 6", r)
	}
	_, lerr := sdk.Run(ctx, seqFlow, seq(9))
	if lerr == nil || lerr.Error() != err.Error() {
		t.Fatalf("local %v, ray %v", lerr, err)
	}
}

// TestMapFailureCancels is not parallel: it checks that the bridge holds
// no handle afterwards.
//
// The bound is measured from the failure, which the failing leaf logs as
// it returns: how long a run takes to start its leaves depends on Ray's
// worker pool (a force-cancel kills the workers it cancels; Ray trims idle
// workers to its soft limit), not on the engine's cancellation.
func TestMapFailureCancels(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	const cancelTimeout = time.Second
	f := mapFlow(sdk.Limits{MaxConcurrency: 4, MaxItems: 100, CancelTimeout: cancelTimeout})
	failing := func() JobsSpec {
		log := filepath.Join(t.TempDir(), "log")
		return JobsSpec{N: 10, FailAt: 1, FailAfterMS: 300, Template: Job{SleepMS: 60_000, Log: log}}
	}
	spec := failing()
	debugf("failure run starts")
	_, err := runOn(ctx, testEngine, f, spec)
	returned := time.Now()
	var jf *JobFailure
	if !errors.As(err, &jf) || jf.Item != 1 {
		t.Fatalf("want the original *JobFailure of item 1, got %v", err)
	}
	var se *sdk.StepError
	if !errors.As(err, &se) || se.Node != "0.1.m1" {
		t.Fatalf("want a StepError at 0.1.m1, got %v", err)
	}
	const margin = 2 * time.Second
	took := returned.Sub(failedAt(t, spec.Template.Log))
	t.Logf("returned %v after the leaf failed (cancel timeout %v)", took, cancelTimeout)
	if limit := cancelTimeout + margin; took > limit {
		t.Fatalf("the failed map returned %v after its leaf failed, want < %v", took, limit)
	}
	_, lerr := sdk.Run(ctx, f, failing())
	if lerr == nil || lerr.Error() != err.Error() {
		t.Fatalf("local %v, ray %v", lerr, err)
	}
	// With a long CancelTimeout the run still returns quickly: the
	// sleeping leaves were cancelled, not waited for.
	long := mapFlow(sdk.Limits{MaxConcurrency: 4, MaxItems: 100, CancelTimeout: 30 * time.Second})
	spec = failing()
	_, err = runOn(ctx, testEngine, long, spec)
	returned = time.Now()
	if !errors.As(err, &jf) {
		t.Fatalf("want the original *JobFailure, got %v", err)
	}
	// A map that waited for its leaves would take their 60 s (or the 30 s
	// CancelTimeout); force-cancelling them takes Ray a few seconds on a
	// loaded 2-core machine.
	if took := returned.Sub(failedAt(t, spec.Template.Log)); took > 10*time.Second {
		t.Fatalf("with CancelTimeout 30s the failed map returned %v after its leaf failed: its leaves were not cancelled", took)
	}
	if st, err := testBridge.Stats(ctx); err != nil || st.Handles != 0 {
		t.Fatalf("the bridge still holds %d handles (%v)", st.Handles, err)
	}
}

// countingRuntime counts the bytes the coordinator fetches.
type countingRuntime struct {
	rayRuntime
	fetched atomic.Int64
}

func (c *countingRuntime) Get(ctx context.Context, h objHandle) ([]byte, *errorInfo, []byte, error) {
	b, info, v, err := c.rayRuntime.Get(ctx, h)
	c.fetched.Add(int64(len(b) + len(v)))
	return b, info, v, err
}

func (c *countingRuntime) Close() error { return nil }

func TestLargeValueStaysInRay(t *testing.T) {
	needRay(t)
	t.Parallel()
	cr := &countingRuntime{rayRuntime: testEngine.rt}
	e := newWithRuntime(cr, testEngine.exe)
	const size = 9 << 20
	// count payload fetches only, not progress drains
	got, err := runOn(context.Background(), e, bigFlow, size, pol(common.ReportingPolicyDisabled))
	if err != nil {
		t.Fatal(err)
	}
	if got != size {
		t.Fatalf("size %d, want %d", got, size)
	}
	if n := cr.fetched.Load(); n > 64 {
		t.Fatalf("the coordinator fetched %d bytes; the 9 MiB value should stay in Ray", n)
	}
}

// Cancelling the run's context stops a map: the run returns the context's
// error promptly and its leaves are cancelled.
func TestMapContextCancelled(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := mapFlow(sdk.Limits{MaxConcurrency: 2, MaxItems: 100})
	go func() { time.Sleep(1500 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := runOn(ctx, testEngine, f, JobsSpec{N: 10, FailAt: -1, Template: Job{SleepMS: 60_000}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond+sdk.CancelTimeoutDefault+2*time.Second {
		t.Fatalf("returned %v after the start", elapsed)
	}
}

// collectRuntime counts collector tasks and the handles they join.
type collectRuntime struct {
	*fakeRuntime
	mu       sync.Mutex
	collects []int // arguments per collector, concat negative
}

func (c *collectRuntime) Collect(ctx context.Context, args []taskArg, concat bool) (objHandle, error) {
	c.mu.Lock()
	n := len(args)
	if concat {
		n = -n
	}
	c.collects = append(c.collects, n)
	c.mu.Unlock()
	return c.fakeRuntime.Collect(ctx, args, concat)
}

// A plain map's results are joined a chunk of collectChunk items at a time
// (so the coordinator holds no handle per finished item), in input order,
// at every chunk edge.
func TestMapChunkedCollect(t *testing.T) {
	t.Parallel()
	flow := sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: 3 * collectChunk})
	for _, c := range []struct {
		n    int
		want []int
	}{
		{0, []int{0}},
		{1, []int{1}},
		{collectChunk - 1, []int{collectChunk - 1}},
		{collectChunk, []int{collectChunk}},
		{collectChunk + 1, []int{collectChunk, 1, -2}},
		{2 * collectChunk, []int{collectChunk, collectChunk, -2}},
		{2*collectChunk + 5, []int{collectChunk, collectChunk, 5, -3}},
	} {
		_, frt := newFakeEngine()
		cr := &collectRuntime{fakeRuntime: frt}
		e := newWithRuntime(cr, "")
		in := make([]int, c.n)
		for i := range in {
			in[i] = i * 3
		}
		got, err := runOn(context.Background(), e, flow, in, noProgress)
		if err != nil {
			t.Fatalf("%d items: %v", c.n, err)
		}
		if len(got) != c.n || !slices.Equal(got, in) {
			t.Fatalf("%d items: results out of order or missing (%d)", c.n, len(got))
		}
		cr.mu.Lock()
		if !slices.Equal(cr.collects, c.want) {
			t.Errorf("%d items: collectors %v, want %v", c.n, cr.collects, c.want)
		}
		cr.mu.Unlock()
		if live := frt.live(); live != 0 {
			t.Errorf("%d items: %d handles not released", c.n, live)
		}
	}
}
