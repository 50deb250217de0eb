package sdkrt_test

import (
	"context"
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

func Twice(_ context.Context, v int) (int, error) { return 2 * v, nil }

var twice = sdk.Step(Twice)

// TestSDKFillsTheHooks: importing sdk sets every hook, and they reach what
// sdk registered.
func TestSDKFillsTheHooks(t *testing.T) {
	if sdkrt.LookupLeaf == nil || sdkrt.LookupReducer == nil || sdkrt.LookupPreview == nil || sdkrt.RunBootstrap == nil ||
		sdkrt.PlanBindings == nil || sdkrt.Validate == nil || sdkrt.LookupFlow == nil || sdkrt.Graph == nil {
		t.Fatal("a hook is nil after importing sdk")
	}
	g := sdkrt.Graph(twice)
	if g == nil || g.Step == nil {
		t.Fatalf("Graph(flow) = %v", g)
	}
	if sdkrt.Graph(42) != nil || sdkrt.Graph(sdk.Flow[int, int]{}) != nil {
		t.Fatal("Graph of a non-flow or a zero flow is not nil")
	}
	leaf, ok := sdkrt.LookupLeaf(g.Step.Callable.Name)
	if !ok {
		t.Fatalf("LookupLeaf(%q) not found", g.Step.Callable.Name)
	}
	out, err := leaf(context.Background(), sdk.DefaultCodec, nil, []byte("21"))
	if err != nil || string(out) != "42" {
		t.Fatalf("leaf = %s, %v; want 42", out, err)
	}
	if _, ok := sdkrt.LookupLeaf("no/such.Step"); ok {
		t.Fatal("LookupLeaf found an unregistered name")
	}
	m, err := sdk.Materialize(twice)
	if err != nil {
		t.Fatal(err)
	}
	if b := sdkrt.PlanBindings(m); b == nil || !b.Source(g) {
		t.Fatalf("PlanBindings = %+v; want the flow's graph as root", b)
	}
	if sdkrt.PlanBindings(nil) != nil || sdkrt.PlanBindings((*sdk.Materialized)(nil)) != nil {
		t.Fatal("PlanBindings of nil is not nil")
	}
	if err := sdkrt.Validate(g); err != nil {
		t.Fatal(err)
	}
}
