package executor_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/internal/executor"
)

// The sizer's rule, one observation (or none) at a time.
func TestSizer(t *testing.T) {
	ms := time.Millisecond
	type obs struct {
		n        int
		wall     time.Duration
		inFlight int
	}
	ray2 := executor.TaskCost{Overhead: 2 * ms, CPUs: 2} // aims at 40 ms of items
	cases := []struct {
		name      string
		max       int
		window    int
		cost      executor.TaskCost
		seen      []obs
		remaining int
		want      int
	}{
		{"probing: one item", 64, 256, ray2, nil, -1, 1},
		{"probing with a known remainder", 64, 256, ray2, nil, 1000, 1},
		{"no-op items: the cap", 64, 1 << 20, ray2, []obs{{1, 0, 1}}, -1, 64},
		{"no-op items: exactly the cap", 1024, 1 << 20, ray2, []obs{{1, 0, 1}}, -1, 1024},
		{"a cap over the window: the window's share", 1025, 2048, ray2, []obs{{1, 0, 1}}, -1, 1024},
		{"no-op items: the window's share", 1024, 256, ray2, []obs{{1, 0, 1}}, -1, 128},
		{"window below the CPUs: one", 1024, 1, ray2, []obs{{1, 0, 1}}, -1, 1},
		{"no-op items: the remainder spread over the CPUs", 1024, 4096, ray2, []obs{{1, 0, 1}}, 101, 51},
		{"one item left", 1024, 4096, ray2, []obs{{1, 0, 1}}, 1, 1},
		{"no item left", 1024, 4096, ray2, []obs{{1, 0, 1}}, 0, 1},
		{"1 ms units: 40 items", 1024, 4096, ray2, []obs{{1, ms, 1}}, -1, 40},
		{"2 ms items: 20 of them", 1024, 4096, ray2, []obs{{10, 20 * ms, 2}}, -1, 20},
		{"2 ms items, the cap below: the cap", 16, 4096, ray2, []obs{{10, 20 * ms, 2}}, -1, 16},
		{"200 ms items: one each", 1024, 4096, ray2, []obs{{1, 202 * ms, 1}}, -1, 1},
		{"39 ms items: two", 1024, 4096, ray2, []obs{{1, 39 * ms, 2}}, -1, 2},
		{"40 ms items: one", 1024, 4096, ray2, []obs{{1, 40 * ms, 2}}, -1, 1},
		// 8 units shared 2 CPUs: 100 ms is 25 ms of its own: 2.5 ms an item.
		{"more units than CPUs: their share", 1024, 4096, ray2, []obs{{10, 100 * ms, 8}}, -1, 16},
		{"fewer units than CPUs: the wall", 1024, 4096, ray2, []obs{{10, 25 * ms, 1}}, -1, 16},
		// 2 ms items in units of 10 on a head whose task costs 8 ms: 2.8 ms an item.
		{"a costlier task than assumed: its items carry it", 1024, 4096, ray2, []obs{{10, 28 * ms, 2}}, -1, 15},
		// (1 ms + 3 ms)/2 = 2 ms per item.
		{"the mean of two estimates", 1024, 4096, ray2, []obs{{1, ms, 1}, {10, 30 * ms, 1}}, -1, 20},
		{"a failed observation is ignored", 1024, 4096, ray2, []obs{{0, time.Second, 1}}, -1, 1},
		{"no overhead: one item each", 1024, 4096, executor.TaskCost{CPUs: 2}, []obs{{4, 4 * ms, 1}}, -1, 1},
		{"local: 10 µs items", 1024, 4096, executor.TaskCost{Overhead: executor.LocalTaskOverhead, CPUs: 4}, []obs{{100, 1000 * time.Microsecond, 1}}, -1, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := executor.NewSizer(c.max, c.window, c.cost)
			for _, o := range c.seen {
				s.Observe(o.n, o.wall, o.inFlight)
			}
			if got := s.Size(c.remaining); got != c.want {
				t.Fatalf("Size(%d) = %d (per item %v), want %d", c.remaining, got, s.PerItem(), c.want)
			}
		})
	}
}

// The sizer reads its CPUs from the TaskCost, or GOMAXPROCS without them.
func TestSizerCPUs(t *testing.T) {
	if got := executor.NewSizer(8, 8, executor.TaskCost{CPUs: 3}).CPUs(); got != 3 {
		t.Fatalf("CPUs %d, want 3", got)
	}
	if got, want := executor.NewSizer(8, 8, executor.TaskCost{}).CPUs(), executor.LocalTaskCost().CPUs; got != want {
		t.Fatalf("CPUs %d, want GOMAXPROCS %d", got, want)
	}
}

// unitLog is a backend that sleeps each item's duration and records the
// units it was handed.
type unitLog struct {
	item  time.Duration
	mu    sync.Mutex
	units [][2]int // base, size
}

func (u *unitLog) Item(context.Context, int, int) (int, error) { panic("auto batching runs units") }

func (u *unitLog) Batch(ctx context.Context, base int, items []int, each func(int, int, error)) {
	u.mu.Lock()
	u.units = append(u.units, [2]int{base, len(items)})
	u.mu.Unlock()
	for j, v := range items {
		if u.item > 0 {
			time.Sleep(u.item)
		}
		each(j, v*v, nil)
	}
}

func (*unitLog) Discard(int, int)                            {}
func (*unitLog) Abort(context.Context, error, time.Duration) {}

type squareSink struct{ out []int }

func (s *squareSink) Add(_ context.Context, i int, v int) error  { s.out[i] = v; return nil }
func (s *squareSink) Finish(context.Context, int) ([]int, error) { return s.out, nil }

// runAuto runs n items (input i) through RunIndexed (or Run: lazy) with
// automatic batching, in fake time, and returns the units by base.
func runAuto(t *testing.T, n, window, capItems int, item time.Duration, cost executor.TaskCost, lazy bool) [][2]int {
	t.Helper()
	var units [][2]int
	synctest.Test(t, func(t *testing.T) {
		b := &unitLog{item: item}
		lim := executor.Limits{Node: "0", Window: window, BatchSize: capItems, Auto: &cost}
		sink := &squareSink{out: make([]int, n)}
		var (
			out []int
			err error
		)
		if lazy {
			out, err = executor.Run(context.Background(), lim, func(yield func(int, error) bool) {
				for i := range n {
					if !yield(i, nil) {
						return
					}
				}
			}, executor.Backend[int, int](b), sink, nil)
		} else {
			out, err = executor.RunIndexed(context.Background(), lim, n, func(i int) int { return i }, executor.Backend[int, int](b), sink, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if v != i*i {
				t.Fatalf("item %d: %d, want %d", i, v, i*i)
			}
		}
		units = slices.Clone(b.units)
	})
	slices.SortFunc(units, func(a, b [2]int) int { return a[0] - b[0] })
	next := 0
	for _, u := range units {
		if u[0] != next || u[1] < 1 || u[1] > capItems {
			t.Fatalf("units %v: unit %v does not follow item %d within 1 … %d", units, u, next, capItems)
		}
		next += u[1]
	}
	if next != n {
		t.Fatalf("units %v hold %d items, want %d", units, next, n)
	}
	return units
}

// Tiny items are batched: after CPUs probes of one item, units grow to
// the cap, so the map runs far fewer units than items; every item keeps
// its result in input order.
func TestAutoBatchingBatchesTinyItems(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		units := runAuto(t, 2000, 64, 16, 0, executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 2}, lazy)
		if units[0][1] != 1 || units[1][1] != 1 {
			t.Fatalf("lazy %v: first units %v, want two probes of one item", lazy, units[:2])
		}
		if len(units) > 2000/8 {
			t.Fatalf("lazy %v: %d units for 2000 no-op items (cap 16), want at most 250", lazy, len(units))
		}
	}
}

// Items much longer than the per-task cost run one per unit.
func TestAutoBatchingLeavesLongItemsAlone(t *testing.T) {
	units := runAuto(t, 40, 8, 16, 200*time.Millisecond, executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 2}, false)
	for _, u := range units {
		if u[1] != 1 {
			t.Fatalf("units %v: 200 ms items batched", units)
		}
	}
}

// Items of a tenth of the target (4 ms of a 40 ms aim, CPUs units in
// flight) settle at about ten per unit, never more than the window's
// share.
func TestAutoBatchingSizesMediumItems(t *testing.T) {
	units := runAuto(t, 400, 20, 64, 4*time.Millisecond, executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 2}, false)
	big := 0
	for _, u := range units[2:] {
		if u[1] > 10 {
			t.Fatalf("units %v: a unit over the window's share of 10", units)
		}
		if u[1] >= 9 {
			big++
		}
	}
	if big < len(units)/2 {
		t.Fatalf("units %v: fewer than half of them hold 9 or 10 items", units)
	}
}
