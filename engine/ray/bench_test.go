package ray

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// NoOp is the benchmark's leaf.
func NoOp(_ context.Context, n int) (int, error) { return n, nil }

const (
	benchLeaves = 2000
	benchWindow = 64
)

var benchFlow = sdk.Map(sdk.Step(NoOp)).WithLimits(sdk.Limits{MaxConcurrency: benchWindow, MaxItems: benchLeaves})

// TestBenchRay is make bench-ray (RAYFLOW_BENCH=1): 2,000 no-op leaves with
// window 64 through rayflow and through a native Python Ray driver running
// the same windowed ray.wait loop, on the same cluster, in one run.
func TestBenchRay(t *testing.T) {
	needRay(t)
	if os.Getenv("RAYFLOW_BENCH") != "1" {
		t.Skip("a benchmark: run it with make bench-ray (RAYFLOW_BENCH=1)")
	}
	ctx := context.Background()
	in := make([]int, benchLeaves)
	for i := range in {
		in[i] = i
	}
	rayflowRound := func(n int) time.Duration {
		start := time.Now()
		out, err := Run(ctx, testEngine, benchFlow, in[:n])
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != n || out[n-1] != n-1 {
			t.Fatalf("wrong result")
		}
		return time.Since(start)
	}
	rayflowRound(200) // warm the workers and their leaf processes

	// The native driver runs in its own process, one round after each of ours.
	const rounds = 3
	cmd := exec.Command(DefaultPython(), "bench_native.py", testAddress, strconv.Itoa(benchLeaves), strconv.Itoa(benchWindow), strconv.Itoa(rounds))
	cmd.Env = append(os.Environ(), "RAY_USAGE_STATS_ENABLED=0")
	if authTokenAvailable() && os.Getenv("RAY_AUTH_MODE") == "" {
		cmd.Env = append(cmd.Env, "RAY_AUTH_MODE=token")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var rf []time.Duration
	cpu0, self0 := procCPU(testBridge.PID()), selfCPU()
	snap0 := cpuByName()
	th0 := threadCPU(testBridge.PID())
	for range rounds {
		rf = append(rf, rayflowRound(benchLeaves))
	}
	bridgeCPU, coordCPU := procCPU(testBridge.PID())-cpu0, selfCPU()-self0
	rfByName := diffCPU(snap0, cpuByName())
	thByName := diffCPU(th0, threadCPU(testBridge.PID()))
	snap1 := cpuByName()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("native driver: %v\n%s", err, stderr.String())
	}
	nByName := diffCPU(snap1, cpuByName())
	if os.Getenv("RAYFLOW_BENCH_CPU") == "1" {
		t.Logf("CPU by process name, rayflow rounds: %v", rfByName)
		t.Logf("bridge CPU by thread, rayflow rounds: %v", thByName)
		t.Logf("CPU by process name, native rounds (incl. start-up and warm-up): %v", nByName)
	}
	var native []time.Duration
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct{ Seconds float64 }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		native = append(native, time.Duration(r.Seconds*float64(time.Second)))
	}
	best := func(ds []time.Duration) time.Duration {
		b := ds[0]
		for _, d := range ds {
			b = min(b, d)
		}
		return b
	}
	rfBest, nBest := best(rf), best(native)
	tput := func(d time.Duration) float64 { return benchLeaves / d.Seconds() }

	// Overhead breakdown: a bridge round trip and a leaf-process round
	// trip, measured alone.
	const trips = 500
	start := time.Now()
	for range trips {
		if _, err := testBridge.Stats(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bridgeRTT := time.Since(start) / trips
	leafRTT := leafRoundTrip(t, trips)

	fmt.Printf("bench-ray: %d no-op leaves, window %d, %d rounds each (best shown)\n", benchLeaves, benchWindow, rounds)
	fmt.Printf("  rayflow (Go -> bridge -> Ray -> Go leaf process): %7.0f leaves/s  (%v; rounds %v)\n", tput(rfBest), rfBest.Round(time.Millisecond), rf)
	fmt.Printf("  native Python Ray driver, same ray.wait loop:     %7.0f leaves/s  (%v; rounds %v)\n", tput(nBest), nBest.Round(time.Millisecond), native)
	fmt.Printf("  ratio rayflow/native: %.2f (goal >= 0.8)\n", tput(rfBest)/tput(nBest))
	fmt.Printf("  per leaf: rayflow %v, native %v, difference %v\n", rfBest/benchLeaves, nBest/benchLeaves, (rfBest-nBest)/benchLeaves)
	fmt.Printf("  CPU per leaf: bridge process %v, Go coordinator %v\n", bridgeCPU/(rounds*benchLeaves), coordCPU/(rounds*benchLeaves))
	fmt.Printf("  parts: coordinator<->bridge round trip %v (synchronous; leaf submits are pipelined and ready events batched), Go leaf process round trip %v\n", bridgeRTT, leafRTT)
}

// leafRoundTrip measures a no-op request through a leaf process of this
// binary, outside Ray.
func leafRoundTrip(t *testing.T, n int) time.Duration {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), leafEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	r := bufio.NewReader(stdout)
	name := "github.com/rayflow/rayflow/engine/ray.NoOp"
	var total time.Duration
	for i := range n + 50 {
		start := time.Now()
		if err := writeFrame(stdin, map[string]any{"name": name, "node": "0"}, nil, []byte("7")); err != nil {
			t.Fatal(err)
		}
		f, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(f.section(0)) != "7" {
			t.Fatalf("leaf answered %q", f.section(0))
		}
		if i >= 50 {
			total += time.Since(start)
		}
	}
	return total / time.Duration(n)
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

// cpuByName sums CPU time of every process by its command name.
func cpuByName() map[string]time.Duration {
	m := map[string]time.Duration{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		name := string(b[bytes.IndexByte(b, '(')+1 : bytes.LastIndexByte(b, ')')])
		m[name] += procCPU(pid)
	}
	return m
}

func diffCPU(a, b map[string]time.Duration) map[string]time.Duration {
	d := map[string]time.Duration{}
	for k, v := range b {
		if x := v - a[k]; x > 50*time.Millisecond {
			d[k] = x
		}
	}
	return d
}

// threadCPU is the CPU time of each thread of pid, by "tid name".
func threadCPU(pid int) map[string]time.Duration {
	m := map[string]time.Duration{}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range ents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if err != nil {
			continue
		}
		name := string(b[bytes.IndexByte(b, '(')+1 : bytes.LastIndexByte(b, ')')])
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		m[e.Name()+" "+name] = time.Duration(ut+st) * 10 * time.Millisecond
	}
	return m
}
