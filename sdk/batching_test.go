package sdk

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// mapBounds returns the bounds of the plan's only dynamic_map node.
func mapBounds(t *testing.T, m *Materialized) plan.MapBounds {
	t.Helper()
	for _, n := range m.Plan.Nodes {
		if d, ok := n.(*plan.DynamicMapNode); ok {
			return d.Bounds
		}
	}
	t.Fatal("the plan has no dynamic_map node")
	return plan.MapBounds{}
}

// Item batching is part of the plan: bounds.maximum_items_per_task, the
// most items one task runs (min of the option and the window), present
// only when it is 2 or more, so an unbatched plan is byte for byte the plan
// it was before batching existed.
func TestItemBatchingPlan(t *testing.T) {
	limits := func(window int) Limits { return Limits{MaxConcurrency: window, MaxItems: 5000} }
	plain := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)))
	if strings.Contains(string(plain.Canonical), "maximum_items_per_task") {
		t.Fatal("an unbatched plan carries maximum_items_per_task")
	}
	cases := []struct {
		name string
		flow Flow[[]int, []int]
		want int64 // 0: absent
	}{
		{"1 (the default)", Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(1), 0},
		{"2", Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(2), 2},
		{"16", Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(16), 16},
		{"16 before WithLimits", Map(Step(PlanSquare)).WithItemBatching(16).WithLimits(limits(64)), 16},
		{"the window caps it", Map(Step(PlanSquare)).WithLimits(limits(8)).WithItemBatching(64), 8},
		{"window 1: unbatched", Map(Step(PlanSquare)).WithLimits(limits(1)).WithItemBatching(64), 0},
		{"at the cap", Map(Step(PlanSquare)).WithLimits(limits(4096)).WithItemBatching(MaxItemsPerTask), MaxItemsPerTask},
		{"eager map", Map(Step(PlanSquare)).WithItemBatching(32), 32},
	}
	seen := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustMaterialize(t, c.flow)
			if err := m.Plan.Validate(); err != nil {
				t.Fatalf("the plan does not validate: %v", err)
			}
			b := mapBounds(t, m)
			got := int64(0)
			if b.MaximumItemsPerTask != nil {
				got = *b.MaximumItemsPerTask
			}
			if got != c.want {
				t.Fatalf("maximum_items_per_task = %d, want %d", got, c.want)
			}
			if c.want == 0 && c.name == "1 (the default)" && string(m.Canonical) != string(plain.Canonical) {
				t.Fatal("WithItemBatching(1) changed the plan")
			}
			if c.want != 0 && c.name != "16 before WithLimits" {
				if m.Fingerprint == plain.Fingerprint {
					t.Fatal("batching is not fingerprinted")
				}
				if other, dup := seen[m.Fingerprint]; dup {
					t.Fatalf("same fingerprint as %q", other)
				}
				seen[m.Fingerprint] = c.name
			}
		})
	}
	a := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(16))
	b := mustMaterialize(t, Map(Step(PlanSquare)).WithItemBatching(16).WithLimits(limits(64)))
	if a.Fingerprint != b.Fingerprint {
		t.Fatal("the order of WithItemBatching and WithLimits changed the plan")
	}
}

// The batch bound survives Reduce and WithResultBuffer (they copy the map).
func TestItemBatchingSurvivesFoldAndBuffer(t *testing.T) {
	limits := Limits{MaxConcurrency: 16, MaxItems: 100}
	actor := ActorOptions{NumCPUs: 1, Memory: 1 << 20}
	folded := mustMaterialize(t, Reduce(Map(Step(PlanSquare)).WithLimits(limits).WithItemBatching(4), PlanAdd, 0, FoldOptions{MaxSerializedBytes: 1 << 20, Actor: actor}))
	buffered := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithItemBatching(4).WithResultBuffer(ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: actor}))
	for name, m := range map[string]*Materialized{"fold": folded, "buffer": buffered} {
		if b := mapBounds(t, m); b.MaximumItemsPerTask == nil || *b.MaximumItemsPerTask != 4 {
			t.Errorf("%s: maximum_items_per_task %v, want 4", name, b.MaximumItemsPerTask)
		}
	}
}

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// The plan nodes of unbatched maps are pinned byte for byte (they carry no
// code identity, so they do not change between builds), next to their
// batched counterparts: adding batching must not change an unbatched plan.
// go test ./sdk -run TestMapNodesGolden -update rewrites the file.
func TestMapNodesGolden(t *testing.T) {
	limits := Limits{MaxConcurrency: 64, MaxItems: 1000}
	fold := FoldOptions{MaxSerializedBytes: 1 << 20, Actor: ActorOptions{NumCPUs: 1, Memory: 1 << 20}}
	buf := ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: ActorOptions{NumCPUs: 1, Memory: 1 << 20}}
	var out bytes.Buffer
	for _, c := range []struct {
		name string
		m    *Materialized
	}{
		{"plain", mustMaterialize(t, Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits), Step(PlanSum)))},
		{"eager", mustMaterialize(t, Map(Step(PlanSquare)))},
		{"fold", mustMaterialize(t, Then(Step(PlanBuild), Reduce(Map(Step(PlanSquare)).WithLimits(limits), PlanAdd, 0, fold)))},
		{"buffer", mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithResultBuffer(buf))},
		{"plain batched 16", mustMaterialize(t, Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits).WithItemBatching(16), Step(PlanSum)))},
		{"eager batched 1024", mustMaterialize(t, Map(Step(PlanSquare)).WithItemBatching(MaxItemsPerTask))},
		{"fold batched 8", mustMaterialize(t, Then(Step(PlanBuild), Reduce(Map(Step(PlanSquare)).WithLimits(limits).WithItemBatching(8), PlanAdd, 0, fold)))},
		{"buffer batched 64", mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithItemBatching(64).WithResultBuffer(buf))},
	} {
		b, err := canonical.Marshal(c.m.Plan.Nodes)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s\n%s\n", c.name, b)
	}
	const golden = "testdata/map_nodes.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("the plan nodes changed:\n got %s\nwant %s", out.Bytes(), want)
	}
}

// The generated bounds encode as the conformance vectors
// plan/map_bounds_unbatched and plan/map_bounds_items_per_task say
// (conformance/vectors/canonical.json, checked there against the Python
// reference): the key is absent when unbatched and sorts after
// maximum_items when present.
func TestMapBoundsCanonicalForm(t *testing.T) {
	items, window, perTask := int64(1000), int64(64), int64(16)
	for _, c := range []struct {
		b    plan.MapBounds
		want string
	}{
		{plan.MapBounds{MaximumItems: &items, MaximumInFlight: &window, CancelTimeoutSeconds: 1},
			`{"cancel_timeout_seconds":1,"maximum_in_flight":64,"maximum_items":1000}`},
		{plan.MapBounds{MaximumItems: &items, MaximumInFlight: &window, CancelTimeoutSeconds: 1, MaximumItemsPerTask: &perTask},
			`{"cancel_timeout_seconds":1,"maximum_in_flight":64,"maximum_items":1000,"maximum_items_per_task":16}`},
	} {
		got, err := canonical.Marshal(c.b)
		if err != nil || string(got) != c.want {
			t.Errorf("got %s, %v; want %s", got, err, c.want)
		}
	}
}
