package local_test

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// NoopLeaf is the benchmark leaf: all cost measured is the engine's.
func NoopLeaf(_ context.Context, v int) (int, error) { return v, nil }

// BenchmarkMap runs a local map of no-op items through the engine (no
// materialization: that is sdk's cost, paid once per run). It reports
//
//   - ns/item: wall time per map item;
//   - B/item and allocs/item: everything allocated per item, garbage
//     included (node ids, hand-offs, boxing) plus the result list
//     itself — 16 B per item for the engine's []any and 8 B for the
//     typed []int it collects into.
//
// It runs with the default codec round trip of every value (an int here);
// BenchmarkCodecRoundTrip compares with and without it. Memory retained
// while the map runs is BenchmarkMapLiveMemory's subject.
func BenchmarkMap(b *testing.B) {
	for _, c := range []struct{ items, window int }{{100_000, 64}, {100_000, 1024}, {10_000, 64}} {
		b.Run(fmt.Sprintf("items=%d/window=%d", c.items, c.window), func(b *testing.B) {
			f := sdk.Map(sdk.Step(NoopLeaf)).WithLimits(sdk.Limits{MaxConcurrency: c.window, MaxItems: c.items})
			if err := sdkrt.Validate(sdkrt.Graph(f)); err != nil {
				b.Fatal(err)
			}
			in := make([]int, c.items)
			for i := range in {
				in[i] = i
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for b.Loop() {
				out, err := local.Run(context.Background(), sdkrt.Graph(f), in, local.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if got := out.([]int); len(got) != c.items || got[c.items-1] != c.items-1 {
					b.Fatalf("wrong result: %d items", len(got))
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N) * float64(c.items)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/item")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/item")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/item")
		})
	}
}

// BenchmarkMapBatched compares item batching (WithItemBatching) at 1, 16
// and 64 items per task on a local map of no-op items, window 256, with
// and without the codec round trip: a batch replaces the hand-off of work
// to a worker per item with one per batch, and its results reach the map
// loop through a buffer, one by one. The codec round trip of every item,
// which batching does not change, dominates a local no-op item.
func BenchmarkMapBatched(b *testing.B) {
	const items, window = 100_000, 256
	in := make([]int, items)
	for i := range in {
		in[i] = i
	}
	for _, c := range []struct {
		k     int
		codec bool
	}{{1, true}, {16, true}, {64, true}, {1, false}, {16, false}, {64, false}} {
		k, opts := c.k, local.Options{NoCodecRoundTrip: !c.codec}
		b.Run(fmt.Sprintf("items=%d/window=%d/codec=%v/k=%d", items, window, c.codec, k), func(b *testing.B) {
			f := sdk.Map(sdk.Step(NoopLeaf)).WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: items}).WithItemBatching(k)
			if err := sdkrt.Validate(sdkrt.Graph(f)); err != nil {
				b.Fatal(err)
			}
			cpu0 := processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				out, err := local.Run(context.Background(), sdkrt.Graph(f), in, opts)
				if err != nil {
					b.Fatal(err)
				}
				if got := out.([]int); len(got) != items || got[items-1] != items-1 {
					b.Fatalf("wrong result: %d items", len(got))
				}
			}
			b.StopTimer()
			n := float64(b.N) * items
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/item")
			// CPU time (user+system, all threads, GC included) is what the
			// engine costs; on a shared machine it is steadier than wall time.
			b.ReportMetric(float64(processCPU(b)-cpu0)/n, "cpu-ns/item")
		})
	}
}

// processCPU is the process's user+system CPU time so far, in ns.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// probe measures live memory from inside a leaf. When the leaf for item
// at runs, it forces a full GC and records the live heap
// (runtime.MemStats HeapAlloc after the GC: what the process retains, not
// garbage) and the number of goroutines (each one a stack). Meanwhile
// every other leaf that starts waits, so the map cannot race ahead and
// allocate during the measurement (at most a window of items already past
// the check finish).
type probe struct {
	at         int
	measuring  atomic.Bool
	resume     chan struct{} // closed when the measurement is done
	live       atomic.Uint64
	goroutines atomic.Int64
}

type probeKey struct{}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// settledGoroutines waits (up to a second) for the workers of an earlier
// run, which exit just after it returns: until two counts 2ms apart agree.
// It returns the last count, settled or not (the caller compares counts).
func settledGoroutines() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n := -1
	_ = testwait.Poll(ctx, 2*time.Millisecond, "settled goroutines", func(context.Context) (bool, error) {
		m := runtime.NumGoroutine()
		settled := m == n
		n = m
		return settled, nil
	})
	return n
}

// ProbeLeaf is a no-op leaf that measures live memory on its probe item.
func ProbeLeaf(ctx context.Context, v int) (int, error) {
	p, ok := ctx.Value(probeKey{}).(*probe)
	if !ok {
		return v, nil
	}
	if v != p.at {
		if p.measuring.Load() {
			<-p.resume // hold still while the probe measures
		}
		return v, nil
	}
	p.measuring.Store(true)
	defer close(p.resume)
	p.live.Store(liveHeap())
	p.goroutines.Store(int64(runtime.NumGoroutine()))
	return v, nil
}

// CountItems is a reducer that keeps nothing but a count.
func CountItems(_ context.Context, acc, _ int) (int, error) { return acc + 1, nil }

// naturals yields 0..n-1 without materializing a slice.
func naturals(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// midRunLive runs a map of items no-op items admitted lazily from an
// iterator (so no input slice exists) and returns the heap bytes live when
// the middle item runs, above what was live before the run, and the
// goroutines the run added. With fold, the results are folded into a
// count, so nothing proportional to the item count should remain: what is
// left is the coordinator, bounded by the window. Without fold, the
// ordered result list is retained by design: per admitted item a 16-byte
// []any slot and the boxed value, plus append's spare capacity.
func midRunLive(tb testing.TB, fold bool, items, window int) (heap uint64, goroutines int) {
	tb.Helper()
	m := sdk.MapSeq(sdk.Step(ProbeLeaf)).WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: items})
	var g *flowgraph.Node
	if fold {
		g = sdkrt.Graph(sdk.Reduce(m, CountItems, 0, sdk.FoldOptions{MaxSerializedBytes: 1 << 20,
			Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 20}}))
	} else {
		g = sdkrt.Graph(m)
	}
	if err := sdkrt.Validate(g); err != nil {
		tb.Fatal(err)
	}
	p := &probe{at: items / 2, resume: make(chan struct{})}
	ctx := context.WithValue(context.Background(), probeKey{}, p)
	baseG := settledGoroutines()
	base := liveHeap()
	out, err := local.Run(ctx, g, naturals(items), local.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if fold && out.(int) != items || !fold && len(out.([]int)) != items {
		tb.Fatalf("wrong result %T", out)
	}
	goroutines = int(p.goroutines.Load()) - baseG
	if live := p.live.Load(); live > base {
		return live - base, goroutines
	}
	return 0, goroutines
}

// BenchmarkMapLiveMemory reports the heap a running map retains (see
// midRunLive) and the goroutines it runs: live-B for a fold is the
// coordinator alone (the same at 10k and 100k items, larger with a larger
// window); live-B/item for a plain map is its ordered result list (flat
// per item whatever the item count). goroutines is the window's workers
// plus the coordinator's helpers: stacks are bounded by the window too.
func BenchmarkMapLiveMemory(b *testing.B) {
	for _, fold := range []bool{true, false} {
		for _, c := range []struct{ items, window int }{{10_000, 64}, {100_000, 64}, {10_000, 1024}, {100_000, 1024}} {
			mode := "map"
			if fold {
				mode = "fold"
			}
			b.Run(fmt.Sprintf("%s/items=%d/window=%d", mode, c.items, c.window), func(b *testing.B) {
				var peak uint64
				var goroutines int
				for b.Loop() {
					heap, g := midRunLive(b, fold, c.items, c.window)
					peak, goroutines = max(peak, heap), max(goroutines, g)
				}
				b.ReportMetric(float64(peak), "live-B")
				b.ReportMetric(float64(peak)/float64(c.items/2), "live-B/item")
				b.ReportMetric(float64(goroutines), "goroutines")
			})
		}
	}
}

// TestCoordinatorMemoryBoundedByWindow asserts what BenchmarkMapLiveMemory
// shows: with the results folded away, ten times the items does not grow
// the heap a running map retains nor its goroutines, and a plain map
// retains a flat amount per item (its ordered result list), not more per
// item as the count grows.
func TestCoordinatorMemoryBoundedByWindow(t *testing.T) {
	// Not parallel: it measures the process's live heap.
	const window = 64
	// The least of a few tries is the measurement least disturbed by the
	// test binary's own activity.
	measure := func(fold bool, items int) (uint64, int) {
		least, most := ^uint64(0), 0
		for range 5 {
			heap, g := midRunLive(t, fold, items, window)
			least, most = min(least, heap), max(most, g)
		}
		return least, most
	}
	small, gSmall := measure(true, 10_000)
	large, gLarge := measure(true, 100_000)
	t.Logf("fold, window %d: %d B live and %d goroutines at 10k items; %d B and %d at 100k", window, small, gSmall, large, gLarge)
	// 90k more items retaining even one byte each would exceed the slack.
	if large > small+small/2+64<<10 {
		t.Errorf("fold: %d B live at 100k items vs %d B at 10k: coordinator memory grows with the item count", large, small)
	}
	if gLarge > window+4 || gSmall > window+4 {
		t.Errorf("fold: %d and %d goroutines for a window of %d", gSmall, gLarge, window)
	}
	small, _ = measure(false, 10_000)
	large, _ = measure(false, 100_000)
	perSmall, perLarge := float64(small)/5_000, float64(large)/50_000
	t.Logf("map, window %d: %.1f B/item live at 10k items, %.1f B/item at 100k", window, perSmall, perLarge)
	if perLarge > perSmall*1.5+8 {
		t.Errorf("map: %.1f B/item live at 100k items vs %.1f at 10k: per-item memory grows with the item count", perLarge, perSmall)
	}
}

// Priced is a typical small record item.
type Priced struct {
	SKU   string
	Price float64
	Tags  []string
}

// Reprice is the record benchmark's leaf.
func Reprice(_ context.Context, p Priced) (Priced, error) {
	p.Price *= 1.1
	return p, nil
}

// BenchmarkCodecRoundTrip measures what the default codec round trip
// (values crossing step boundaries encoded and decoded, as on Ray) costs a
// local run: the same map of 10,000 items with it on and off (the
// sdk.WithoutCodecRoundTrip opt-out), for int items and small records.
// ns/item is wall time per item, round trip included.
func BenchmarkCodecRoundTrip(b *testing.B) {
	const items = 10_000
	ints := make([]int, items)
	recs := make([]Priced, items)
	for i := range items {
		ints[i] = i
		recs[i] = Priced{SKU: fmt.Sprint("sku-", i), Price: float64(i) / 3, Tags: []string{"a", "b"}}
	}
	limits := sdk.Limits{MaxConcurrency: 64, MaxItems: items}
	for _, c := range []struct {
		name string
		g    *flowgraph.Node
		in   any
	}{
		{"int", sdkrt.Graph(sdk.Map(sdk.Step(NoopLeaf)).WithLimits(limits)), ints},
		{"record", sdkrt.Graph(sdk.Map(sdk.Step(Reprice)).WithLimits(limits)), recs},
	} {
		for _, off := range []bool{false, true} {
			mode := "roundtrip=on"
			if off {
				mode = "roundtrip=off"
			}
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				if err := sdkrt.Validate(c.g); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := local.Run(context.Background(), c.g, c.in, local.Options{NoCodecRoundTrip: off}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/items, "ns/item")
			})
		}
	}
}
