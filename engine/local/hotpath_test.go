package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

// Offset is a no-op leaf on ints of 1,000 and more (an int under 256 is
// boxed without an allocation: the measured items must not be).
func Offset(_ context.Context, v int) (int, error) { return v, nil }

// mapAllocs is the allocations of one local run of a map of n no-op items
// (window 64), the codec round trip off.
func mapAllocs(t *testing.T, n int) float64 {
	t.Helper()
	f := sdk.Map(sdk.Step(Offset)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: n})
	g := sdkrt.Graph(f)
	if err := sdkrt.Validate(g); err != nil {
		t.Fatal(err)
	}
	in := make([]int, n)
	for i := range in {
		in[i] = 1000 + i
	}
	return testing.AllocsPerRun(5, func() {
		out, err := local.Run(context.Background(), g, in, local.Options{NoCodecRoundTrip: true})
		if err != nil || len(out.([]int)) != n {
			t.Fatalf("%d results, %v", len(out.([]int)), err)
		}
	})
}

// A map item costs three allocations with the codec round trip off: its
// result boxed into an any, its input boxed into an any by the map's item
// sequence, and its leaf's context (which names its node for logs without
// spelling the node id: TestMapItemLogsNameTheirNode). The per-item figure
// is the difference between two map sizes, so what a run costs once
// (materializing the plan, the result list) does not count; what the
// runtime allocates now and then for itself (a blocked goroutine's sudog,
// more under the race detector) adds a few hundredths, hence the 0.1 of
// slack: a fourth allocation per item is well over it.
func TestMapItemAllocations(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	const small, large = 2_000, 12_000
	perItem := (mapAllocs(t, large) - mapAllocs(t, small)) / (large - small)
	t.Logf("%.3f allocations per map item", perItem)
	if perItem > 3.1 {
		t.Fatalf("%.3f allocations per map item, want 3 (result, input, context)", perItem)
	}
}

var itemLogger *slog.Logger

// LoggingLeaf logs with its context.
func LoggingLeaf(ctx context.Context, v int) (int, error) {
	itemLogger.InfoContext(ctx, "item", "v", v)
	return v, nil
}

// A map item's leaf logs with its context: the record names the run and
// the item's node (map 0's item i is node 0.m<i>), with tracing off, as
// each item's node id is derived only for the record.
func TestMapItemLogsNameTheirNode(t *testing.T) {
	const n = 20
	id := sdk.NewRunIdentity()
	f := sdk.Map(sdk.Step(LoggingLeaf)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: n})
	for _, batch := range []int{1, 3} {
		logs := &syncbuf.Buffer{} // every record, through telemetry.LogHandler
		itemLogger = slog.New(telemetry.LogHandler(slog.NewJSONHandler(logs, nil)))
		if _, err := sdk.Run(context.Background(), f.WithItemBatching(batch), seq(n), sdk.WithRunIdentity(id), sdk.WithoutCodecRoundTrip()); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			v, _ := rec["v"].(float64)
			if want := fmt.Sprintf("0.m%d", int(v)); rec[telemetry.LogNodeID] != want || rec[telemetry.LogRunID] != id.RunID {
				t.Errorf("batch %d: record %v, want node %s of run %s", batch, rec, want, id.RunID)
			}
			seen[rec[telemetry.LogNodeID].(string)] = true
		}
		if len(seen) != n {
			t.Errorf("batch %d: records of %d items, want %d", batch, len(seen), n)
		}
	}
}

// seq is 0..n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// countingReporter counts the reports that reach it.
type countingReporter struct{ n atomic.Int64 }

func (r *countingReporter) Report(float64, float64, string, map[string]any) bool {
	r.n.Add(1)
	return true
}

// ItemReports reports progress from a map item's leaf.
func ItemReports(ctx context.Context, v int) (bool, error) {
	return sdk.ReportProgress(ctx, 1, 2, "half", nil), nil
}

// A reporter in the caller's context (a run started from a leaf of
// another run) never reaches a map item's leaf, plain, batched or lazy:
// map items report nothing.
func TestMapItemsIgnoreTheCallersReporter(t *testing.T) {
	t.Parallel()
	rep := &countingReporter{}
	ctx := progress.WithReporter(context.Background(), rep)
	lim := sdk.Limits{MaxConcurrency: 4, MaxItems: 10}
	for name, g := range map[string]*flowgraph.Node{
		"map":     sdkrt.Graph(sdk.Map(sdk.Step(ItemReports)).WithLimits(lim)),
		"batched": sdkrt.Graph(sdk.Map(sdk.Step(ItemReports)).WithLimits(lim).WithItemBatching(3)),
		"lazy":    sdkrt.Graph(sdk.MapSeq(sdk.Step(ItemReports)).WithLimits(lim)),
	} {
		for _, off := range []bool{false, true} {
			in := any(seq(10))
			if name == "lazy" {
				in = slices.Values(seq(10))
			}
			out, err := local.Run(ctx, g, in, local.Options{NoCodecRoundTrip: off})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := out.([]bool); len(got) != 10 || slices.Contains(got, true) {
				t.Errorf("%s (round trip off %v): ReportProgress in the items = %v, want all false", name, off, got)
			}
		}
	}
	if n := rep.n.Load(); n != 0 {
		t.Errorf("the caller's reporter got %d reports", n)
	}
}

// SlowOffset is Offset that takes a moment, so a map's window fills
// before its input ends.
func SlowOffset(ctx context.Context, v int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(time.Millisecond):
	}
	return v, nil
}

// A map over a slice (sdk.Map) reads its items by index (Items.At), each
// once and in order, and never pulls its sequence (a coroutine switch per
// item); a sized input over MaxItems still fails before any item is read.
// That reads wait for a free window slot is the backend suite's check
// (internal/executor/executortest), which runs sized inputs this way.
func TestMapSliceReadsItemsByIndex(t *testing.T) {
	const n, window = 40, 4
	for _, c := range []struct {
		name          string
		items, perTsk int
		maxItems      int
		wantErr       bool
	}{
		{"at the cap", n, 1, n, false},
		{"batched, at the cap", n, 3, n, false},
		{"one over the cap", n + 1, 1, n, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				reads  []int
				pulled atomic.Bool
			)
			f := sdk.Map(sdk.Step(SlowOffset)).WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: c.maxItems})
			if c.perTsk > 1 {
				f = f.WithItemBatching(c.perTsk)
			}
			g := sdkrt.Graph(f).Clone()
			m := *g.Map
			orig := m.Items
			m.Items = func(in any) (flowgraph.Items, error) {
				it, err := orig(in)
				if err != nil {
					return it, err
				}
				seq := it.Seq
				it.Seq = func(yield func(any) bool) {
					pulled.Store(true)
					seq(yield)
				}
				if at := it.At; at != nil {
					it.At = func(i int) any {
						mu.Lock()
						reads = append(reads, i)
						mu.Unlock()
						return at(i)
					}
				}
				return it, nil
			}
			g.Map = &m
			in := make([]int, c.items)
			for i := range in {
				in[i] = 1000 + i
			}
			out, err := local.Run(context.Background(), g, in, local.Options{NoCodecRoundTrip: true})
			if pulled.Load() {
				t.Error("the slice's sequence was pulled; want its items read by index")
			}
			var want []int
			if c.wantErr {
				var mie *sdk.MaxItemsError
				if !errors.As(err, &mie) || mie.Items != c.items || mie.MaxItems != c.maxItems {
					t.Fatalf("err %v, want a MaxItemsError for %d items", err, c.items)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(in, out); diff != "" {
					t.Errorf("results (-want +got):\n%s", diff)
				}
				want = make([]int, c.items)
				for i := range want {
					want[i] = i
				}
			}
			if diff := cmp.Diff(want, reads); diff != "" {
				t.Errorf("items read (-want +got):\n%s", diff)
			}
		})
	}
}
