package telemetry_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/telemetry"
)

var itemCtx context.Context

// A map item's context from the map's Items names the item's node and
// keeps the map's run, as StartNode's would, in one allocation.
func TestMapItemsContext(t *testing.T) {
	ctx, span := telemetry.StartRun(context.Background(), telemetry.RunInfo{RunID: "r-1", Engine: "local"})
	defer span.End()
	ctx, span2 := telemetry.StartNode(ctx, "0.1", "map", -1)
	defer span2.End()
	items := telemetry.MapItems(ctx, "0.1")
	type scope struct {
		Run  string
		Node string
	}
	for _, tc := range []struct {
		index int
		want  scope
	}{{0, scope{"r-1", "0.1.m0"}}, {7, scope{"r-1", "0.1.m7"}}, {12345, scope{"r-1", "0.1.m12345"}}} {
		ictx := items.Context(ctx, tc.index)
		got := scope{Node: telemetry.Node(ictx)}
		if r := telemetry.Run(ictx); r != nil {
			got.Run = r.RunID
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("item %d (-want +got):\n%s", tc.index, diff)
		}
		// A node started inside the item (a nested span) is below it.
		nctx, s := telemetry.StartNode(ictx, telemetry.Node(ictx)+".0", "step", -1)
		s.End()
		if n := telemetry.Node(nctx); n != tc.want.Node+".0" || telemetry.Run(nctx).RunID != "r-1" {
			t.Errorf("item %d: nested node %s", tc.index, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { itemCtx = items.Context(ctx, 3) }); n != 1 {
		t.Errorf("%v allocations per item context, want 1", n)
	}
}
