package durable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// The resumable map of the resume tests. Every execution of a leaf
// appends one fixed-width line to <dir>/exec.log (at its start) and, when
// it succeeds, to <dir>/ok.log, so that executions are counted across
// processes (a killed worker's too) by file size.

const countLine = 9 // "%08d\n"

// ResumeIn asks for N items; the last FailLast of them fail unless
// <dir>/fixed exists, once every other item of the attempt has succeeded
// (so that they all are recorded first). They are the last admitted, so
// the others never wait for a slot (a window's or a Ray CPU's) they hold.
type ResumeIn struct {
	Dir      string `json:"dir"`
	N        int    `json:"n"`
	FailLast int    `json:"fail_last,omitempty"`
	SleepUS  int    `json:"sleep_us,omitempty"`
}

type ResumeItem struct {
	In ResumeIn `json:"in"`
	I  int      `json:"i"`
}

func ResumeItems(_ context.Context, in ResumeIn) ([]ResumeItem, error) {
	out := make([]ResumeItem, in.N)
	for i := range out {
		out[i] = ResumeItem{In: in, I: i}
	}
	return out, nil
}

var errResumeItem = errors.New("resume test: a deterministic item failure")

func appendCount(path string, i int) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%08d\n", i)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// lines counts the lines of a count file.
func lines(path string) int {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return int(st.Size() / countLine)
}

func ResumeLeaf(ctx context.Context, it ResumeItem) (int, error) {
	dir := it.In.Dir
	if err := appendCount(filepath.Join(dir, "exec.log"), it.I); err != nil {
		return 0, err
	}
	if it.In.SleepUS > 0 {
		time.Sleep(time.Duration(it.In.SleepUS) * time.Microsecond)
	}
	if others := it.In.N - it.In.FailLast; it.I >= others {
		if _, err := os.Stat(filepath.Join(dir, "fixed")); err != nil {
			for lines(filepath.Join(dir, "ok.log")) < others {
				select {
				case <-ctx.Done():
					return 0, context.Cause(ctx)
				case <-time.After(2 * time.Millisecond):
				}
			}
			return 0, fmt.Errorf("item %d: %w", it.I, errResumeItem)
		}
	}
	if err := appendCount(filepath.Join(dir, "ok.log"), it.I); err != nil {
		return 0, err
	}
	return it.I*7 + 1, nil
}

// ResumeSum is an order-sensitive checksum of the map's results.
func ResumeSum(_ context.Context, xs []int) (int64, error) {
	var s int64
	for i, x := range xs {
		s = (s*31 + int64(x)*int64(i+1)) % 1_000_000_007
	}
	return s, nil
}

// resumeWindow is the resumable map's admission window.
const resumeWindow = 128

var ResumeFlow = sdk.Chain3(sdk.Step(ResumeItems),
	sdk.Map(sdk.Step(ResumeLeaf)).WithLimits(sdk.Limits{MaxConcurrency: resumeWindow}).WithResume(), sdk.Step(ResumeSum))

// narrowWindow is the window of NarrowResumeFlow, the repair scenario's:
// one item at a time, so that the first failing item is admitted only
// after the scheduler took the last succeeding item's result (a wider
// window lets its failure overtake a succeeded item whose result is
// still on its way, which then is not recorded), and so that a failing
// item, which waits for every other item to succeed, never holds a Ray
// CPU an item it waits for needs.
const narrowWindow = 1

// NarrowResumeFlow is ResumeFlow with a window of narrowWindow.
var NarrowResumeFlow = sdk.Chain3(sdk.Step(ResumeItems),
	sdk.Map(sdk.Step(ResumeLeaf)).WithLimits(sdk.Limits{MaxConcurrency: narrowWindow}).WithResume(), sdk.Step(ResumeSum))

func init() {
	Register("test.resume", ResumeFlow)
	Register("test.resume.narrow", NarrowResumeFlow)
}

// uninterrupted is the flow's result of an uninterrupted run of in
// (without an item ledger: every item runs).
func uninterrupted(t *testing.T, in ResumeIn) int64 {
	t.Helper()
	in.Dir, in.FailLast = t.TempDir(), 0
	want, err := sdk.Run(t.Context(), ResumeFlow, in)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func resumeInput(t *testing.T, in ResumeIn) string {
	t.Helper()
	return fmt.Sprintf(`{"dir":%q,"n":%d,"fail_last":%d,"sleep_us":%d}`, in.Dir, in.N, in.FailLast, in.SleepUS)
}

// resumeWorkerOptions are a resume test's worker options: its flows run
// in the worker's process (rayAddr "") or on the Ray cluster at rayAddr.
func resumeWorkerOptions(t *testing.T, rayAddr string) WorkerOptions {
	t.Helper()
	o := fastOptions()
	if rayAddr != "" {
		eng, err := rayengine.New(t.Context(), rayengine.Options{Address: rayAddr, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		o.Engine = eng
	}
	return o
}

// killOutcome is what resumeAfterKill measured.
type killOutcome struct {
	first, second int // executions of attempt 1 (before the kill) and attempt 2
	equal         bool
	task          *Task
	want          int64
}

// resumeAfterKill runs a 10,000-item resumable map in a worker process,
// kills it (-9) once half of the items plus a window have executed (the
// items in flight and not yet recorded at the kill are then within one
// window of half) and lets another worker finish the task.
func resumeAfterKill(t *testing.T, rayAddr string) killOutcome {
	t.Helper()
	e := newEnv(t)
	const n = 10_000
	in := ResumeIn{Dir: t.TempDir(), N: n, SleepUS: 200}
	execLog := filepath.Join(in.Dir, "exec.log")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+e.url, childReadyEnv+"=doomed-resume-worker", childRayEnv+"="+rayAddr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id := e.enqueue("test.resume", resumeInput(t, in), EnqueueOptions{})
	testwait.Until(t, 120*time.Second, "half of the items executed", func() bool { return lines(execLog) >= n/2+resumeWindow })
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	first := lines(execLog)
	o := resumeWorkerOptions(t, rayAddr)
	o.StuckTimeout = 2 * time.Second
	e.startWorker(o)
	task := e.wait(id, 300*time.Second)
	want := uninterrupted(t, ResumeIn{N: n})
	return killOutcome{first: first, second: lines(execLog) - first, task: task, want: want,
		equal: task.State == StateSucceeded && string(task.Result) == fmt.Sprint(want)}
}

// repairOutcome is what repairAfterFailures measured.
type repairOutcome struct {
	recorded, executed int // the origin's ledger rows, the repair's executions
	items, failed      int // the map's items, those that failed in the origin
	equal              bool
	origin, task       *Task
	want               int64
}

// repairAfterFailures runs a resumable map (NarrowResumeFlow) whose last
// 1 % of items fail, then fixes them and repairs the task: 10,000 items
// (100 failing) in the worker's process, 2,000 (20 failing) on Ray.
func repairAfterFailures(t *testing.T, rayAddr string) repairOutcome {
	t.Helper()
	e := newEnv(t)
	e.startWorker(resumeWorkerOptions(t, rayAddr))
	flow, n, failing := "test.resume.narrow", 10_000, 100
	if rayAddr != "" {
		n, failing = 2_000, 20
	}
	in := ResumeIn{Dir: t.TempDir(), N: n, FailLast: failing}
	execLog := filepath.Join(in.Dir, "exec.log")
	id := e.enqueue(flow, resumeInput(t, in), EnqueueOptions{MaxAttempts: 1})
	origin := e.wait(id, 300*time.Second)
	recorded := e.count(`SELECT count(*) FROM rayflow_item_ledger l JOIN rayflow_tasks t ON t.id = l.task_pk WHERE t.task_id = $1`, id)
	if err := os.WriteFile(filepath.Join(in.Dir, "fixed"), nil, 0o644); err != nil { // the fix
		t.Fatal(err)
	}
	before := lines(execLog)
	repair, err := e.c.Repair(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	task := e.wait(repair, 300*time.Second)
	want := uninterrupted(t, ResumeIn{N: n})
	return repairOutcome{recorded: recorded, executed: lines(execLog) - before, items: n, failed: failing, origin: origin, task: task, want: want,
		equal: task.State == StateSucceeded && string(task.Result) == fmt.Sprint(want)}
}

// kill -9 of the worker process at about half of a 10,000-item resumable
// map: attempt 2 executes only the items attempt 1 had not recorded
// (make bench-resume sets that beside the goal, half plus one window),
// and the result is an uninterrupted run's.
func TestResumeAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	for _, runner := range []string{"local", "ray"} {
		t.Run(runner, func(t *testing.T) {
			addr := ""
			if runner == "ray" {
				addr = rayAddress(t)
			}
			const n = 10_000
			o := resumeAfterKill(t, addr)
			if !o.equal || o.task.Attempt != 2 {
				t.Fatalf("task %s at attempt %d, result %s (%s); want SUCCEEDED at attempt 2 with %d", o.task.State, o.task.Attempt, o.task.Result, o.task.ErrorMessage, o.want)
			}
			t.Logf("attempt 1 executed %d items before kill -9, attempt 2 executed %d (half plus one window: %d)", o.first, o.second, n/2+resumeWindow)
			if o.first >= n {
				t.Fatalf("attempt 1 executed all %d items before the kill", o.first)
			}
			if o.first+o.second < n {
				t.Errorf("%d + %d executions cover fewer than the %d items", o.first, o.second, n)
			}
			// What attempt 2 runs again of attempt 1's executions: the items
			// in flight at the kill (at most a window), the finished ones
			// waiting for their chunk's Record (fewer than a chunk) and the
			// chunk being recorded (the scheduler records one chunk at a time
			// in the background; a chunk is min(window, 1024) items).
			chunk := min(resumeWindow, 1024)
			if again, limit := o.first+o.second-n, resumeWindow+2*chunk; again > limit {
				t.Errorf("attempt 2 ran %d of attempt 1's %d executions again, over a window and two chunks (%d)", again, o.first, limit)
			}
		})
	}
}

// 1 % of the items fail on attempt 1 for a deterministic reason; after
// the fix, a repair under the same build executes exactly those items.
func TestRepairExecutesOnlyTheFailedItems(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	for _, runner := range []string{"local", "ray"} {
		t.Run(runner, func(t *testing.T) {
			addr := ""
			if runner == "ray" {
				addr = rayAddress(t)
			}
			o := repairAfterFailures(t, addr)
			if o.origin.State != StateFailed || o.recorded != o.items-o.failed {
				t.Fatalf("the origin is %s (%s) with %d recorded items; want FAILED with the %d that succeeded", o.origin.State, o.origin.ErrorMessage, o.recorded, o.items-o.failed)
			}
			if !o.equal {
				t.Fatalf("the repair is %s with %s (%s), want SUCCEEDED with %d", o.task.State, o.task.Result, o.task.ErrorMessage, o.want)
			}
			if o.executed != o.failed {
				t.Errorf("the repair executed %d items, want exactly the %d that failed", o.executed, o.failed)
			}
		})
	}
}
