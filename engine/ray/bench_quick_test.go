package ray

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchRayQuick is a narrow, interleaved rayflow-vs-native round for
// iterating on per-leaf cost (RAYFLOW_BENCH_QUICK="N:WINDOW[:ROUNDS]"): the
// wall-time ratio and the CPU per leaf of every process on the machine,
// grouped (coordinator, bridge, native driver, Ray workers, leaf
// processes, raylet, GCS, other), so that a change's cost is visible
// wherever it lands, even on a loaded machine.
func TestBenchRayQuick(t *testing.T) {
	needRay(t)
	spec := os.Getenv("RAYFLOW_BENCH_QUICK")
	if spec == "" {
		t.Skip("set RAYFLOW_BENCH_QUICK=N:WINDOW[:ROUNDS]")
	}
	parts := strings.Split(spec, ":")
	n, _ := strconv.Atoi(parts[0])
	window, _ := strconv.Atoi(parts[1])
	rounds := 3
	if len(parts) > 2 {
		rounds, _ = strconv.Atoi(parts[2])
	}
	f, ok := benchFlows[window]
	if !ok {
		t.Fatalf("no bench flow for window %d", window)
	}
	ctx := context.Background()
	in := make([]int, n)
	for i := range in {
		in[i] = i
	}
	if _, err := runOn(ctx, testEngine, f, in[:min(n, 200)]); err != nil {
		t.Fatal(err)
	}
	nd := startNative(t)
	defer nd.close()
	natPID := nd.cmd.Process.Pid
	var rf, nat []time.Duration
	rfCPU, natCPU := map[string]time.Duration{}, map[string]time.Duration{}
	// RAYFLOW_BENCH_QUICK_SEQ=1 runs every rayflow round, then every
	// native one: each side keeps its warm workers (no worker restarts
	// between rounds), which shows the steady per-leaf cost.
	seq := os.Getenv("RAYFLOW_BENCH_QUICK_SEQ") == "1"
	rayflowRound := func() {
		c0 := cpuByGroup(natPID)
		start := time.Now()
		out, err := runOn(ctx, testEngine, f, in)
		rf = append(rf, time.Since(start))
		if err != nil || len(out) != n {
			t.Fatal(err)
		}
		addCPU(rfCPU, c0, cpuByGroup(natPID))
	}
	nativeRound := func() {
		c0 := cpuByGroup(natPID)
		d, _ := nd.round(t, n, window)
		nat = append(nat, d)
		addCPU(natCPU, c0, cpuByGroup(natPID))
	}
	for range rounds {
		rayflowRound()
		if !seq {
			nativeRound()
		}
	}
	if seq {
		for range rounds {
			nativeRound()
		}
	}
	best := func(ds []time.Duration) float64 { return float64(n) / slices.Min(ds).Seconds() }
	fmt.Printf("quick %d leaves, window %d, load %s: rayflow %.0f/s native %.0f/s ratio %.2f (rounds rayflow %v native %v)\n",
		n, window, loadAvg(), best(rf), best(nat), best(rf)/best(nat), rf, nat)
	per := time.Duration(rounds * n)
	var keys []string
	for k := range rfCPU {
		keys = append(keys, k)
	}
	for k := range natCPU {
		if _, ok := rfCPU[k]; !ok {
			keys = append(keys, k)
		}
	}
	keys = slices.DeleteFunc(keys, func(k string) bool {
		return strings.Contains(k, "/") && (rfCPU[k]+natCPU[k])/per < 20*time.Microsecond
	})
	sort.Strings(keys)
	var rt, nt time.Duration
	for _, k := range keys {
		fmt.Printf("  cpu/leaf %-12s rayflow %6.0fµs native %6.0fµs\n", k, float64(rfCPU[k]/per)/1e3, float64(natCPU[k]/per)/1e3)
		if k != "other" && !strings.Contains(k, "/") { // other helpers' processes
			rt += rfCPU[k]
			nt += natCPU[k]
		}
	}
	fmt.Printf("  cpu/leaf %-12s rayflow %6.0fµs native %6.0fµs\n", "TOTAL-other", float64(rt/per)/1e3, float64(nt/per)/1e3)
}

func addCPU(acc, a, b map[string]time.Duration) {
	for k, v := range b {
		g, _, _ := strings.Cut(k, "/")
		if d := v - a[k]; d > 0 {
			acc[g] += d
			if os.Getenv("RAYFLOW_BENCH_PIDS") == "1" {
				acc[k] += d
			}
		}
	}
}

// cpuByGroup sums the CPU time of every process by role. On a private
// cluster (RAYFLOW_RAY_ADDRESS unset) only its own raylet, GCS and workers
// count as such; other processes (other users of the machine, a shared
// head's) are "other".
func cpuByGroup(native int) map[string]time.Duration {
	type proc struct {
		comm        string
		ppid, pgrp  int
		cpu         time.Duration
		leafProcess bool
	}
	procs := map[int]proc{}
	exe, _ := os.Executable()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+2:]))
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		l, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		procs[pid] = proc{comm: string(b[bytes.IndexByte(b, '(')+1 : i]), ppid: ppid, pgrp: pgrp,
			cpu: time.Duration(ut+st) * 10 * time.Millisecond, leafProcess: l == exe}
	}
	self, bridge := os.Getpid(), testBridge.PID()
	private := testBridge.private
	out := map[string]time.Duration{}
	for pid, p := range procs {
		g := "other"
		switch {
		case pid == self:
			g = "coordinator"
		case pid == bridge:
			g = "bridge"
		case pid == native:
			g = "native"
		case p.leafProcess && pid != self:
			g = "leafproc"
		case private && p.pgrp != bridge && (procs[p.ppid].comm != "raylet" || procs[p.ppid].pgrp != bridge):
			// not the private cluster's (its workers are the raylet's children)
		case p.comm == "raylet":
			g = "raylet"
		case p.comm == "gcs_server":
			g = "gcs"
		case strings.HasPrefix(p.comm, "ray::"):
			g = "worker"
		}
		out[g+"/"+strconv.Itoa(pid)+"/"+p.comm] += p.cpu
	}
	return out
}
