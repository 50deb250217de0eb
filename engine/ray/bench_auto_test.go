//go:build linux

package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/sdk"
)

// threadCPU is the calling thread's CPU time (Linux
// CLOCK_THREAD_CPUTIME_ID, as Python's time.thread_time in
// bench_native.py). getrusage(RUSAGE_THREAD) would not do: it moves in
// scheduler ticks (4 ms on a 250 Hz kernel), so back-to-back burns of 2 ms
// each waited for the next tick and spent about twice the stated CPU.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
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

// autoTrace keeps the executor's automatic batching records (Debug, see
// executor.AutoBatchingUnit) of the rounds and hands every other record to
// the handler it replaced.
type autoTrace struct {
	next slog.Handler
	st   *autoTraceState
}

type autoTraceState struct {
	mu    sync.Mutex
	units []autoUnit
	long  bool
}

type autoUnit struct {
	items          int
	started, ended time.Duration
}

func (h autoTrace) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelDebug
}

func (h autoTrace) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case executor.AutoBatchingUnit:
		var u autoUnit
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "items":
				u.items = int(a.Value.Int64())
			case "started":
				u.started = a.Value.Duration()
			case "ended":
				u.ended = a.Value.Duration()
			}
			return true
		})
		h.st.mu.Lock()
		h.st.units = append(h.st.units, u)
		h.st.mu.Unlock()
		return nil
	case executor.AutoBatchingLong:
		h.st.mu.Lock()
		h.st.long = true
		h.st.mu.Unlock()
		return nil
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h autoTrace) WithAttrs(as []slog.Attr) slog.Handler {
	return autoTrace{next: h.next.WithAttrs(as), st: h.st}
}

func (h autoTrace) WithGroup(name string) slog.Handler {
	return autoTrace{next: h.next.WithGroup(name), st: h.st}
}

// take returns the summary of the units recorded since the last take:
// how many, their sizes (the first ones, the median, the largest), when
// the first one ended (the probe; or that the items were found long), and
// the tail: from the end of the unit that ended cpus-th from last (when a
// CPU had nothing left to run) to the end of the last one.
func (st *autoTraceState) take(cpus int) string {
	st.mu.Lock()
	us, long := st.units, st.long
	st.units, st.long = nil, false
	st.mu.Unlock()
	if len(us) == 0 {
		return "no units"
	}
	slices.SortFunc(us, func(a, b autoUnit) int { return int(a.started - b.started) })
	sizes := make([]int, len(us))
	ends := make([]time.Duration, len(us))
	for i, u := range us {
		sizes[i], ends[i] = u.items, u.ended
	}
	slices.Sort(ends)
	first, end := ends[0], ends[len(ends)-1]
	idle := ends[max(len(ends)-cpus, 0)]
	ramp := sizes[:min(len(sizes), 8)]
	sorted := slices.Sorted(slices.Values(sizes))
	probe := fmt.Sprintf("first unit ended at %v", first.Round(time.Millisecond))
	if long {
		probe = "long items (one per unit) before any unit ended; " + probe
	}
	return fmt.Sprintf("%d units, sizes %v… median %d, largest %d; %s; tail %v (a CPU idle before the end)",
		len(us), ramp, sorted[len(sorted)/2], sorted[len(sorted)-1], probe, (end - idle).Round(time.Millisecond))
}

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
	// The executor's automatic batching records, summed up per round.
	trace := autoTrace{next: slog.Default().Handler(), st: &autoTraceState{}}
	prev := slog.Default()
	slog.SetDefault(slog.New(trace))
	defer slog.SetDefault(prev)
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

	// Ray's workers belong to one job (driver) and the head keeps about
	// as many as it has CPUs, so the first tasks after the other driver's
	// round wait for new workers (and rayflow's for their leaf
	// processes): an untimed round of no-op leaves before each timed round
	// that follows the other driver's gives both the same start.
	warmRF := func() { round(autoNoop, 200) }
	warmNat := func() { nd.roundKind(t, 200, 64, "noop") }
	var rows []benchRow
	var noopRF, noopNat, burnRF, burnNat, longAuto, longPlain []time.Duration
	for i := range autoBenchRounds {
		warmRF()
		trace.st.take(cpus)
		noopRF = append(noopRF, round(autoNoop, autoNoopN))
		t.Logf("round %d, no-op: %v: %s", i+1, noopRF[i].Round(time.Millisecond), trace.st.take(cpus))
		warmNat()
		noopNat = append(noopNat, nd.roundKind(t, autoNoopN, autoNoopWindow, "noop"))
		warmRF()
		trace.st.take(cpus)
		burnRF = append(burnRF, round(autoBurn, autoBurnN))
		t.Logf("round %d, 2 ms: %v: %s", i+1, burnRF[i].Round(time.Millisecond), trace.st.take(cpus))
		warmNat()
		burnNat = append(burnNat, nd.roundKind(t, autoBurnN, autoBurnWindow, "burn2ms"))
		warmRF()
		trace.st.take(cpus)
		longAuto = append(longAuto, round(autoLong, autoLongN))
		t.Logf("round %d, 200 ms: %v: %s", i+1, longAuto[i].Round(time.Millisecond), trace.st.take(cpus))
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
