package ray

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/sdk"
)

// NoOp is the benchmark's leaf.
func NoOp(_ context.Context, n int) (int, error) { return n, nil }

// Stamp is the first-leaf benchmark's leaf: the wall clock when it starts.
func Stamp(_ context.Context, _ int) (int64, error) { return time.Now().UnixNano(), nil }

// CountAll ends the heap benchmark's flow, so that its output is one number
// and the coordinator's heap shows only its own bookkeeping.
func CountAll(_ context.Context, xs []int) (int, error) { return len(xs), nil }

var (
	stampFlow = sdk.Step(Stamp)
	// benchFlows are the unbatched maps by window.
	benchFlows = map[int]sdk.Flow[[]int, []int]{}
	// heapFlows are map-then-count flows by window over a generated
	// sequence, so that the heap measured is the coordinator's bookkeeping
	// and not a copy of an n-item input slice (which is the caller's data
	// and O(n) by definition).
	heapFlows = map[int]sdk.Flow[iter.Seq[int], int]{}
)

const benchMaxItems = 20000

func init() {
	for _, w := range []int{64, 256} {
		benchFlows[w] = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: w, MaxItems: benchMaxItems})
		heapFlows[w] = sdk.Then(sdk.MapSeq(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: w, MaxItems: benchMaxItems}), sdk.Step(CountAll))
	}
}

// nativeDriver is bench_native.py serving rounds on stdin, connected once.
type nativeDriver struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func nativeEnv() []string {
	env := append(os.Environ(), "RAY_USAGE_STATS_ENABLED=0")
	if authTokenAvailable() && os.Getenv("RAY_AUTH_MODE") == "" {
		env = append(env, "RAY_AUTH_MODE=token")
	}
	if testBridge != nil && testBridge.private {
		// The package's private cluster listens on the loopback only (its
		// bridge runs with Ray's multi-node switch off): a driver without
		// the switch would wait for a raylet on the machine's address.
		env = append(env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0")
	}
	return env
}

func startNative(t *testing.T) *nativeDriver {
	cmd := exec.Command(rayenv.Python(), "bench_native.py", "serve", testAddress)
	cmd.Env = nativeEnv()
	cmd.Stderr = io.Discard
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &nativeDriver{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if !d.out.Scan() {
		t.Fatal("native driver: no ready line")
	}
	return d
}

// round runs n no-op tasks with the window and returns the wall time and
// the driver's CPU time.
func (d *nativeDriver) round(t *testing.T, n, window int) (time.Duration, time.Duration) {
	fmt.Fprintf(d.in, "%d %d\n", n, window)
	if !d.out.Scan() {
		t.Fatalf("native driver ended: %v", d.out.Err())
	}
	var r struct{ Seconds, CPU float64 }
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return time.Duration(r.Seconds * float64(time.Second)), time.Duration(r.CPU * float64(time.Second))
}

func (d *nativeDriver) close() {
	d.in.Close()
	_ = d.cmd.Wait()
}

// benchRow is one line of the table.
type benchRow struct {
	name, rayflow, native, ratio, goal string
}

// TestBenchRay is make bench-ray (RAYFLOW_BENCH=1): one table from one run
// on one head, rayflow against a native Python Ray driver running the same
// windowed ray.wait loop, rounds interleaved (rayflow, rayflow with its
// leaves in a leaf library, native, rayflow, ...), best of 3: unbatched
// no-op maps of 2,000 and 20,000 leaves with windows 64 and 256; item batching K = 16 and 64 against native
// unbatched; the time from Run to the first leaf starting on a running
// head; the coordinator's heap after GC at 2,000 and 20,000 leaves.
func TestBenchRay(t *testing.T) {
	needRay(t)
	if os.Getenv("RAYFLOW_BENCH") != "1" {
		t.Skip("a benchmark: run it with make bench-ray (RAYFLOW_BENCH=1)")
	}
	ctx := context.Background()
	const rounds = 3
	in := make([]int, benchMaxItems)
	for i := range in {
		in[i] = i
	}
	load0 := loadAvg()
	var rows []benchRow
	best := func(ds []time.Duration) time.Duration { return slices.Min(ds) }
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

	// The same unbatched maps with leaves in the workers' own processes
	// (Options.LeafLibrary: this test binary built as the library), whose
	// plans need a build revision.
	t.Setenv(buildid.EnvBuildRevision, "bench-ray")
	libEngine, err := New(ctx, Options{Address: testAddress, Stderr: io.Discard, LeafLibrary: buildLeafLibrary(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer libEngine.Close()
	libBridge := libEngine.bridgeRuntime().(*rayBridge)

	// Warm the workers and their leaf processes.
	for _, e := range []*Engine{testEngine, libEngine} {
		if _, err := runOn(ctx, e, benchFlows[64], in[:200]); err != nil {
			t.Fatal(err)
		}
	}
	nd := startNative(t)
	defer nd.close()

	roundOn := func(e *Engine, b *rayBridge, f sdk.Flow[[]int, []int], n int) (time.Duration, time.Duration, time.Duration) {
		b0, c0 := procCPU(b.PID()), selfCPU()
		start := time.Now()
		out, err := runOn(ctx, e, f, in[:n])
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != n || out[n-1] != n-1 {
			t.Fatalf("wrong result")
		}
		return d, procCPU(b.PID()) - b0, selfCPU() - c0
	}
	rayflowRound := func(f sdk.Flow[[]int, []int], n int) (time.Duration, time.Duration, time.Duration) {
		return roundOn(testEngine, testBridge, f, n)
	}
	var cpuLine string
	nativeBest := map[[2]int]time.Duration{}
	for _, c := range []struct{ n, window int }{{2000, 64}, {2000, 256}, {20000, 64}, {20000, 256}} {
		var rf, rfLib, nat []time.Duration
		var bridgeCPU, coordCPU, natCPU time.Duration
		for range rounds {
			d, b, co := rayflowRound(benchFlows[c.window], c.n)
			rf = append(rf, d)
			bridgeCPU, coordCPU = bridgeCPU+b, coordCPU+co
			d, _, _ = roundOn(libEngine, libBridge, benchFlows[c.window], c.n)
			rfLib = append(rfLib, d)
			nd2, ncpu := nd.round(t, c.n, c.window)
			nat = append(nat, nd2)
			natCPU += ncpu
		}
		nativeBest[[2]int{c.n, c.window}] = best(nat)
		r, nt := rate(c.n, best(rf)), rate(c.n, best(nat))
		rl := rate(c.n, best(rfLib))
		rows = append(rows, benchRow{fmt.Sprintf("unbatched %d leaves, window %d", c.n, c.window),
			fmt.Sprintf("%6.0f leaves/s", r), fmt.Sprintf("%6.0f leaves/s", nt), fmt.Sprintf("%.2f", r/nt), ">= 1.0"},
			benchRow{"  the same, leaf library (in process)", fmt.Sprintf("%6.0f leaves/s", rl), fmt.Sprintf("%6.0f leaves/s", nt), fmt.Sprintf("%.2f", rl/nt), ">= 1.0"})
		t.Logf("%d/%d rounds: rayflow %v, leaf library %v, native %v", c.n, c.window, rf, rfLib, nat)
		if c.n == 2000 && c.window == 64 {
			per := time.Duration(rounds * c.n)
			cpuLine = fmt.Sprintf("CPU per leaf (2,000, window 64): bridge %v + coordinator %v; native driver %v",
				(bridgeCPU / per).Round(time.Microsecond), (coordCPU / per).Round(time.Microsecond), (natCPU / per).Round(time.Microsecond))
		}
	}

	// Item batching: K items per task, against native unbatched at the
	// same size and window.
	const batchN, batchWindow = 20000, 256
	for _, k := range []int{16, 64} {
		name := fmt.Sprintf("batched K=%d, %d items, window %d", k, batchN, batchWindow)
		f, ok := batchedFlow(k, batchWindow)
		if !ok {
			rows = append(rows, benchRow{name, "n/a", "(item batching not wired yet)", "n/a", ">= 5.0 (K=64)"})
			continue
		}
		var rf []time.Duration
		for range rounds {
			d, _, _ := rayflowRound(f, batchN)
			rf = append(rf, d)
		}
		nt := rate(batchN, nativeBest[[2]int{batchN, batchWindow}])
		r := rate(batchN, best(rf))
		goal := ""
		if k == 64 {
			goal = ">= 5.0"
		}
		rows = append(rows, benchRow{name, fmt.Sprintf("%6.0f items/s", r), fmt.Sprintf("%6.0f items/s (unbatched)", nt), fmt.Sprintf("%.2f", r/nt), goal})
		t.Logf("K=%d rounds: %v", k, rf)
	}

	// First leaf on a running head: a fresh engine (bridge start, import
	// ray, ray.init) then Run, against a fresh native driver (ray.init and
	// one task), interleaved.
	var rfFirst, rfRunOnly, natFirst, natExec []time.Duration
	for range rounds {
		total, run := firstLeaf(t)
		rfFirst, rfRunOnly = append(rfFirst, total), append(rfRunOnly, run)
		n, ne := nativeFirst(t)
		natFirst, natExec = append(natFirst, n), append(natExec, ne)
	}
	// (a) the definition: from Run, on an engine New has made
	// (connected and warmed), against a fresh native driver's ray.init and
	// first task; (b) like for like from the start: New+Run (the bridge's
	// interpreter start, import ray, ray.init, the warm-up) against the
	// native driver from its interpreter's exec.
	rows = append(rows, benchRow{"first leaf (a): Run alone vs ray.init+task",
		fmt.Sprintf("%v (Run alone)", best(rfRunOnly).Round(time.Millisecond)),
		fmt.Sprintf("%v (ray.init+task)", best(natFirst).Round(time.Millisecond)),
		fmt.Sprintf("%.2f", best(rfRunOnly).Seconds()/best(natFirst).Seconds()), "<= 1.2"})
	rows = append(rows, benchRow{"first leaf (b): New+Run vs exec+init+task",
		fmt.Sprintf("%v (New+Run)", best(rfFirst).Round(time.Millisecond)),
		fmt.Sprintf("%v (from interpreter exec)", best(natExec).Round(time.Millisecond)),
		fmt.Sprintf("%.2f", best(rfFirst).Seconds()/best(natExec).Seconds()), "<= 1.2"})
	t.Logf("first leaf: rayflow %v (Run alone %v), native %v (from exec %v)", rfFirst, rfRunOnly, natFirst, natExec)

	// Coordinator heap after GC, map then count (window 256).
	// One warm-up run first: the first run on an engine also allocates
	// what every run shares (codec caches, the bridge's buffers).
	heapDuring(t, 2000, in)
	h2k, h20k := heapDuring(t, 2000, in), heapDuring(t, 20000, in)
	for _, q := range []struct {
		name string
		v    func(heapStats) uint64
		goal string
	}{
		{"median", func(h heapStats) uint64 { return h.median }, "flat (~1.0)"},
		{"90th percentile", func(h heapStats) uint64 { return h.p90 }, "flat (~1.0)"},
		{"largest", func(h heapStats) uint64 { return h.largest }, ""},
	} {
		a, b := q.v(h2k), q.v(h20k)
		rows = append(rows, benchRow{"coordinator live heap after GC, " + q.name,
			fmt.Sprintf("2,000: %s", mib(a)), fmt.Sprintf("20,000: %s", mib(b)), fmt.Sprintf("%.2f", float64(b)/float64(max(a, 1))), q.goal})
	}
	t.Logf("heap samples: %d at 2,000, %d at 20,000", h2k.samples, h20k.samples)

	fmt.Printf("\nbench-ray: one run on %s; best of %d interleaved rounds; load average %s (start) / %s (end)\n", testAddress, rounds, load0, loadAvg())
	fmt.Printf("%-44s %-32s %-44s %-6s %s\n", "case", "rayflow", "native Python Ray driver", "ratio", "goal")
	for _, r := range rows {
		fmt.Printf("%-44s %-32s %-44s %-6s %s\n", r.name, r.rayflow, r.native, r.ratio, r.goal)
	}
	fmt.Println(cpuLine)
}

// firstLeaf starts a fresh engine on the test cluster and runs one leaf:
// the time from before New, and from Run, to the leaf's start.
func firstLeaf(t *testing.T) (total, run time.Duration) {
	ctx := context.Background()
	t0 := time.Now()
	e, err := New(ctx, Options{Address: testAddress, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t1 := time.Now()
	ns, err := runOn(ctx, e, stampFlow, 0)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Unix(0, ns)
	return started.Sub(t0), started.Sub(t1)
}

// nativeFirst runs bench_native.py first: ray.init + one task, and from
// the interpreter's start.
func nativeFirst(t *testing.T) (initToTask, execToTask time.Duration) {
	cmd := exec.Command(rayenv.Python(), "bench_native.py", "first", testAddress, strconv.FormatInt(time.Now().UnixNano(), 10))
	cmd.Env = nativeEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("native first task: %v", err)
	}
	var r struct {
		Init float64 `json:"init_to_task"`
		Exec float64 `json:"exec_to_task"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return time.Duration(r.Init * float64(time.Second)), time.Duration(r.Exec * float64(time.Second))
}

// heapDuring runs a map of n no-op leaves (over a sequence of the first n
// of in) then a count, samples the live heap after a forced GC every
// 50 ms during the run, and returns the samples' median, 90th percentile
// and largest value above the heap before the run. The median and the
// 90th percentile are the coordinator's steady bookkeeping; the largest
// value also catches whatever transient buffer a sample happened to land
// on (a frame being encoded), and the largest of a longer run's many
// more samples is drawn further out in the same distribution.
func heapDuring(t *testing.T, n int, in []int) heapStats {
	base := heapAfterGC()
	stop := make(chan struct{})
	samples := make(chan []uint64)
	go func() {
		var s []uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				samples <- s
				return
			case <-tick.C:
				s = append(s, heapAfterGC())
			}
		}
	}()
	got, err := runOn(context.Background(), testEngine, heapFlows[256], slices.Values(in[:n]))
	close(stop)
	s := <-samples
	if err != nil || got != n {
		t.Fatalf("heap run: %v, %d", err, got)
	}
	if len(s) == 0 {
		return heapStats{}
	}
	above := func(v uint64) uint64 { return v - min(v, base) }
	slices.Sort(s)
	return heapStats{median: above(s[len(s)/2]), p90: above(s[len(s)*9/10]), largest: above(s[len(s)-1]), samples: len(s)}
}

type heapStats struct {
	median, p90, largest uint64
	samples              int
}

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// loadAvg is the 1-minute load average (Linux), "?" elsewhere.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// procCPU is a process's user+system CPU time (Linux /proc).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}

func selfCPU() time.Duration { return procCPU(os.Getpid()) }
