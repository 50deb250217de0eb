package executor

import (
	"math"
	"runtime"
	"time"
)

// Automatic item batching (sdk's WithAutoBatching): the executor chooses
// each unit's size, from 1 to the map's cap, from the item durations it
// observes. The rule is the engines' common one; only the TaskCost differs
// (the Ray engine's per-task overhead and cluster CPUs, the local engine's
// own small overhead and GOMAXPROCS), so a local run predicts a Ray run.

// OverheadShare is the part of a task's time the sizer lets its fixed
// per-task cost take: a batch aims at TaskCost.Overhead/OverheadShare of
// item time (40 ms of items for Ray's 2 ms).
const OverheadShare = 0.05

// LocalTaskOverhead is the local engine's own cost of one unit (handing it
// to a worker and its results back), measured by the executor's
// benchmarks as a few microseconds; the sizer's local TaskCost uses it.
const LocalTaskOverhead = 20 * time.Microsecond

// TaskCost is what automatic batching knows of an engine.
type TaskCost struct {
	// Overhead is one task's fixed cost beside its items' own time
	// (submitting, scheduling and starting it, returning its results).
	Overhead time.Duration
	// CPUs is how many tasks run at once (a Ray cluster's CPUs, the local
	// GOMAXPROCS); 0 or less: GOMAXPROCS.
	CPUs int
}

// LocalTaskCost is the local engine's TaskCost.
func LocalTaskCost() TaskCost {
	return TaskCost{Overhead: LocalTaskOverhead, CPUs: runtime.GOMAXPROCS(0)}
}

// Sizer chooses the size of an automatically batched map's units. It is
// not safe for concurrent use (the map's loop owns it).
type Sizer struct {
	max    int     // the cap (the plan's maximum_items_per_task, within the window)
	window int     // the map's window (items)
	cpus   int     // tasks that run at once
	target float64 // seconds of items a unit aims at
	per    float64 // estimated seconds per item; below 0: nothing observed yet
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
	return &Sizer{max: max(min(maxItems, window), 1), window: window, cpus: cpus,
		target: max(c.Overhead, 0).Seconds() / OverheadShare, per: -1}
}

// CPUs is how many units the sizer keeps in flight at least while items
// remain.
func (s *Sizer) CPUs() int { return s.cpus }

// Probing reports whether no unit finished yet: units are then of one item
// and at most CPUs of them run, so the first finished ones measure the
// items before any larger unit starts.
func (s *Sizer) Probing() bool { return s.per < 0 }

// PerItem is the current estimate of one item's own time (below 0: none
// yet).
func (s *Sizer) PerItem() time.Duration {
	if s.per < 0 {
		return -1
	}
	return time.Duration(s.per * float64(time.Second))
}

// Size is the next unit's size, 1 … the cap: enough items for the
// per-task cost to be OverheadShare of the unit, yet small enough that
// CPUs units fit the window and, when remaining (items not yet started;
// below 0: unknown) is known, that they spread over CPUs units.
func (s *Sizer) Size(remaining int) int {
	if s.per < 0 {
		return 1
	}
	k := s.max
	if s.per > 0 {
		// ceil, forgiving the float error of an exact quotient
		if want := math.Ceil(s.target/s.per - 1e-9); want < float64(k) {
			k = max(int(want), 1)
		}
	}
	k = min(k, max(s.window/s.cpus, 1))
	if remaining >= 0 {
		k = min(k, max((remaining+s.cpus-1)/s.cpus, 1))
	}
	return max(k, 1)
}

// Observe records a unit of n items that succeeded in wall, with
// inFlight units (itself included) in flight beside it (the most of when
// it started and when it ended). When more units than CPUs were in flight
// they shared the CPUs (or queued for them), so the unit's own time is
// taken as wall·CPUs/inFlight, and shared by its items. The task's fixed
// cost is not taken off: it is whatever the engine really spends (more
// than TaskCost.Overhead on a loaded head), so a unit's items carry it,
// and a larger unit carries less of it per item: tiny items grow units
// towards the cap, and items of d settle at about target/d - overhead/d.
// The estimate is the mean of the previous one and this unit's.
func (s *Sizer) Observe(n int, wall time.Duration, inFlight int) {
	if n <= 0 || wall < 0 {
		return
	}
	own := wall.Seconds() * float64(s.cpus) / float64(max(inFlight, s.cpus))
	per := own / float64(n)
	if s.per < 0 {
		s.per = per
		return
	}
	s.per = (s.per + per) / 2
}
