package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	"github.com/rayflow/rayflow/internal/syncbuf"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out bytes.Buffer
	var errb syncbuf.Buffer // the Ray engine copies its processes' stderr into it concurrently
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// checkRun checks a successful run's output: the result and the counts.
func checkRun(t *testing.T, code int, out, errs string, items int, seed string) {
	t.Helper()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res orderflow.Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil || res.Items != items || !res.Fulfilled {
		t.Fatalf("result %q: %v", out, err)
	}
	want := "topology: 21 nodes, 28 edges, 12 longest-path layers (the seed's counts, one node per map item: " + seed + ")"
	if !strings.Contains(errs, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errs)
	}
}

func TestLocal(t *testing.T) {
	t.Parallel()
	code, out, errs := runCmd(t, "-items", "3", "-work", "0")
	checkRun(t, code, out, errs, 3, "25 nodes, 36 edges")
	code, out, errs = runCmd(t, "-items", "1", "-work", "1ms")
	checkRun(t, code, out, errs, 1, "21 nodes, 28 edges")
}

func TestLocalFailure(t *testing.T) {
	t.Parallel()
	code, _, errs := runCmd(t, "-items", "1", "-work", "0", "-failure-stage", "reserve_inventory")
	if code != 1 || !strings.Contains(errs, "failed: 0.5 (reserve_items)") || !strings.Contains(errs, "reserve_inventory item 0 failed") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-items", "0"}, {"-items", "101"}, {"-work", "6s"}, {"-failure-stage", "x"}, {"extra"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestOnRay runs the showcase on the shared Ray cluster (make ray-up).
func TestOnRay(t *testing.T) {
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if testing.Short() || addr == "" {
		t.Skip("needs Ray (RAYFLOW_RAY_ADDRESS) and not -short")
	}
	code, out, errs := runCmd(t, "-items", "3", "-work", "10ms", "-ray", addr)
	checkRun(t, code, out, errs, 3, "25 nodes, 36 edges")
}

func TestMain(m *testing.M) {
	rayengine.ServeLeafIfRequested() // this test binary is the Ray leaf of TestOnRay
	os.Exit(m.Run())
}
