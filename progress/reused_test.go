package progress

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// reusedOf returns the map node's reused count in the run's snapshot (nil
// when absent) and whether its stored detail bytes carry the key.
func reusedOf(t *testing.T, r *Run, id string) (*int64, bool) {
	t.Helper()
	snap, _ := r.Snapshot()
	n := nodeOf(t, snap.Graph.Nodes, id)
	b, err := json.Marshal(n.Fanout)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	_, present := keys["reused_items"]
	return n.Fanout.ReusedItems, present
}

// A resumable map's reused items show in its node's fan-out
// (reused_items), through every fold; a map that reused none has no such
// key, so its detail is what it was before resumable maps existed.
func TestRunMapReusedItems(t *testing.T) {
	cases := []struct {
		name    string
		reports []MapCounters
		want    *int64
	}{
		{"none reused", []MapCounters{
			{Node: "0.1", Admitted: 4, Completed: 1, InFlight: 3},
			{Node: "0.1", Admitted: 10, Completed: 10, Exhausted: true},
		}, nil},
		{"some reused", []MapCounters{
			{Node: "0.1", Admitted: 4, Completed: 3, InFlight: 1, Reused: 2},
			{Node: "0.1", Admitted: 10, Completed: 10, Exhausted: true, Reused: 6},
		}, ptr(int64(6))},
		{"all reused", []MapCounters{
			{Node: "0.1", Admitted: 10, Completed: 10, Exhausted: true, Reused: 10},
		}, ptr(int64(10))},
		{"failed after reusing", []MapCounters{
			{Node: "0.1", Admitted: 7, Completed: 5, Failed: true, Reused: 5},
		}, ptr(int64(5))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := startMap(t, 10, 4, &recorder{}, time.Hour)
			defer r.Finish(context.Background(), nil)
			for _, p := range c.reports {
				r.Map(p)
			}
			got, present := reusedOf(t, r, "0.1")
			if d := cmp.Diff(c.want, got); d != "" {
				t.Fatalf("reused_items (-want +got):\n%s", d)
			}
			if present != (c.want != nil) {
				t.Fatalf("the detail carries reused_items: %v, want %v", present, c.want != nil)
			}
			snap, _ := r.Snapshot()
			if n := snap.Ingress.Rejected; n != 0 {
				t.Fatalf("%d events rejected: %+v", n, snap.Ingress.RejectedByReason)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
