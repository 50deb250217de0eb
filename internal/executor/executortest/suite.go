// Package executortest is the backend test suite of internal/executor: one
// table of map scheduler scenarios (the window is never exceeded, MaxItems
// at the cap and one over, the first failure cancels the rest within the
// bound, an ordered fold equals a sequential fold, batching keeps every
// per-item guarantee, cancellation mid-map, a panicking leaf, a leaf that
// ignores its context) that every backend runs: a deterministic fake
// backend under testing/synctest (internal/executor's tests), the
// in-process engine (engine/local's tests) and real Ray (engine/ray's
// tests).
//
// A scenario is a map over Jobs whose leaf is Leaf: it records when it ran
// (in a file, so that leaves in other processes record too), sleeps,
// fails or panics as its Job says.
package executortest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Job is one map item: what its leaf does.
type Job struct {
	I         int    `json:"i"`
	SleepMS   int    `json:"sleep_ms"`
	Fail      bool   `json:"fail"`
	Panic     bool   `json:"panic"`
	IgnoreCtx bool   `json:"ignore_ctx"` // sleep through cancellation
	Log       string `json:"log"`        // append "i start end" (unix nanoseconds) here once done
}

// JobError is a failing Job's error.
type JobError struct{ I int }

func (e *JobError) Error() string { return fmt.Sprintf("job %d failed", e.I) }

// Leaf is the scenarios' map body: it sleeps SleepMS (returning early
// with ctx's error once ctx is done, unless IgnoreCtx), records its run
// and returns I*I, or fails or panics.
func Leaf(ctx context.Context, j Job) (int, error) {
	start := time.Now()
	if j.Panic {
		panic(fmt.Sprintf("job %d panicked", j.I))
	}
	if j.SleepMS > 0 {
		d := time.Duration(j.SleepMS) * time.Millisecond
		if j.IgnoreCtx {
			time.Sleep(d)
		} else {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			}
		}
	}
	if j.Log != "" {
		f, err := os.OpenFile(j.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(f, "%d %d %d\n", j.I, start.UnixNano(), time.Now().UnixNano())
		if err := f.Close(); err != nil {
			return 0, err
		}
	}
	if j.Fail {
		return 0, &JobError{I: j.I}
	}
	return j.I * j.I, nil
}

// Combine is the scenarios' reducer: not commutative, so only a fold in
// input order gives the sequential result.
func Combine(_ context.Context, acc int, v int) (int, error) { return (acc*31 + v) % 1_000_003, nil }

// Spec is one scenario's map.
type Spec struct {
	Jobs          []Job
	Window        int // MaxConcurrency
	MaxItems      int
	ItemsPerTask  int  // 1 or less: unbatched
	AutoBatching  bool // ItemsPerTask is the cap of automatic batching (sdk's WithAutoBatching)
	CancelTimeout time.Duration
	Lazy          bool          // the input is a sequence (sdk.MapSeq), not a slice
	Fold          bool          // the map folds its results with Combine from 0
	CancelAfter   time.Duration // cancel the run this long after it started (0: never)
}

// Seq is the jobs as a sequence.
func (s Spec) Seq() iter.Seq[Job] { return slices.Values(s.Jobs) }

// Result is a scenario's outcome: the results in input order, or the
// folded accumulator, and the map's final progress.
type Result struct {
	List   []int
	Folded int
	// Progress is the map node's final state in the run's progress
	// (progress.Run: the final publication of a run through sdk.Run).
	Progress MapProgress
}

// MapProgress is a map node's final fan-out and state in its run's
// progress: every backend must end a scenario with the same one (the
// counters of a failed map only within their bounds, as how many items
// finished before the failure is a matter of timing).
type MapProgress struct {
	Submitted, Completed, InFlight int64
	Exhausted                      bool
	State                          detail.NodeState
}

// FinalMap returns the map node's final progress in a publication's
// snapshot (the one node with a fan-out).
func FinalMap(p *progress.Publication) (MapProgress, error) {
	if p == nil || p.Snapshot == nil {
		return MapProgress{}, errors.New("no final publication with a snapshot")
	}
	for _, n := range p.Snapshot.Graph.Nodes {
		if f := n.Fanout; f != nil {
			return MapProgress{Submitted: f.SubmittedItems, Completed: f.CompletedItems, InFlight: f.InFlightItems,
				Exhausted: f.InputExhausted, State: n.State}, nil
		}
	}
	return MapProgress{}, errors.New("no map node in the final publication")
}

// checkProgress checks the map's final progress against the scenario's
// outcome: exact after a success, FAILED after the map's own failure
// (within its bounds), not failed after the run's cancellation and
// untouched when the input was refused before any item.
func checkProgress(t *testing.T, s Spec, res Result, err error) {
	t.Helper()
	p := res.Progress
	var me *flowgraph.MaxItemsError
	var ce *flowgraph.CanceledError
	switch {
	case err == nil:
		n := int64(len(s.Jobs))
		if want := (MapProgress{Submitted: n, Completed: n, Exhausted: true, State: detail.NodeStateSucceeded}); p != want {
			t.Errorf("final map progress %+v, want %+v", p, want)
		}
	case errors.As(err, &me) && !s.Lazy:
		if want := (MapProgress{State: detail.NodeStatePending}); p != want {
			t.Errorf("final map progress %+v, want %+v (refused before any item)", p, want)
		}
	case errors.As(err, &ce):
		// A cancelled run's map does not fail: it keeps the counters it
		// reported last, none here (no item of the scenario finishes).
		if want := (MapProgress{State: detail.NodeStatePending}); p != want {
			t.Errorf("final map progress %+v, want %+v (cancelled before any item finished)", p, want)
		}
	default:
		if p.State != detail.NodeStateFailed || p.Completed > p.Submitted || p.InFlight != p.Submitted-p.Completed ||
			s.MaxItems > 0 && p.Submitted > int64(s.MaxItems) {
			t.Errorf("final map progress %+v, want FAILED with bounded counters", p)
		}
	}
}

// Runner runs a scenario's map on one backend.
type Runner func(ctx context.Context, s Spec) (Result, error)

// Options say how a backend runs the suite.
type Options struct {
	// Synctest runs every scenario in a testing/synctest bubble (an
	// in-process backend with fake time: the timing bounds are exact).
	Synctest bool
	// Slack is how much later than its bound a real backend may end a
	// map (scheduling, process start, Ray's own latency).
	Slack time.Duration
}

type record struct {
	i          int
	start, end int64
}

func readLog(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue // a line still being written
		}
		var r record
		r.i, _ = strconv.Atoi(fs[0])
		r.start, _ = strconv.ParseInt(fs[1], 10, 64)
		r.end, _ = strconv.ParseInt(fs[2], 10, 64)
		rs = append(rs, r)
	}
	return rs
}

// peak is the most leaves that ran at once.
func peak(rs []record) int {
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	for _, r := range rs {
		evs = append(evs, ev{r.start, 1}, ev{r.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta // an end before a start at the same instant
	})
	cur, p := 0, 0
	for _, e := range evs {
		cur += e.delta
		p = max(p, cur)
	}
	return p
}

func ran(rs []record) []int {
	var is []int
	for _, r := range rs {
		is = append(is, r.i)
	}
	slices.Sort(is)
	return is
}

func jobs(n int, j Job) []Job {
	js := make([]Job, n)
	for i := range js {
		js[i] = j
		js[i].I = i
	}
	return js
}

func squares(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i * i
	}
	return r
}

// scenario is one row of the suite.
type scenario struct {
	name  string
	spec  func() Spec
	check func(t *testing.T, s Spec, res Result, err error, rs []record, elapsed time.Duration, o Options)
}

func wantList(t *testing.T, res Result, err error, want []int) {
	t.Helper()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !slices.Equal(res.List, want) {
		t.Fatalf("results %v, want %v", res.List, want)
	}
}

func wantJobError(t *testing.T, err error, i int) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("job %d failed", i)) {
		t.Fatalf("error %v, want job %d's failure", err, i)
	}
	var ce *flowgraph.CanceledError
	if errors.As(err, &ce) {
		t.Fatalf("error %v is a cancellation, want job %d's failure", err, i)
	}
}

func within(t *testing.T, elapsed, bound time.Duration, o Options) {
	t.Helper()
	if elapsed > bound+o.Slack {
		t.Fatalf("the map took %v, want at most %v (+%v slack)", elapsed, bound, o.Slack)
	}
}

var scenarios = []scenario{
	{
		name: "window never exceeded",
		spec: func() Spec { return Spec{Jobs: jobs(12, Job{SleepMS: 200}), Window: 3, MaxItems: 100} },
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, o Options) {
			wantList(t, res, err, squares(12))
			if p := peak(rs); p > 3 || (o.Synctest && p != 3) || p < 1 {
				t.Fatalf("peak %d leaves at once, want at most the window of 3 (exactly 3 with fake time)", p)
			}
		},
	},
	{
		name: "MaxItems at the cap",
		spec: func() Spec { return Spec{Jobs: jobs(5, Job{}), Window: 2, MaxItems: 5} },
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantList(t, res, err, squares(5))
		},
	},
	{
		name: "MaxItems one over (sized input: before any leaf)",
		spec: func() Spec { return Spec{Jobs: jobs(6, Job{}), Window: 2, MaxItems: 5} },
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			var me *flowgraph.MaxItemsError
			if !errors.As(err, &me) || me.MaxItems != 5 || me.Items != 6 {
				t.Fatalf("error %v, want a *flowgraph.MaxItemsError of 6 items over 5", err)
			}
			if len(rs) != 0 {
				t.Fatalf("leaves %v ran, want none", ran(rs))
			}
		},
	},
	{
		name: "MaxItems one over (sequence: when item 6 is read)",
		spec: func() Spec { return Spec{Jobs: jobs(6, Job{}), Window: 2, MaxItems: 5, Lazy: true} },
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			var me *flowgraph.MaxItemsError
			if !errors.As(err, &me) || me.MaxItems != 5 || me.Items != 6 {
				t.Fatalf("error %v, want a *flowgraph.MaxItemsError of 6 items over 5", err)
			}
			for _, i := range ran(rs) {
				if i >= 5 {
					t.Fatalf("leaf %d ran, want none past the cap", i)
				}
			}
		},
	},
	{
		name: "MaxItems at the cap (sequence)",
		spec: func() Spec { return Spec{Jobs: jobs(5, Job{}), Window: 2, MaxItems: 5, Lazy: true} },
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantList(t, res, err, squares(5))
		},
	},
	{
		name: "first failure cancels the rest within the bound",
		spec: func() Spec {
			js := jobs(8, Job{SleepMS: 60_000})
			js[2] = Job{I: 2, SleepMS: 100, Fail: true}
			return Spec{Jobs: js, Window: 4, MaxItems: 100, CancelTimeout: 2 * time.Second}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, elapsed time.Duration, o Options) {
			wantJobError(t, err, 2)
			within(t, elapsed, 100*time.Millisecond+s.CancelTimeout, o)
			if got := ran(rs); !slices.Equal(got, []int{2}) {
				t.Fatalf("leaves %v finished, want only the failing one (2)", got)
			}
		},
	},
	{
		name: "ordered fold equals the sequential fold",
		spec: func() Spec {
			js := jobs(9, Job{})
			for i := range js {
				js[i].SleepMS = (9 - i) * 40 // later items finish first
			}
			return Spec{Jobs: js, Window: 4, MaxItems: 9, Fold: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			want := 0
			for i := range s.Jobs {
				want, _ = Combine(context.Background(), want, i*i)
			}
			if res.Folded != want {
				t.Fatalf("fold %d, want the sequential fold %d", res.Folded, want)
			}
			if p := peak(rs); p > 4 {
				t.Fatalf("peak %d leaves at once, want at most the window of 4", p)
			}
		},
	},
	{
		name: "batching keeps results, window and order per item",
		spec: func() Spec {
			return Spec{Jobs: jobs(10, Job{SleepMS: 50}), Window: 6, MaxItems: 10, ItemsPerTask: 3}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantList(t, res, err, squares(10))
			if p := peak(rs); p > 6 {
				t.Fatalf("peak %d leaves at once, want at most the window of 6", p)
			}
			if got := ran(rs); len(got) != 10 {
				t.Fatalf("leaves %v ran, want each of the 10 items once", got)
			}
		},
	},
	{
		name: "batching keeps each item's error",
		spec: func() Spec {
			js := jobs(10, Job{SleepMS: 10})
			js[4].Fail = true
			return Spec{Jobs: js, Window: 6, MaxItems: 10, ItemsPerTask: 3}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantJobError(t, err, 4)
			for _, i := range ran(rs) {
				if i == 5 {
					t.Fatalf("item 5 ran after item 4 of its batch failed")
				}
			}
		},
	},
	{
		name: "batching keeps the fold in input order",
		spec: func() Spec {
			js := jobs(10, Job{})
			for i := range js {
				js[i].SleepMS = (10 - i) * 20
			}
			return Spec{Jobs: js, Window: 6, MaxItems: 10, ItemsPerTask: 3, Fold: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			want := 0
			for i := range s.Jobs {
				want, _ = Combine(context.Background(), want, i*i)
			}
			if res.Folded != want {
				t.Fatalf("fold %d, want the sequential fold %d", res.Folded, want)
			}
		},
	},
	{
		name: "auto batching keeps results, window and order per item",
		spec: func() Spec {
			js := jobs(60, Job{})
			for i := range js {
				js[i].SleepMS = i % 3
			}
			return Spec{Jobs: js, Window: 12, MaxItems: 60, ItemsPerTask: 8, AutoBatching: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantList(t, res, err, squares(60))
			if p := peak(rs); p > 12 {
				t.Fatalf("peak %d leaves at once, want at most the window of 12", p)
			}
			if got := ran(rs); len(got) != 60 {
				t.Fatalf("leaves %v ran, want each of the 60 items once", got)
			}
		},
	},
	{
		name: "auto batching keeps results and order per item (sequence)",
		spec: func() Spec {
			return Spec{Jobs: jobs(45, Job{}), Window: 10, MaxItems: 45, ItemsPerTask: 1024 /* sdk.MaxItemsPerTask */, AutoBatching: true, Lazy: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantList(t, res, err, squares(45))
			if got := ran(rs); len(got) != 45 {
				t.Fatalf("leaves %v ran, want each of the 45 items once", got)
			}
		},
	},
	{
		name: "auto batching keeps each item's error",
		spec: func() Spec {
			js := jobs(40, Job{SleepMS: 1})
			js[23].Fail = true
			return Spec{Jobs: js, Window: 8, MaxItems: 40, ItemsPerTask: 8, AutoBatching: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			wantJobError(t, err, 23)
		},
	},
	{
		name: "auto batching keeps the fold in input order",
		spec: func() Spec {
			js := jobs(30, Job{})
			for i := range js {
				js[i].SleepMS = (30 - i) % 4
			}
			return Spec{Jobs: js, Window: 6, MaxItems: 30, ItemsPerTask: 6, AutoBatching: true, Fold: true}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			want := 0
			for i := range s.Jobs {
				want, _ = Combine(context.Background(), want, i*i)
			}
			if res.Folded != want {
				t.Fatalf("fold %d, want the sequential fold %d", res.Folded, want)
			}
		},
	},
	{
		name: "cancellation mid-map (auto batching)",
		spec: func() Spec {
			return Spec{Jobs: jobs(6, Job{SleepMS: 60_000}), Window: 6, MaxItems: 10, ItemsPerTask: 4, AutoBatching: true,
				CancelTimeout: time.Second, CancelAfter: 300 * time.Millisecond}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, elapsed time.Duration, o Options) {
			var ce *flowgraph.CanceledError
			if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want a *flowgraph.CanceledError (context.Canceled)", err)
			}
			within(t, elapsed, s.CancelAfter+s.CancelTimeout, o)
			if len(rs) != 0 {
				t.Fatalf("leaves %v finished after the cancellation", ran(rs))
			}
		},
	},
	{
		name: "cancellation mid-map",
		spec: func() Spec {
			return Spec{Jobs: jobs(6, Job{SleepMS: 60_000}), Window: 3, MaxItems: 10, CancelTimeout: time.Second,
				CancelAfter: 300 * time.Millisecond}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, elapsed time.Duration, o Options) {
			var ce *flowgraph.CanceledError
			if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want a *flowgraph.CanceledError (context.Canceled)", err)
			}
			within(t, elapsed, s.CancelAfter+s.CancelTimeout, o)
			if len(rs) != 0 {
				t.Fatalf("leaves %v finished after the cancellation", ran(rs))
			}
		},
	},
	{
		name: "a panicking leaf fails the map",
		spec: func() Spec {
			js := jobs(5, Job{SleepMS: 20})
			js[1] = Job{I: 1, Panic: true}
			return Spec{Jobs: js, Window: 2, MaxItems: 5}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, _ time.Duration, _ Options) {
			if err == nil || !strings.Contains(err.Error(), "job 1 panicked") {
				t.Fatalf("error %v, want job 1's panic", err)
			}
		},
	},
	{
		name: "a leaf that ignores its context is abandoned after the cancel timeout",
		spec: func() Spec {
			return Spec{Jobs: []Job{{I: 0, SleepMS: 60_000, IgnoreCtx: true}, {I: 1, SleepMS: 100, Fail: true}},
				Window: 2, MaxItems: 2, CancelTimeout: 500 * time.Millisecond}
		},
		check: func(t *testing.T, s Spec, res Result, err error, rs []record, elapsed time.Duration, o Options) {
			wantJobError(t, err, 1)
			within(t, elapsed, 100*time.Millisecond+s.CancelTimeout, o)
		},
	},
}

// Run runs every scenario on one backend.
func Run(t *testing.T, run Runner, o Options) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			body := func(t *testing.T) {
				s := sc.spec()
				log := filepath.Join(t.TempDir(), "leaves")
				for i := range s.Jobs {
					s.Jobs[i].Log = log
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if s.CancelAfter > 0 {
					tm := time.AfterFunc(s.CancelAfter, cancel)
					defer tm.Stop()
				}
				start := time.Now()
				res, err := run(ctx, s)
				elapsed := time.Since(start)
				sc.check(t, s, res, err, readLog(t, log), elapsed, o)
				checkProgress(t, s, res, err)
				if o.Synctest {
					// Let an abandoned leaf end (fake time) before the bubble does.
					time.Sleep(2 * time.Minute)
				}
			}
			if o.Synctest {
				synctest.Test(t, body)
				return
			}
			body(t)
		})
	}
}
