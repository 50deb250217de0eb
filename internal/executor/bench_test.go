package executor_test

import (
	"context"
	"iter"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/internal/executor/executortest"
	"github.com/rayflow/rayflow/progress"
)

// noop is a backend whose items cost nothing: all cost measured is the
// scheduler's.
type noop struct{}

func (noop) Item(_ context.Context, _ int, v int) (int, error) { return v, nil }
func (noop) Batch(_ context.Context, _ int, items []int, each func(int, int, error)) {
	for j, v := range items {
		each(j, v, nil)
	}
}
func (noop) Discard(int, int)                            {}
func (noop) Abort(context.Context, error, time.Duration) {}

type intSink struct{ out []int }

func (s *intSink) Add(_ context.Context, i int, v int) error  { s.out[i] = v; return nil }
func (s *intSink) Finish(context.Context, int) ([]int, error) { return s.out, nil }

// BenchmarkRunVsPool is the scheduler's own cost: 50,000 no-op items
// (window 64) through executor.Run on a backend that does nothing, and in
// the same iteration through a bounded goroutine pool. It reports each
// one's ns/item, the ratio and the scheduler's allocations per item (the
// result list included), with progress counters reported per item.
func BenchmarkRunVsPool(b *testing.B) {
	const items, window = 50_000, 64
	in := make([]int, items)
	for i := range in {
		in[i] = i
	}
	var seq iter.Seq2[int, error] = func(yield func(int, error) bool) {
		for _, v := range in {
			if !yield(v, nil) {
				return
			}
		}
	}
	var reports int
	report := func(progress.MapCounters) { reports++ }
	fn := func(_ context.Context, v int) (int, error) { return v, nil }
	var eng, pl time.Duration
	var allocs uint64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0 := time.Now()
		out, err := executor.Run(context.Background(), executor.Limits{Node: "0", Window: window, MaxItems: items}, seq,
			executor.Backend[int, int](noop{}), executor.Sink[int, []int](&intSink{out: make([]int, items)}), report)
		eng += time.Since(t0)
		runtime.ReadMemStats(&m1)
		allocs += m1.Mallocs - m0.Mallocs
		if err != nil || !slices.Equal(out, in) {
			b.Fatalf("executor: %v", err)
		}
		t0 = time.Now()
		pout, err := executortest.Pool(context.Background(), window, in, fn)
		pl += time.Since(t0)
		if err != nil || !slices.Equal(pout, in) {
			b.Fatalf("pool: %v", err)
		}
	}
	n := float64(b.N) * items
	b.ReportMetric(float64(eng.Nanoseconds())/n, "executor-ns/item")
	b.ReportMetric(float64(pl.Nanoseconds())/n, "pool-ns/item")
	b.ReportMetric(float64(eng)/float64(pl), "ratio")
	b.ReportMetric(float64(allocs)/n, "executor-allocs/item")
}
