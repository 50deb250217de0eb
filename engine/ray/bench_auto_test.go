//go:build linux

package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// threadCPU is the calling thread's CPU time (Linux RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// burnCPU spends d of its thread's CPU time (bench_native.py's _burn).
func burnCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	end := threadCPU() + d
	x := 0
	for threadCPU() < end {
		for i := range 2000 {
			x += i
		}
	}
	burnSink = x
}

var burnSink int

// Burn2ms and Burn200ms are the automatic batching benchmark's leaves:
// 2 ms and 200 ms of CPU each.
func Burn2ms(_ context.Context, n int) (int, error) { burnCPU(2 * time.Millisecond); return n, nil }
func Burn200ms(_ context.Context, n int) (int, error) {
	burnCPU(200 * time.Millisecond)
	return n, nil
}

const (
	autoNoopN, autoNoopWindow = 20000, 256
	autoBurnN, autoBurnWindow = 2000, 256
	autoLongN, autoLongWindow = 24, 64
	autoBenchRounds           = 3
	// The goals: throughput over the native driver's, and the 200 ms
	// leaves' wall over rayflow unbatched.
	autoGoalNoop, autoGoalBurn, autoGoalLong = 10.0, 1.7, 1.05
)

var (
	autoLimits = func(w int) sdk.Limits { return sdk.Limits{MaxConcurrency: w, MaxItems: benchMaxItems} }
	autoNoop   = sdk.Map(sdk.Step(NoOp)).WithLimits(autoLimits(autoNoopWindow)).WithAutoBatching(sdk.MaxItemsPerTask)
	autoBurn   = sdk.Map(sdk.Step(Burn2ms)).WithLimits(autoLimits(autoBurnWindow)).WithAutoBatching(sdk.MaxItemsPerTask)
	autoLong   = sdk.Map(sdk.Step(Burn200ms)).WithLimits(autoLimits(autoLongWindow)).WithAutoBatching(sdk.MaxItemsPerTask)
	plainLong  = sdk.Map(sdk.Step(Burn200ms)).WithLimits(autoLimits(autoLongWindow))
)

// roundKind runs n leaves of one kind (bench_native.py's LEAF) with the
// window and returns the wall time.
func (d *nativeDriver) roundKind(t *testing.T, n, window int, leaf string) time.Duration {
	fmt.Fprintf(d.in, "%d %d %s\n", n, window, leaf)
	if !d.out.Scan() {
		t.Fatalf("native driver ended: %v", d.out.Err())
	}
	var r struct{ Seconds float64 }
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return time.Duration(r.Seconds * float64(time.Second))
}

// TestBenchRayAuto is make bench-ray's automatic batching table
// (RAYFLOW_BENCH=1; WithAutoBatching(MaxItemsPerTask)), one run on one
// head, rounds interleaved, best of 3: 20,000 no-op leaves against the
// native driver's one task per item (goal ≥ 10×); 2,000 leaves of 2 ms CPU
// against the native driver's (goal ≥ 1.7×); 24 leaves of 200 ms CPU
// against rayflow unbatched (goal wall ≤ 1.05×, every core busy: the
// busy-core figure is leaf CPU over wall).
func TestBenchRayAuto(t *testing.T) {
	needRay(t)
	if os.Getenv("RAYFLOW_BENCH") != "1" {
		t.Skip("a benchmark: run it with make bench-ray (RAYFLOW_BENCH=1)")
	}
	ctx := context.Background()
	in := make([]int, benchMaxItems)
	for i := range in {
		in[i] = i
	}
	load0 := loadAvg()
	best := func(ds []time.Duration) time.Duration { return slices.Min(ds) }
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	round := func(f sdk.Flow[[]int, []int], n int) time.Duration {
		start := time.Now()
		out, err := runOn(ctx, testEngine, f, in[:n])
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != n || out[n-1] != n-1 {
			t.Fatal("wrong result")
		}
		return d
	}
	// Warm the workers and their leaf processes.
	round(autoNoop, 500)
	round(benchFlows[64], 200)
	nd := startNative(t)
	defer nd.close()
	cpus := (&runner{e: testEngine}).taskCost().CPUs

	var rows []benchRow
	var noopRF, noopNat, burnRF, burnNat, longAuto, longPlain []time.Duration
	for range autoBenchRounds {
		noopRF = append(noopRF, round(autoNoop, autoNoopN))
		noopNat = append(noopNat, nd.roundKind(t, autoNoopN, autoNoopWindow, "noop"))
		burnRF = append(burnRF, round(autoBurn, autoBurnN))
		burnNat = append(burnNat, nd.roundKind(t, autoBurnN, autoBurnWindow, "burn2ms"))
		longAuto = append(longAuto, round(autoLong, autoLongN))
		longPlain = append(longPlain, round(plainLong, autoLongN))
	}
	t.Logf("no-op rounds: auto %v, native %v", noopRF, noopNat)
	t.Logf("2 ms rounds: auto %v, native %v", burnRF, burnNat)
	t.Logf("200 ms rounds: auto %v, unbatched %v", longAuto, longPlain)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}

	r, nt := rate(autoNoopN, best(noopRF)), rate(autoNoopN, best(noopNat))
	rows = append(rows, benchRow{fmt.Sprintf("auto, no-op, %d items, window %d", autoNoopN, autoNoopWindow),
		fmt.Sprintf("%6.0f items/s", r), fmt.Sprintf("%6.0f items/s (one task each)", nt), fmt.Sprintf("%.2f", r/nt),
		fmt.Sprintf(">= %.1f (%s)", autoGoalNoop, verdict(r/nt >= autoGoalNoop))})
	r, nt = rate(autoBurnN, best(burnRF)), rate(autoBurnN, best(burnNat))
	rows = append(rows, benchRow{fmt.Sprintf("auto, 2 ms CPU, %d items, window %d", autoBurnN, autoBurnWindow),
		fmt.Sprintf("%6.0f items/s", r), fmt.Sprintf("%6.0f items/s (one task each)", nt), fmt.Sprintf("%.2f", r/nt),
		fmt.Sprintf(">= %.1f (%s)", autoGoalBurn, verdict(r/nt >= autoGoalBurn))})
	a, p := best(longAuto), best(longPlain)
	busy := float64(autoLongN) * 0.2 / a.Seconds()
	rows = append(rows, benchRow{fmt.Sprintf("auto, 200 ms CPU, %d items, window %d", autoLongN, autoLongWindow),
		fmt.Sprintf("%v, %.2f of %d cores", a.Round(time.Millisecond), busy, cpus),
		fmt.Sprintf("%v (rayflow unbatched)", p.Round(time.Millisecond)), fmt.Sprintf("%.2f", a.Seconds()/p.Seconds()),
		fmt.Sprintf("wall <= %.2f (%s)", autoGoalLong, verdict(a.Seconds()/p.Seconds() <= autoGoalLong))})

	fmt.Printf("\nbench-ray (automatic batching): one run on %s (%d CPUs); best of %d interleaved rounds; load average %s (start) / %s (end)\n",
		testAddress, cpus, autoBenchRounds, load0, loadAvg())
	fmt.Printf("%-44s %-32s %-44s %-6s %s\n", "case", "rayflow", "baseline", "ratio", "goal")
	for _, r := range rows {
		fmt.Printf("%-44s %-32s %-44s %-6s %s\n", r.name, r.rayflow, r.native, r.ratio, r.goal)
	}
}
