package ray

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/sdk"
)

// AddInt is the benchmark fold's reducer.
func AddInt(_ context.Context, acc int, item int) (int, error) { return acc + item, nil }

// LenInts counts a buffered map's results.
func LenInts(_ context.Context, xs []int) (int, error) { return len(xs), nil }

const (
	benchActorWindow = 32
	benchActorMax    = 10_000
	benchPolicyItems = 500
	benchGroupSteps  = 100
)

var (
	benchActor    = sdk.ActorOptions{NumCPUs: 0.01, Memory: 64 << 20}
	benchItemMap  = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: benchActorWindow, MaxItems: benchActorMax})
	benchBuffered = sdk.Then(sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: benchActorWindow, MaxItems: benchActorMax}).
			WithResultBuffer(sdk.ResultBuffer{MaxSerializedBytes: 4 << 20, Actor: benchActor}), sdk.Step(LenInts))
	benchFold = sdk.Reduce(sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: benchActorWindow, MaxItems: benchActorMax}),
		AddInt, 0, sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: benchActor})
	benchGroup = func() sdk.Flow[int, []int] {
		steps := make([]sdk.Flow[int, int], benchGroupSteps)
		for i := range steps {
			steps[i] = sdk.Step(NoOp)
		}
		return sdk.Group(steps...)
	}()
)

// heapSampler records the coordinator's Go heap after a GC every period
// while a run is in flight.
type heapSampler struct {
	stop  chan struct{}
	done  sync.WaitGroup
	peak  uint64
	count int
}

// heapAfterGC forces a GC and returns the heap it marked live
// (/gc/heap/live:bytes). MemStats.HeapAlloc read after runtime.GC also
// counts what the run's goroutines allocated since the GC ended, which
// varies with the sample's timing rather than with what is retained.
func heapAfterGC() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func sampleHeap(period time.Duration) *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.peak = max(s.peak, heapAfterGC())
				s.count++
			}
		}
	}()
	return s
}

func (s *heapSampler) end() { close(s.stop); s.done.Wait() }

func kib(b uint64) string { return fmt.Sprintf("%7.0f KiB", float64(b)/1024) }

// TestBenchRayActors is make bench-ray-actors (RAYFLOW_BENCH=1), in one
// run: (1) the coordinator's Go heap after GC, sampled mid-run (peak) and
// at the end, for a buffered map and a fold of 1,000 and 10,000 no-op
// items (window 32), which must stay flat in N; (2) wall time of the same
// fan-outs under the full, terminal_only and disabled policies.
func TestBenchRayActors(t *testing.T) {
	needRay(t)
	if os.Getenv("RAYFLOW_BENCH") != "1" {
		t.Skip("a benchmark: run it with make bench-ray-actors (RAYFLOW_BENCH=1)")
	}
	ctx := context.Background()
	ints := func(n int) []int {
		in := make([]int, n)
		for i := range in {
			in[i] = i
		}
		return in
	}
	e, off := testEngine, pol(common.ReportingPolicyDisabled)              // memory: no progress state
	if _, err := runOn(ctx, e, benchItemMap, ints(200), off); err != nil { // warm the workers
		t.Fatal(err)
	}

	fmt.Printf("bench-ray-actors: coordinator Go heap after GC (window %d, no-op items, policy disabled)\n", benchActorWindow)
	fmt.Printf("  %-14s %7s %13s %13s %13s %9s\n", "flow", "items", "before", "mid-run peak", "end", "wall")
	type memRow struct {
		name string
		run  func(in []int) error
	}
	rows := []memRow{
		{"buffered map", func(in []int) error {
			n, err := runOn(ctx, e, benchBuffered, in, off)
			if err == nil && n != len(in) {
				err = fmt.Errorf("buffered %d items, want %d", n, len(in))
			}
			return err
		}},
		{"fold", func(in []int) error {
			n, err := runOn(ctx, e, benchFold, in, off)
			if err == nil && n != len(in)*(len(in)-1)/2 {
				err = fmt.Errorf("fold %d", n)
			}
			return err
		}},
	}
	if os.Getenv("RAYFLOW_BENCH_ONLY") == "policies" {
		rows = nil
	}
	for _, row := range rows {
		for _, n := range []int{1_000, benchActorMax} {
			in := ints(n)
			before := heapAfterGC()
			s := sampleHeap(250 * time.Millisecond)
			start := time.Now()
			err := row.run(in)
			wall := time.Since(start)
			s.end()
			if err != nil {
				t.Fatal(err)
			}
			endHeap := heapAfterGC()
			fmt.Printf("  %-14s %7d %13s %13s %13s %9v  (%d samples)\n", row.name, n, kib(before), kib(s.peak), kib(endHeap), wall.Round(time.Millisecond), s.count)
		}
	}

	// Policy overhead: the same fan-outs, policies interleaved per round.
	const rounds = 3
	pols := []common.ReportingPolicy{common.ReportingPolicyFull, common.ReportingPolicyTerminalOnly, common.ReportingPolicyDisabled}
	fanouts := []struct {
		name string
		run  func(p sdk.MaterializeOption) error
	}{
		{fmt.Sprintf("map %d no-op items, window %d", benchPolicyItems, benchActorWindow), func(p sdk.MaterializeOption) error {
			_, err := runOn(ctx, testEngine, benchItemMap, ints(benchPolicyItems), p)
			return err
		}},
		{fmt.Sprintf("group of %d no-op steps (graph nodes)", benchGroupSteps), func(p sdk.MaterializeOption) error {
			_, err := runOn(ctx, testEngine, benchGroup, 1, p)
			return err
		}},
	}
	fmt.Printf("bench-ray-actors: policy overhead, %d rounds interleaved (median, min)\n", rounds)
	for _, fo := range fanouts {
		times := map[common.ReportingPolicy][]time.Duration{}
		for range rounds {
			for _, p := range pols {
				start := time.Now()
				if err := fo.run(pol(p)); err != nil {
					t.Fatal(err)
				}
				times[p] = append(times[p], time.Since(start))
			}
		}
		fmt.Printf("  %s:\n", fo.name)
		base := median(times[common.ReportingPolicyDisabled])
		for _, p := range pols {
			m := median(times[p])
			fmt.Printf("    %-14s median %8v  min %8v  vs disabled %+6.1f%%\n", p, m.Round(time.Millisecond),
				slices.Min(times[p]).Round(time.Millisecond), 100*(m.Seconds()-base.Seconds())/base.Seconds())
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
