package local_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/executor/executortest"
	"github.com/rayflow/rayflow/sdk"
)

// Small is the benchmarks' small struct item.
type Small struct {
	ID    int     `json:"id"`
	Score float64 `json:"score"`
	Name  string  `json:"name"`
}

// NoopSmall is the struct benchmark leaf.
func NoopSmall(_ context.Context, v Small) (Small, error) { return v, nil }

// side runs one round of the engine (sdk.Run, the public API) and of the
// pool on the same input and returns each one's wall time and the
// engine's allocations.
func side[T any](b *testing.B, f sdk.Flow[[]T, []T], in []T, fn func(context.Context, T) (T, error), opts []sdk.RunOption) (eng, pl time.Duration, allocs uint64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	out, err := sdk.Run(context.Background(), f, in, opts...)
	eng = time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err != nil || len(out) != len(in) {
		b.Fatalf("engine: %d results, %v", len(out), err)
	}
	t0 = time.Now()
	pout, err := executortest.Pool(context.Background(), 64, in, fn)
	pl = time.Since(t0)
	if err != nil || len(pout) != len(in) {
		b.Fatalf("pool: %d results, %v", len(pout), err)
	}
	return eng, pl, m1.Mallocs - m0.Mallocs
}

// BenchmarkMapVsPool runs a 50,000-item map of no-op leaves (window 64)
// through sdk.Run and, in the same iteration, the same work through a
// bounded goroutine pool, for ints and a small struct, with the default
// codec round trip and without it. It reports each one's ns/item, the
// ratio engine/pool and the engine's allocations per item (the result
// list included).
func BenchmarkMapVsPool(b *testing.B) {
	const items, window = 50_000, 64
	ints := make([]int, items)
	smalls := make([]Small, items)
	for i := range ints {
		ints[i] = i
		smalls[i] = Small{ID: i, Score: float64(i) / 3, Name: "item"}
	}
	lim := sdk.Limits{MaxConcurrency: window, MaxItems: items}
	intFlow := sdk.Map(sdk.Step(NoopLeaf)).WithLimits(lim)
	smallFlow := sdk.Map(sdk.Step(NoopSmall)).WithLimits(lim)
	for _, rt := range []struct {
		name string
		opts []sdk.RunOption
	}{{"roundtrip=on", nil}, {"roundtrip=off", []sdk.RunOption{sdk.WithoutCodecRoundTrip()}}} {
		for _, typ := range []string{"int", "struct"} {
			b.Run(fmt.Sprintf("%s/%s", rt.name, typ), func(b *testing.B) {
				var eng, pl time.Duration
				var allocs uint64
				for b.Loop() {
					var e, p time.Duration
					var a uint64
					if typ == "int" {
						e, p, a = side(b, intFlow, ints, NoopLeaf, rt.opts)
					} else {
						e, p, a = side(b, smallFlow, smalls, NoopSmall, rt.opts)
					}
					eng, pl, allocs = eng+e, pl+p, allocs+a
				}
				n := float64(b.N) * items
				b.ReportMetric(float64(eng.Nanoseconds())/n, "engine-ns/item")
				b.ReportMetric(float64(pl.Nanoseconds())/n, "pool-ns/item")
				b.ReportMetric(float64(eng)/float64(pl), "ratio")
				b.ReportMetric(float64(allocs)/n, "engine-allocs/item")
			})
		}
	}
}
