package ray

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// Ray refuses a task or actor whose options only it checks (here a custom
// resource finer than its 0.0001 precision): the run fails at once with a
// typed *SubmitError carrying Ray's reason, for a step, a map, a batched
// map and a result-buffer actor. The failure does not wait out the map's
// CancelTimeout, the bridge keeps no handle of it, and the engine runs the
// next flow. Not parallel: it counts the bridge's handles.
func TestSubmitRefused(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	fine := map[string]float64{"rayflow_slot": 0.00001}
	res := sdk.WithResources(sdk.Resources{NumCPUs: 0.25, Custom: fine})
	l := sdk.Limits{MaxConcurrency: 4, MaxItems: 10, CancelTimeout: 30 * time.Second}
	items := revItems(5, 0, "", 0)
	cases := []struct {
		name string
		run  func() error
	}{
		{"step", func() error { _, err := runOn(ctx, testEngine, sdk.Step(Echo, res), Rev{}); return err }},
		{"map", func() error {
			_, err := runOn(ctx, testEngine, sdk.Map(sdk.Step(Echo, res)).WithLimits(l), items)
			return err
		}},
		{"batched map", func() error {
			_, err := runOn(ctx, testEngine, sdk.Map(sdk.Step(Echo, res)).WithLimits(l).WithItemBatching(2), items)
			return err
		}},
		{"result buffer", func() error {
			f := sdk.Then(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l).WithResultBuffer(sdk.ResultBuffer{MaxSerializedBytes: 1 << 20,
				Actor: sdk.ActorOptions{NumCPUs: 0.01, Memory: 64 << 20, Resources: fine}}), sdk.Step(Count))
			_, err := runOn(ctx, testEngine, f, items)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := c.run()
			elapsed := time.Since(start)
			var se *TaskError
			if !errors.As(err, &se) || se.Kind != "submit" || se.Node == "" || se.Type != "ValueError" || !strings.Contains(se.Message, "precision") {
				t.Fatalf("want a submit *TaskError naming the node with Ray's reason, got %T %v", err, err)
			}
			if errors.Is(err, ErrBridgeClosed) {
				t.Fatalf("a refused submission reads as a closed bridge: %v", err)
			}
			// Waiting for the refused handles would take the 30 s CancelTimeout.
			if elapsed > 10*time.Second {
				t.Fatalf("the refused run failed after %v", elapsed)
			}
			if st, err := testBridge.Stats(ctx); err != nil || st.Handles != 0 || st.Failed != 0 {
				t.Fatalf("the bridge still holds %d handles and %d failed ones (%v)", st.Handles, st.Failed, err)
			}
			t.Logf("%v after %v", err, elapsed)
		})
	}
	if out, err := runOn(ctx, testEngine, sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l), items); err != nil || len(out) != len(items) {
		t.Fatalf("the engine after the refusals: %d results, %v", len(out), err)
	}
}
