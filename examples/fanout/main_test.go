package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// expectedChecksum is Σ_{v<count} Σ_{n<500000} (v·n) mod 97, computed
// independently of fanoutflow.Calculate: (v·n) mod 97 is periodic in n with period
// 97, and over one period it is 0 when 97 divides v and otherwise a
// permutation of 0..96 (97 is prime), summing to 96·97/2.
func expectedChecksum(count int) int {
	const terms, p = 500_000, 97
	full, rest := terms/p, terms%p
	total := 0
	for v := range count {
		if v%p == 0 {
			continue
		}
		total += full * (p - 1) * p / 2
		for n := range rest {
			total += v * n % p
		}
	}
	return total
}

func TestChecksum(t *testing.T) {
	t.Parallel()
	const want = 455_997_196 // Σ for count 20, also computed by brute force
	if got := expectedChecksum(20); got != want {
		t.Fatalf("the closed form gives %d for count 20, the brute-force sum is %d", got, want)
	}
	for _, count := range []int{0, 1, 20} {
		got, err := sdk.Run(context.Background(), fanoutflow.Workflow, count)
		if err != nil {
			t.Fatal(err)
		}
		if w := (fanoutflow.Summary{Items: count, Checksum: expectedChecksum(count)}); got != w {
			t.Fatalf("count %d: got %+v, want %+v", count, got, w)
		}
	}
}

// mapNode returns the workflow's map node (chain child 1, node id 0.1).
func mapNode(t *testing.T) *flowgraph.Node {
	t.Helper()
	root := sdkrt.Graph(fanoutflow.Workflow)
	if root.Kind != flowgraph.KindChain || len(root.Children) != 3 || root.Children[1].Kind != flowgraph.KindMap {
		t.Fatalf("unexpected shape: want chain(step, map, step)")
	}
	return root.Children[1]
}

func TestMapLimits(t *testing.T) {
	t.Parallel()
	m := mapNode(t)
	if l := m.Map.Limits; l == nil || l.MaxConcurrency != 16 || l.MaxItems != 10_000 || l.CancelTimeout != sdk.CancelTimeoutDefault {
		t.Fatalf("limits = %+v, want window 16, max items 10,000, default cancel timeout", m.Map.Limits)
	}
	if err := sdkrt.Validate(sdkrt.Graph(fanoutflow.Workflow)); err != nil {
		t.Fatal(err)
	}
	if got := m.Children[0].Step.Resources.NumCPUs; got != 0.25 {
		t.Fatalf("calculate requests %v CPUs, want 0.25", got)
	}
}

// Noop stands in for fanoutflow.Calculate where 10,000 real calculations would be too
// slow for a unit test.
func Noop(_ context.Context, v int) (int, error) { return v, nil }

func TestMaxItemsEdge(t *testing.T) {
	t.Parallel()
	// The workflow itself, one item over the cap: the map fails before any
	// calculation runs (10,001 of them would take far longer than this test).
	_, err := sdk.Run(context.Background(), fanoutflow.Workflow, 10_001)
	var mie *sdk.MaxItemsError
	if !errors.As(err, &mie) || mie.Node != "0.1" || mie.MaxItems != 10_000 || mie.Items != 10_001 {
		t.Fatalf("count 10,001: want a MaxItemsError at node 0.1, got %v", err)
	}

	// The same limits on a cheap map: exactly at the cap runs every item.
	l := mapNode(t).Map.Limits
	cheap := sdk.Map(sdk.Step(Noop)).WithLimits(sdk.Limits{MaxConcurrency: l.MaxConcurrency, MaxItems: l.MaxItems})
	in, _ := fanoutflow.BuildItems(context.Background(), 10_000)
	got, err := sdk.Run(context.Background(), cheap, in)
	if err != nil || len(got) != 10_000 || got[9_999] != 9_999 {
		t.Fatalf("exactly 10,000 items: %d results, %v", len(got), err)
	}
	in = append(in, 10_000)
	if _, err := sdk.Run(context.Background(), cheap, in); !errors.As(err, &mie) || mie.Items != 10_001 {
		t.Fatalf("10,001 items: want a MaxItemsError, got %v", err)
	}
}

// TestMain lets TestCommand run main in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("FANOUT_RUN_MAIN") == "1" {
		os.Args = append([]string{"fanout"}, strings.Fields(os.Getenv("FANOUT_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args, last string
		fails      bool
	}{
		{"-count 3", `{"items":3,"checksum":` + strconv.Itoa(expectedChecksum(3)) + `}`, false},
		{"-count 0", `{"items":0,"checksum":0}`, false},
		{"-count 10001", "", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FANOUT_RUN_MAIN=1", "FANOUT_ARGS="+c.args)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if c.fails {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "exceed max items 10000") {
				t.Fatalf("%s: want exit 1 naming the limit, got %v, stderr %q", c.args, err, stderr.String())
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v, stderr %q", c.args, err, stderr.String())
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if last := lines[len(lines)-1]; last != c.last {
			t.Fatalf("%s: last stdout line = %q, want %q", c.args, last, c.last)
		}
	}
}
