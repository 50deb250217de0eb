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

// The sizer's rule: units of given sizes finish (started in the order
// listed, at the given times; finished in that order), then the next unit's
// size.
func TestSizer(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	type obs struct {
		n          int
		start, end time.Duration
	}
	// one is a unit of n items alone on its slot for d.
	one := func(n int, d time.Duration) obs { return obs{n, 0, d} }
	ray2 := executor.TaskCost{Overhead: 2 * ms, CPUs: 2} // aims at 40 ms of items
	// grown: no-op units seen up to 256 items (the growth bound is 1,024).
	grown := []obs{one(1, 0), one(256, 0)}
	cases := []struct {
		name      string
		max       int
		window    int
		cost      executor.TaskCost
		expired   bool // ProbeWait passed before any unit finished
		seen      []obs
		remaining int
		want      int
	}{
		{"probing: one item", 64, 256, ray2, false, nil, -1, 1},
		{"probing with a known remainder", 64, 256, ray2, false, nil, 1000, 1},
		{"long items: one each", 64, 256, ray2, true, nil, 1000, 1},
		{"no fixed cost: one item each", 64, 256, executor.TaskCost{CPUs: 2}, false, nil, -1, 1},
		{"no fixed cost, items seen: one item each", 1024, 4096, executor.TaskCost{CPUs: 2}, false, []obs{one(4, 4*ms)}, -1, 1},
		{"no-op items after a probe: four times the probe", 64, 1 << 20, ray2, false, []obs{one(1, 0)}, -1, 4},
		{"no-op items: four times the largest unit", 64, 1 << 20, ray2, false, []obs{one(1, 0), one(4, 0)}, -1, 16},
		{"no-op items: exactly the cap", 1024, 1 << 20, ray2, false, grown, -1, 1024},
		{"no-op items: the growth bound below a cap one over it", 1025, 1 << 20, ray2, false, grown, -1, 1024},
		{"a cap over the window: the window's share", 1025, 2048, ray2, false, grown, -1, 1024},
		{"no-op items: the window's share", 1024, 256, ray2, false, grown, -1, 128},
		{"window below the CPUs: one", 1024, 1, ray2, false, grown, -1, 1},
		{"the remainder spread over 2·CPUs units", 1024, 4096, ray2, false, grown, 101, 26},
		{"the remainder spread over 2·CPUs units, exactly", 1024, 4096, ray2, false, grown, 100, 25},
		{"one item left", 1024, 4096, ray2, false, grown, 1, 1},
		{"no item left", 1024, 4096, ray2, false, grown, 0, 1},
		// 10 items in 22 ms, 20 in 42 ms: 2 ms a task, 2 ms an item.
		{"2 ms items: 20 of them", 1024, 4096, ray2, false, []obs{one(10, 22*ms), one(20, 42*ms)}, -1, 20},
		{"2 ms items, the cap below: the cap", 16, 4096, ray2, false, []obs{one(10, 22*ms), one(20, 42*ms)}, -1, 16},
		// 5 ms a task: a unit of 50 items for it to be 5 %.
		{"a costlier task than assumed: larger units", 1024, 4096, ray2, false, []obs{one(10, 25*ms), one(20, 45*ms)}, -1, 50},
		// 1 ms a task: never below the assumed 2 ms.
		{"a cheaper task than assumed: the assumed cost", 1024, 4096, ray2, false, []obs{one(10, 21*ms), one(20, 41*ms)}, -1, 20},
		{"units of one size: the assumed cost", 1024, 4096, ray2, false, []obs{one(10, 22*ms), one(10, 22*ms)}, -1, 20},
		{"the probe alone: its item carries the task", 1024, 4096, ray2, false, []obs{one(1, 4*ms)}, -1, 4},
		{"200 ms items: one each", 1024, 4096, ray2, false, []obs{one(1, 202*ms)}, -1, 1},
		{"39 ms items: two", 1024, 4096, ray2, false, []obs{one(1, 41*ms)}, -1, 2},
		{"40 ms items: one", 1024, 4096, ray2, false, []obs{one(1, 42*ms)}, -1, 1},
		// Three units of 10 start at once on 2 slots; the third waits for
		// the first to end (22 ms) and ends at 44 ms: 22 ms of service, not
		// 44.
		{"a unit that waited for its slot: its service only", 1024, 4096, ray2, false,
			[]obs{{10, 0, 22 * ms}, {10, 0, 22 * ms}, {10, 0, 44 * ms}}, -1, 20},
		{"a unit that started after its slot freed: from its start", 1024, 4096, ray2, false,
			[]obs{{10, 0, 22 * ms}, {10, 0, 22 * ms}, {10, 30 * ms, 52 * ms}}, -1, 20},
		{"a failed observation is ignored", 1024, 4096, ray2, false, []obs{one(0, time.Second)}, -1, 1},
		{"local: 10 µs items", 1024, 4096, executor.TaskCost{Overhead: executor.LocalTaskOverhead, CPUs: 4}, false,
			[]obs{one(100, 1020*us)}, -1, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := executor.NewSizer(c.max, c.window, c.cost)
			if c.expired {
				s.ProbeExpired()
			}
			seqs := make([]int, len(c.seen))
			for i := range c.seen {
				seqs[i] = s.Start()
			}
			for i, o := range c.seen {
				s.Finish(seqs[i], o.n, o.start, o.end)
			}
			if got := s.Size(c.remaining); got != c.want {
				t.Fatalf("Size(%d) = %d (fixed cost %v, per item %v), want %d", c.remaining, got, s.Overhead(), s.PerItem(), c.want)
			}
		})
	}
}

// The sizer reads its CPUs from the TaskCost, or GOMAXPROCS without them;
// it keeps CPUs units in flight while probing and 2·CPUs after; its probe
// lasts one unit's aim (TaskCost.Overhead/OverheadShare).
func TestSizerCPUs(t *testing.T) {
	if got := executor.NewSizer(8, 8, executor.TaskCost{CPUs: 3}).CPUs(); got != 3 {
		t.Fatalf("CPUs %d, want 3", got)
	}
	if got, want := executor.NewSizer(8, 8, executor.TaskCost{}).CPUs(), executor.LocalTaskCost().CPUs; got != want {
		t.Fatalf("CPUs %d, want GOMAXPROCS %d", got, want)
	}
	s := executor.NewSizer(64, 256, executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 3})
	if !s.Probing() || s.MaxUnits() != 3 || s.ProbeWait() != 40*time.Millisecond {
		t.Fatalf("new sizer: probing %v, %d units, probe wait %v; want probing, 3 units, 40ms", s.Probing(), s.MaxUnits(), s.ProbeWait())
	}
	s.ProbeExpired()
	if s.Probing() || s.MaxUnits() != 6 || s.Size(-1) != 1 {
		t.Fatalf("expired probe: probing %v, %d units, size %d; want 6 units of 1", s.Probing(), s.MaxUnits(), s.Size(-1))
	}
	s = executor.NewSizer(64, 256, executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 3})
	s.Finish(s.Start(), 1, 0, time.Millisecond)
	if s.Probing() || s.MaxUnits() != 6 {
		t.Fatalf("after a unit: probing %v, %d units; want 6", s.Probing(), s.MaxUnits())
	}
}

// unitLog is a backend that sleeps each item's duration and records the
// units it was handed, when each started (since t0) and the most units
// that ran at once.
type unitLog struct {
	item   time.Duration
	t0     time.Time
	mu     sync.Mutex
	units  [][2]int // base, size
	starts map[int]time.Duration
	cur    int
	peak   int
}

func (u *unitLog) Item(context.Context, int, int) (int, error) { panic("auto batching runs units") }

func (u *unitLog) Batch(ctx context.Context, base int, items []int, each func(int, int, error)) {
	u.mu.Lock()
	u.units = append(u.units, [2]int{base, len(items)})
	if u.starts != nil {
		u.starts[base] = time.Since(u.t0)
	}
	u.cur++
	u.peak = max(u.peak, u.cur)
	u.mu.Unlock()
	for j, v := range items {
		if u.item > 0 {
			time.Sleep(u.item)
		}
		if j == len(items)-1 {
			u.mu.Lock()
			u.cur--
			u.mu.Unlock()
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

// slotModel is a backend modelled on a Ray head, in fake time: a task
// waits rtt/2 to reach the cluster, then for one of cpus slots (first come,
// first served), holds it for fixed + item per item, and its results take
// rtt/2 to come back; a batch's items all come back at its end, as a Ray
// task's returns do.
type slotModel struct {
	fixed, item, rtt time.Duration
	slots            chan struct{}
	noisy            bool // each task's time is scaled by 0.5 … 1.5, and one in eight by 3 (a busy machine)
}

func newSlotModel(cpus int, fixed, item, rtt time.Duration) *slotModel {
	return &slotModel{fixed: fixed, item: item, rtt: rtt, slots: make(chan struct{}, cpus)}
}

func (m *slotModel) task(base, n int) {
	time.Sleep(m.rtt / 2)
	m.slots <- struct{}{}
	d := m.fixed + time.Duration(n)*m.item
	if m.noisy {
		h := uint64(base)*0x9e3779b97f4a7c15 ^ uint64(n)*0xbf58476d1ce4e5b9
		h ^= h >> 31
		f := 0.5 + float64(h%1000)/1000
		if h>>20%8 == 0 {
			f = 3
		}
		d = time.Duration(float64(d) * f)
	}
	time.Sleep(d)
	<-m.slots
	time.Sleep(m.rtt / 2)
}

func (m *slotModel) Item(_ context.Context, i int, v int) (int, error) {
	m.task(i, 1)
	return v * v, nil
}

func (m *slotModel) Batch(_ context.Context, base int, items []int, each func(int, int, error)) {
	m.task(base, len(items))
	for j, v := range items {
		each(j, v*v, nil)
	}
}

func (*slotModel) Discard(int, int)                            {}
func (*slotModel) Abort(context.Context, error, time.Duration) {}

// modelWall runs n items through the slot model with the window, one per
// task (cost nil) or automatically batched up to capItems for cost, in
// fake time, and returns the map's wall time.
func modelWall(t *testing.T, m func() *slotModel, n, window, capItems int, cost *executor.TaskCost) time.Duration {
	t.Helper()
	var wall time.Duration
	synctest.Test(t, func(t *testing.T) {
		lim := executor.Limits{Node: "0", Window: window, BatchSize: 1}
		if cost != nil {
			lim.BatchSize, lim.Auto = capItems, cost
		}
		start := time.Now()
		out, err := executor.RunIndexed(context.Background(), lim, n, func(i int) int { return i },
			executor.Backend[int, int](m()), &squareSink{out: make([]int, n)}, nil)
		wall = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if v != i*i {
				t.Fatalf("item %d: %d, want %d", i, v, i*i)
			}
		}
	})
	return wall
}

// Automatic batching meets issue 29's goals on a model of a two-CPU Ray
// head (2 ms a task, 2 ms of round trip; fake time, so the figures are
// exact): no-op items ≥ 10× one task per item, 2 ms items ≥ 1.7×, and
// 200 ms items within 5 % of the unbatched wall (the probe costs nothing:
// those items run one per task from the start); also with a task that
// costs more than the TaskCost says (the fit finds it), on 8 CPUs, and with
// noisy tasks.
func TestAutoBatchingMeetsGoalsOnModel(t *testing.T) {

	ms := time.Millisecond
	cases := []struct {
		name            string
		cpus            int
		noisy           bool
		fixed, item     time.Duration
		n, window, cap_ int
		// minimum speed-up over one task per item (above 1), or the most
		// wall over it (at most 1: not slower than 1/maxSlower)
		goal float64
	}{
		{"no-op items", 2, false, 2 * ms, 0, 20000, 256, 1024, 10},
		{"2 ms items", 2, false, 2 * ms, 2 * ms, 2000, 256, 1024, 1.7},
		{"200 ms items", 2, false, 2 * ms, 200 * ms, 24, 64, 1024, 1 / 1.05},
		{"2 ms items, 6 ms tasks", 2, false, 6 * ms, 2 * ms, 2000, 256, 1024, 3},
		{"2 ms items on 8 CPUs", 8, false, 2 * ms, 2 * ms, 8000, 1024, 1024, 1.7},
		{"200 ms items on 8 CPUs", 8, false, 2 * ms, 200 * ms, 100, 256, 1024, 1 / 1.05},
		{"no-op items, noisy", 2, true, 2 * ms, 0, 20000, 256, 1024, 10},
		// On a busy machine the goal holds with a margin (1.5×: the order in
		// which tasks that arrive together take the slots varies, and with
		// it which ones the noise slows).
		{"2 ms items, noisy", 2, true, 2 * ms, 2 * ms, 2000, 256, 1024, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := func() *slotModel {
				m := newSlotModel(c.cpus, c.fixed, c.item, 2*ms)
				m.noisy = c.noisy
				return m
			}
			cost := executor.TaskCost{Overhead: 2 * ms, CPUs: c.cpus}
			plain := modelWall(t, model, c.n, c.window, 1, nil)
			auto := modelWall(t, model, c.n, c.window, c.cap_, &cost)
			speedup := plain.Seconds() / auto.Seconds()
			t.Logf("one per task %v, auto %v: %.2f×", plain, auto, speedup)
			if speedup < c.goal {
				t.Fatalf("auto %v against one per task %v: %.3f×, want ≥ %.3f×", auto, plain, speedup, c.goal)
			}
		})
	}
}

// Long items skip the probe's wait: when the first CPUs units outlast
// ProbeWait (40 ms of a 200 ms item), CPUs more units of one item start
// then, not when the first ones end; no more than 2·CPUs units run at once
// and every unit holds one item.
func TestAutoBatchingLongItemsEndTheProbeEarly(t *testing.T) {
	ms := time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		b := &unitLog{item: 200 * ms, t0: time.Now(), starts: map[int]time.Duration{}}
		cost := executor.TaskCost{Overhead: 2 * ms, CPUs: 2}
		lim := executor.Limits{Node: "0", Window: 64, BatchSize: 16, Auto: &cost}
		const n = 12
		out, err := executor.RunIndexed(context.Background(), lim, n, func(i int) int { return i },
			executor.Backend[int, int](b), &squareSink{out: make([]int, n)}, nil)
		if err != nil || len(out) != n {
			t.Fatal(out, err)
		}
		want := map[int]time.Duration{0: 0, 1: 0, 2: 40 * ms, 3: 40 * ms, 4: 200 * ms, 5: 200 * ms}
		for base, at := range want {
			if b.starts[base] != at {
				t.Fatalf("unit of item %d started at %v, want %v (starts %v)", base, b.starts[base], at, b.starts)
			}
		}
		if len(b.units) != n || b.peak != 4 {
			t.Fatalf("%d units for %d items, at most %d at once; want one item each, 4 at once", len(b.units), n, b.peak)
		}
	})
}

// After the probe, at most 2·CPUs units are in flight, whatever the window
// holds: units of 4 ms items (10 per unit) in a window of 1,024 items.
func TestAutoBatchingBoundsUnitsInFlight(t *testing.T) {
	ms := time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		b := &unitLog{item: 4 * ms}
		cost := executor.TaskCost{Overhead: 2 * ms, CPUs: 3}
		lim := executor.Limits{Node: "0", Window: 1024, BatchSize: 64, Auto: &cost}
		const n = 2000
		out, err := executor.RunIndexed(context.Background(), lim, n, func(i int) int { return i },
			executor.Backend[int, int](b), &squareSink{out: make([]int, n)}, nil)
		if err != nil || len(out) != n {
			t.Fatal(err)
		}
		if b.peak != 6 {
			t.Fatalf("at most %d units at once, want 6 (2·CPUs)", b.peak)
		}
	})
}
