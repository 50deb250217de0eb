package ray

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/sdk"
)

// DeviceView is what a leaf sees of the accelerators Ray gave its task.
type DeviceView struct {
	Devices string `json:"devices"` // CUDA_VISIBLE_DEVICES
	Set     bool   `json:"set"`     // whether it is set at all
	PID     int    `json:"pid"`     // the leaf process
	Leaf    string `json:"leaf"`    // "1" in a leaf process, "" in a leaf library
	Neuron  string `json:"neuron"`  // NEURON_RT_VISIBLE_CORES
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
}

// Devices reports the leaf's view of CUDA_VISIBLE_DEVICES, after sleeping
// sleepMS (so that map items overlap).
func Devices(ctx context.Context, sleepMS int) (DeviceView, error) {
	start := time.Now()
	select {
	case <-time.After(time.Duration(sleepMS) * time.Millisecond):
	case <-ctx.Done():
		return DeviceView{}, ctx.Err()
	}
	v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	return DeviceView{Devices: v, Set: set, PID: os.Getpid(), Leaf: os.Getenv(leafEnv), Neuron: os.Getenv("NEURON_RT_VISIBLE_CORES"), Start: start.UnixNano(), End: time.Now().UnixNano()}, nil
}

func gpus(n float64) sdk.StepOption {
	return sdk.WithResources(sdk.Resources{NumCPUs: 0.25, NumGPUs: n})
}

var (
	cpuDevices = sdk.Step(Devices, quarter)
	oneGPU     = sdk.Step(Devices, gpus(1))
	twoGPUs    = sdk.Step(Devices, gpus(2))
	// neuron_cores is one of Ray's accelerators, asked for as a custom
	// resource (NEURON_RT_VISIBLE_CORES).
	oneNeuronCore = sdk.Step(Devices, sdk.WithResources(sdk.Resources{NumCPUs: 0.25, Custom: map[string]float64{"neuron_cores": 1}}))
	oneGPUItems   = sdk.Map(sdk.Step(Devices, gpus(1))).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100})
	// Two batches of two items at once, each batch holding one GPU.
	oneGPUBatches = sdk.Map(sdk.Step(Devices, gpus(1))).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100}).WithItemBatching(2)
)

// Ray sets CUDA_VISIBLE_DEVICES (and the other accelerators' variables)
// in the worker for each task that holds accelerators, and restores it
// after. A leaf runs in a child process of the worker, which sees the
// environment it started with: a leaf that holds accelerators therefore
// runs in a leaf process of its own, started for its task and ended
// after it (Ray's own default for GPU tasks ends the worker, max_calls=1),
// so it sees exactly the devices Ray assigned and frees them. The head
// advertises two GPUs that do not exist: Ray assigns their ids all the
// same.
func TestAcceleratorLeavesSeeTheirDevices(t *testing.T) {
	needRay(t)
	head := startPrivateHead(t, "--num-gpus=2", `--resources={"neuron_cores": 2}`)
	t.Run("leaf processes", func(t *testing.T) { checkDevices(t, head.addr, "") })
	// Leaves that hold accelerators do not run in the library, which lives
	// in the worker's process: they get a leaf process of their own too.
	t.Run("leaf library", func(t *testing.T) {
		lib := buildLeafLibrary(t)
		t.Setenv(buildid.EnvBuildRevision, "accelerator-test") // the test vouches for both builds
		checkDevices(t, head.addr, lib)
	})
}

func checkDevices(t *testing.T, addr, lib string) {
	ctx := context.Background()
	e, err := New(ctx, Options{Address: addr, Stderr: logWriter(), LeafLibrary: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	accPIDs := map[int]bool{}
	cpuPIDs := map[int]bool{}
	oneOfTwo := func(ids []string) bool { return len(ids) == 1 && (ids[0] == "0" || ids[0] == "1") }
	// The warm-up's worker and leaf process came first; Ray may lease an
	// idle worker to any task.
	for round := range 3 {
		for _, c := range []struct {
			name string
			f    sdk.Flow[int, DeviceView]
			ok   func(v DeviceView) bool // what the leaf sees
		}{
			{"cpu", cpuDevices, func(v DeviceView) bool { return !v.Set && v.Neuron == "" }},
			{"one GPU", oneGPU, func(v DeviceView) bool { return oneOfTwo(deviceIDs(v.Devices)) && v.Neuron == "" }},
			{"cpu", cpuDevices, func(v DeviceView) bool { return !v.Set && v.Neuron == "" }},
			{"two GPUs", twoGPUs, func(v DeviceView) bool { return slices.Equal(deviceIDs(v.Devices), []string{"0", "1"}) }},
			{"one neuron core", oneNeuronCore, func(v DeviceView) bool { return !v.Set && oneOfTwo(deviceIDs(v.Neuron)) }},
		} {
			// Without progress, so that a CPU step runs in the library
			// (a step reporting progress live keeps the leaf process).
			v, err := runOn(ctx, e, c.f, 0, pol(common.ReportingPolicyDisabled))
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, c.name, err)
			}
			if !c.ok(v) {
				t.Errorf("round %d, %s leaf: CUDA_VISIBLE_DEVICES=%q (set %v), NEURON_RT_VISIBLE_CORES=%q: not the devices Ray assigned", round, c.name, v.Devices, v.Set, v.Neuron)
			}
			if c.name == "cpu" {
				if want := map[bool]string{true: "", false: "1"}[lib != ""]; v.Leaf != want {
					t.Errorf("round %d, cpu leaf: leaf mode %q, want %q", round, v.Leaf, want)
				}
				cpuPIDs[v.PID] = true
				continue
			}
			if v.Leaf != "1" {
				t.Errorf("round %d, %s leaf ran in the leaf library, want a leaf process", round, c.name)
			}
			if accPIDs[v.PID] || cpuPIDs[v.PID] {
				t.Errorf("round %d, %s leaf ran in leaf process %d, which ran an earlier leaf", round, c.name, v.PID)
			}
			accPIDs[v.PID] = true
		}
	}

	// Items (and batches) that run at once hold different GPUs.
	for _, c := range []struct {
		name string
		f    sdk.Flow[[]int, []DeviceView]
	}{{"items", oneGPUItems}, {"batches", oneGPUBatches}} {
		vs, err := runOn(ctx, e, c.f, []int{400, 400, 400, 400, 400, 400, 400, 400})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		overlaps := 0
		for i, a := range vs {
			if len(deviceIDs(a.Devices)) != 1 || a.Leaf != "1" {
				t.Fatalf("%s: item %d saw CUDA_VISIBLE_DEVICES=%q in leaf mode %q, want one GPU in a leaf process", c.name, i, a.Devices, a.Leaf)
			}
			for j, b := range vs[:i] {
				if a.Start < b.End && b.Start < a.End {
					overlaps++
					if a.Devices == b.Devices {
						t.Errorf("%s: items %d and %d ran at once and both saw GPU %s", c.name, j, i, a.Devices)
					}
				}
			}
		}
		t.Logf("%s: %d pairs of items ran at once", c.name, overlaps)
	}
}

// deviceIDs are the sorted ids of a visible-devices variable's value.
func deviceIDs(v string) []string {
	if v == "" {
		return nil
	}
	s := strings.Split(v, ",")
	slices.Sort(s)
	return s
}
