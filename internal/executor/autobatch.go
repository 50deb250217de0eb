package executor

import (
	"math"
	"runtime"
	"slices"
	"time"
)

// Automatic item batching (sdk's WithAutoBatching): the executor chooses
// each unit's size, from 1 to the map's cap, from the units it saw finish.
// The rule is the engines' common one; only the TaskCost differs (the Ray
// engine's per-task overhead and cluster CPUs, the local engine's own small
// overhead and GOMAXPROCS), so a local run predicts a Ray run.
//
// The model: a unit of n items keeps one of CPUs slots busy for a + b·n
// (its service time), where a is the task's fixed cost and b an item's own
// time. The sizer fits a and b from the last sizerRecent finished units
// (Theil–Sen: b is the median slope between units whose sizes differ by a
// tenth or more, a the median of what b leaves of each unit, so that a few
// units slowed by something else, or the cold start of the first ones, do
// not sway them; without units of different sizes a keeps its last value
// and b is the median of what a leaves per item) and sizes units so that
// a, never taken below TaskCost.Overhead, is OverheadShare of them:
// n = a/(OverheadShare·b).
//
// A unit's service time is not its wall time: up to 2·CPUs units are in
// flight, so a unit may wait for a slot. Slots are taken first come, first
// served, so unit i (in start order) got its slot when it started or, if
// later, when the (i-CPUs)th unit (in finish order) ended; its service time
// runs from then to its end. When the units share the CPUs instead (local
// goroutines), the same estimate is about each unit's own share.

// AutoBatchingUnit is the message of the Debug log record (log/slog) that
// the executor writes as a unit of an automatically batched map finishes:
// its attributes are node, unit (its number, in start order), items,
// started and ended (since the map started), in_flight (the units in flight
// as it ended, itself included), and the sizer's fit after it, fixed_cost
// and per_item.
const AutoBatchingUnit = "rayflow: automatic batching unit"

// AutoBatchingLong is the message of the Debug log record written when the
// first units of an automatically batched map outlast Sizer.ProbeWait
// (attributes node and after): its items run one per unit from then on.
const AutoBatchingLong = "rayflow: automatic batching: long items, one per unit"

// OverheadShare is the part of a task's time the sizer lets its fixed
// per-task cost take: a unit aims at a/OverheadShare of item time (40 ms of
// items for Ray's nominal 2 ms).
const OverheadShare = 0.05

// LocalTaskOverhead is the local engine's own cost of one unit (handing it
// to a worker and its results back), measured by the executor's
// benchmarks as a few microseconds; the sizer's local TaskCost uses it.
const LocalTaskOverhead = 20 * time.Microsecond

// sizerRecent is how many of the last finished units the sizer's fit
// reads.
const sizerRecent = 16

// sizerGrowth bounds a unit's size to this many times the largest unit
// seen finish, so that one early estimate (the probes' cold start) cannot
// commit much of the map to units of a size never observed.
const sizerGrowth = 4

// TaskCost is what automatic batching knows of an engine.
type TaskCost struct {
	// Overhead is one task's fixed cost beside its items' own time
	// (submitting, scheduling and starting it, returning its results): the
	// least the sizer assumes.
	Overhead time.Duration
	// CPUs is how many tasks run at once (a Ray cluster's CPUs, the local
	// GOMAXPROCS); 0 or less: GOMAXPROCS.
	CPUs int
}

// LocalTaskCost is the local engine's TaskCost.
func LocalTaskCost() TaskCost {
	return TaskCost{Overhead: LocalTaskOverhead, CPUs: runtime.GOMAXPROCS(0)}
}

// Sizer chooses the size of an automatically batched map's units and how
// many of them are in flight. It is not safe for concurrent use (the map's
// loop owns it).
type Sizer struct {
	max      int     // the cap (the plan's maximum_items_per_task, within the window)
	window   int     // the map's window (items)
	cpus     int     // tasks that run at once
	overhead float64 // TaskCost.Overhead, seconds

	// The last sizerRecent finished units' sizes and service times
	// (seconds), a ring by finish order.
	sizes   []float64
	service []float64
	seen    int
	a, b    float64   // fitted fixed cost and per-item time (s); b < 0: nothing observed yet
	long    bool      // the probes outlasted the target before any finished: one item per unit
	largest int       // the largest unit seen finish
	scratch []float64 // the fit's slopes
	rest    []float64 // the fit's per-unit remainders

	started  int             // units started
	finished int             // units finished
	ends     []time.Duration // the last units' end times, by finish order (a ring)
}

// NewSizer returns the sizer of a map whose units hold at most maxItems
// items (≥ 1) and whose window is window items (0 or less: unbounded).
func NewSizer(maxItems, window int, c TaskCost) *Sizer {
	if window <= 0 {
		window = int(^uint(0) >> 1)
	}
	cpus := c.CPUs
	if cpus <= 0 {
		cpus = runtime.GOMAXPROCS(0)
	}
	s := &Sizer{max: max(min(maxItems, window), 1), window: window, cpus: cpus,
		overhead: max(c.Overhead, 0).Seconds(), a: max(c.Overhead, 0).Seconds(), b: -1,
		ends: make([]time.Duration, 4*cpus+4), sizes: make([]float64, sizerRecent), service: make([]float64, sizerRecent),
		rest: make([]float64, sizerRecent)}
	// No fixed cost: nothing to amortise, one item per unit from the start.
	s.long = s.overhead == 0
	return s
}

// CPUs is how many tasks of the map run at once.
func (s *Sizer) CPUs() int { return s.cpus }

// Probing reports whether the sizer knows nothing of the items yet (no
// unit finished, and the first ones have not outlasted ProbeWait): units
// are then of one item and at most CPUs of them run.
func (s *Sizer) Probing() bool { return s.b < 0 && !s.long }

// MaxUnits is how many units may be in flight: CPUs while probing, then
// 2·CPUs (every slot busy, and a unit waiting for each, so that no slot
// waits for the loop to hear of its unit's end and start the next).
func (s *Sizer) MaxUnits() int {
	if s.Probing() {
		return s.cpus
	}
	return 2 * s.cpus
}

// ProbeWait is how long the first units may run before the sizer takes the
// items to be long: one item then takes at least a/OverheadShare, which is
// a whole unit's aim, so items run one per unit and the probe phase ends
// without waiting for them.
func (s *Sizer) ProbeWait() time.Duration {
	return time.Duration(s.overhead / OverheadShare * float64(time.Second))
}

// ProbeExpired tells the sizer that ProbeWait passed with the first units
// still running: items run one per unit until units finish.
func (s *Sizer) ProbeExpired() {
	if s.b < 0 {
		s.long = true
	}
}

// PerItem is the current estimate of one item's own time (below 0: none
// yet).
func (s *Sizer) PerItem() time.Duration {
	if s.b < 0 {
		return -1
	}
	return time.Duration(s.b * float64(time.Second))
}

// Overhead is the current estimate of a unit's fixed cost (before any unit
// finished: TaskCost.Overhead).
func (s *Sizer) Overhead() time.Duration {
	return time.Duration(max(s.a, s.overhead) * float64(time.Second))
}

// Size is the next unit's size, 1 … the cap: enough items for the fixed
// cost to be OverheadShare of the unit (at most sizerGrowth times the
// largest unit seen), yet small enough that CPUs units fit the window and,
// when remaining (items not yet started; below 0: unknown) is known, that
// the rest spreads over 2·CPUs units, so that units shrink towards the end
// and the slots finish together.
func (s *Sizer) Size(remaining int) int {
	if s.b < 0 {
		return 1 // probing, or long items
	}
	k := s.max
	if s.b > 0 {
		a := max(s.a, s.overhead)
		// ceil, forgiving the float error of an exact quotient
		if want := math.Ceil(a/(OverheadShare*s.b) - 1e-9); want < float64(k) {
			k = max(int(want), 1)
		}
	}
	k = min(k, sizerGrowth*s.largest)
	k = min(k, max(s.window/s.cpus, 1))
	if remaining >= 0 {
		k = min(k, max((remaining+2*s.cpus-1)/(2*s.cpus), 1))
	}
	return max(k, 1)
}

// Start records that a unit starts and returns its number, which Finish
// takes back.
func (s *Sizer) Start() int {
	s.started++
	return s.started - 1
}

// Finish records that unit seq (Start's number) of n items, started at
// start, ended successfully at end (both since any one origin, the same
// for all units of the map), and refits the fixed cost and the per-item
// time.
func (s *Sizer) Finish(seq, n int, start, end time.Duration) {
	from := start
	if j := seq - s.cpus; j >= 0 && j < s.finished && s.finished-j <= len(s.ends) {
		from = max(from, s.ends[j%len(s.ends)])
	}
	s.ends[s.finished%len(s.ends)] = end
	s.finished++
	if n <= 0 || end < from {
		return
	}
	s.observe(n, (end - from).Seconds())
}

// observe adds a unit of n items that kept its slot busy for sec to the
// fit.
func (s *Sizer) observe(n int, sec float64) {
	s.sizes[s.seen%sizerRecent], s.service[s.seen%sizerRecent] = float64(n), sec
	s.seen++
	s.largest = max(s.largest, n)
	m := min(s.seen, sizerRecent)
	xs, ys := s.sizes[:m], s.service[:m]
	// b: the median slope between units whose sizes differ by a tenth or
	// more (units of one size say nothing of the fixed cost).
	slopes := s.scratch[:0]
	for i := range m {
		for j := i + 1; j < m; j++ {
			if d := xs[j] - xs[i]; math.Abs(d) >= 0.1*max(xs[i], xs[j]) {
				slopes = append(slopes, (ys[j]-ys[i])/d)
			}
		}
	}
	s.scratch = slopes
	rest := s.rest[:m]
	if len(slopes) > 0 {
		b := max(median(slopes), 0)
		for i := range m {
			rest[i] = ys[i] - b*xs[i]
		}
		s.a = max(median(rest), 0)
	}
	// b given a: the median of the units' per-item time beside it.
	for i := range m {
		rest[i] = max(ys[i]-s.a, 0) / xs[i]
	}
	s.b = median(rest)
}

// median is the median of xs, which it reorders.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
