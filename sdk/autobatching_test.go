package sdk

import (
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Automatic batching is part of the plan: bounds.item_batching "auto"
// beside bounds.maximum_items_per_task, the cap (within the window); both
// are fingerprinted, and a plan without WithAutoBatching carries no
// item_batching, so its bytes are those it had before the mode existed.
func TestAutoBatchingPlan(t *testing.T) {
	limits := func(window int) Limits { return Limits{MaxConcurrency: window, MaxItems: 5000} }
	fixed := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(16))
	plain := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)))
	for _, m := range []*Materialized{fixed, plain} {
		if strings.Contains(string(m.Canonical), "item_batching") {
			t.Fatal("a plan without automatic batching carries item_batching")
		}
	}
	cases := []struct {
		name     string
		flow     Flow[[]int, []int]
		wantCap  int64 // 0: absent
		wantAuto bool
	}{
		{"2", Map(Step(PlanSquare)).WithLimits(limits(64)).WithAutoBatching(2), 2, true},
		{"16", Map(Step(PlanSquare)).WithLimits(limits(64)).WithAutoBatching(16), 16, true},
		{"the window caps it", Map(Step(PlanSquare)).WithLimits(limits(8)).WithAutoBatching(64), 8, true},
		{"window 1: unbatched", Map(Step(PlanSquare)).WithLimits(limits(1)).WithAutoBatching(64), 0, false},
		{"exactly the cap", Map(Step(PlanSquare)).WithLimits(limits(4096)).WithAutoBatching(MaxItemsPerTask), MaxItemsPerTask, true},
		{"eager map", Map(Step(PlanSquare)).WithAutoBatching(32), 32, true},
		{"fixed after auto: fixed", Map(Step(PlanSquare)).WithLimits(limits(64)).WithAutoBatching(32).WithItemBatching(16), 16, false},
		{"auto after fixed: auto", Map(Step(PlanSquare)).WithLimits(limits(64)).WithItemBatching(16).WithAutoBatching(32), 32, true},
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
			if got != c.wantCap {
				t.Fatalf("maximum_items_per_task = %d, want %d", got, c.wantCap)
			}
			auto := b.ItemBatching != nil && *b.ItemBatching == itemBatchingAuto
			if auto != c.wantAuto || (b.ItemBatching != nil && !auto) {
				t.Fatalf("item_batching = %v, want auto %v", b.ItemBatching, c.wantAuto)
			}
			if !c.wantAuto {
				return
			}
			if other, dup := seen[m.Fingerprint]; dup {
				t.Fatalf("same fingerprint as %q", other)
			}
			seen[m.Fingerprint] = c.name
		})
	}
	auto := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)).WithAutoBatching(16))
	if auto.Fingerprint == fixed.Fingerprint || auto.Fingerprint == plain.Fingerprint {
		t.Fatal("automatic batching is not fingerprinted apart from fixed batching and none")
	}
	again := mustMaterialize(t, Map(Step(PlanSquare)).WithAutoBatching(16).WithLimits(limits(64)))
	if again.Fingerprint != auto.Fingerprint {
		t.Fatal("the order of WithAutoBatching and WithLimits changed the plan")
	}
	if fixed2 := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits(64)).WithAutoBatching(8).WithItemBatching(16)); fixed2.Fingerprint != fixed.Fingerprint {
		t.Fatal("WithItemBatching after WithAutoBatching is not the fixed batching's plan")
	}
}

// The mode survives Reduce and WithResultBuffer (they copy the map).
func TestAutoBatchingSurvivesFoldAndBuffer(t *testing.T) {
	limits := Limits{MaxConcurrency: 16, MaxItems: 100}
	actor := ActorOptions{NumCPUs: 1, Memory: 1 << 20}
	folded := mustMaterialize(t, Reduce(Map(Step(PlanSquare)).WithLimits(limits).WithAutoBatching(4), PlanAdd, 0, FoldOptions{MaxSerializedBytes: 1 << 20, Actor: actor}))
	buffered := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithAutoBatching(4).WithResultBuffer(ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: actor}))
	for name, m := range map[string]*Materialized{"fold": folded, "buffer": buffered} {
		b := mapBounds(t, m)
		if b.MaximumItemsPerTask == nil || *b.MaximumItemsPerTask != 4 || b.ItemBatching == nil || *b.ItemBatching != "auto" {
			t.Errorf("%s: bounds %+v, want maximum_items_per_task 4, item_batching auto", name, b)
		}
	}
}

// The generated bounds encode as the conformance vector
// plan/map_bounds_auto_batching says (conformance/vectors/canonical.json,
// checked there against the Python reference): item_batching sorts
// before the maximum_* keys.
func TestAutoBatchingBoundsCanonicalForm(t *testing.T) {
	items, window, perTask, auto := int64(1000), int64(64), int64(256), "auto"
	b := plan.MapBounds{MaximumItems: &items, MaximumInFlight: &window, CancelTimeoutSeconds: 1, MaximumItemsPerTask: &perTask, ItemBatching: &auto}
	const want = `{"cancel_timeout_seconds":1,"item_batching":"auto","maximum_in_flight":64,"maximum_items":1000,"maximum_items_per_task":256}`
	got, err := canonical.Marshal(b)
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}

// The plan's decoder takes item_batching "auto" and refuses any other
// value.
func TestAutoBatchingBoundsDecode(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"auto", `{"cancel_timeout_seconds":1,"item_batching":"auto","maximum_in_flight":64,"maximum_items":null,"maximum_items_per_task":1024}`, true},
		{"absent", `{"cancel_timeout_seconds":1,"maximum_in_flight":64,"maximum_items":null,"maximum_items_per_task":1024}`, true},
		{"over the cap", `{"cancel_timeout_seconds":1,"item_batching":"auto","maximum_in_flight":64,"maximum_items":null,"maximum_items_per_task":1025}`, false},
		{"fixed", `{"cancel_timeout_seconds":1,"item_batching":"fixed","maximum_in_flight":64,"maximum_items":null,"maximum_items_per_task":16}`, false},
		{"null", `{"cancel_timeout_seconds":1,"item_batching":null,"maximum_in_flight":64,"maximum_items":null}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := plan.DecodeMapBounds([]byte(c.in))
			if (err == nil) != c.ok {
				t.Fatalf("decode error %v, want ok %v", err, c.ok)
			}
		})
	}
}
