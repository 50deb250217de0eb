package ray

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/sdk"
)

// TestDirectSubmission: after the first task of a prepared remote function
// (one option set), the bridge submits leaves straight through Ray's core
// worker with the arguments .remote() computed for that first task
// (bridge.py _Prepared). A map's results, its options (num_cpus 0.25 here)
// and a failing item's typed error are the same as with .remote() for
// every task (RAYFLOW_RAY_DIRECT_SUBMIT=0, on a second engine).
func TestDirectSubmission(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	flow := mapFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
	ok, failing := JobsSpec{N: 40, FailAt: -1}, JobsSpec{N: 40, FailAt: 25}

	run := func(e *Engine) (out []int, err error) {
		if out, err = runOn(ctx, e, flow, ok); err != nil {
			t.Fatal(err)
		}
		_, err = runOn(ctx, e, flow, failing)
		return out, err
	}
	before, err := testBridge.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, failure := run(testEngine)
	after, err := testBridge.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each option set's first task goes through .remote(), at most once
	// per bridge; the second run stops submitting at its failure.
	if n := after.DirectSubmits - before.DirectSubmits; n < ok.N-1 {
		t.Fatalf("%d of the first run's %d leaves were submitted directly; want all but the first at most", n, ok.N)
	}

	t.Setenv("RAYFLOW_RAY_DIRECT_SUBMIT", "0")
	e, err := New(ctx, Options{Address: testAddress, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	outRemote, failureRemote := run(e)
	if st, err := e.rt.(*rayBridge).Stats(ctx); err != nil || st.DirectSubmits != 0 {
		t.Fatalf("with RAYFLOW_RAY_DIRECT_SUBMIT=0: %d direct submissions (%v)", st.DirectSubmits, err)
	}
	if diff := cmp.Diff(outRemote, out); diff != "" {
		t.Fatalf("results differ (-.remote() +direct):\n%s", diff)
	}
	var jf, jfRemote *JobFailure
	if !errors.As(failure, &jf) || !errors.As(failureRemote, &jfRemote) || *jf != *jfRemote || jf.Item != failing.FailAt {
		t.Fatalf("failures differ: direct %v, .remote() %v", failure, failureRemote)
	}
}
