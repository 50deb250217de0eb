package durable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
)

// startChild starts a worker process (this test binary) named id, whose
// test.sleep blocks; with defaults it runs with the default options. The
// process is killed when the test ends.
func (e *env) startChild(id string, defaults bool) *exec.Cmd {
	e.t.Helper()
	return e.startChildOn(id, "", defaults)
}

// startChildOn is startChild claiming from queue ("": the default).
func (e *env) startChildOn(id, queue string, defaults bool) *exec.Cmd {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+e.url, childReadyEnv+"="+id, blockEnv+"=1", childQueueEnv+"="+queue)
	if defaults {
		cmd.Env = append(cmd.Env, childDefaultsEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// A hung worker process (SIGSTOP: its session and lock stay, its
// heartbeats stop) mid-task: after the stuck timeout another worker marks
// the attempt LOST and retries it; it ends SUCCEEDED at attempt 2.
func TestHungWorkerProcessIsLostAfterStuckTimeout(t *testing.T) {
	e := newEnv(t)
	cmd := e.startChild("hung-worker", false)
	id := e.enqueue("test.sleep", `50`, EnqueueOptions{})
	running := e.waitState(id, StateRunning, 20*time.Second)
	if running.ClaimedBy != "hung-worker" {
		t.Fatalf("claimed by %q", running.ClaimedBy)
	}
	// Mid-task, once the attempt has heartbeated.
	testwait.Until(t, 20*time.Second, "a heartbeat of the hung worker", func() bool {
		return e.count(`SELECT count(*) FROM rayflow_tasks WHERE task_id = $1 AND last_heartbeat_at > started_at`, id) == 1
	})
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	o := fastOptions()
	o.StuckTimeout = 2 * time.Second
	e.startWorker(o)
	task := e.wait(id, 30*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || len(task.Attempts) != 2 {
		t.Fatalf("%s at attempt %d with %d archived (%s)", task.State, task.Attempt, len(task.Attempts), task.ErrorMessage)
	}
	a1, a2 := task.Attempts[0], task.Attempts[1]
	if a1.State != StateLost || a1.ClaimedBy != "hung-worker" || a1.RunID != running.RunID || a2.State != StateSucceeded || a2.Generation <= a1.Generation {
		t.Fatalf("attempts %+v / %+v", a1, a2)
	}
	if !strings.Contains(a1.ErrorMessage, "no heartbeat for 2s") {
		t.Fatalf("attempt 1 LOST with %q, want the heartbeat timeout", a1.ErrorMessage)
	}
	if d := a1.FinishedAt.Sub(*running.LastHeartbeatAt); d < 2*time.Second {
		t.Fatalf("declared LOST %v after its last heartbeat, before the 2 s stuck timeout", d)
	}
	t.Logf("LOST and retried %v after SIGSTOP", time.Since(stopped))
}

// kill -9 of a worker process mid-task, every worker with the default
// options (stuck timeout 300 s, retry backoff 60 s): its session ends, so
// another worker marks the attempt LOST and attempt 2 is RUNNING within
// 5 s of the kill.
func TestKill9WorkerUnderDefaultsRecoversInSeconds(t *testing.T) {
	e := newEnv(t)
	cmd := e.startChild("doomed-worker", true)
	id := e.enqueue("test.sleep", `50`, EnqueueOptions{})
	running := e.waitState(id, StateRunning, 20*time.Second)
	if running.ClaimedBy != "doomed-worker" {
		t.Fatalf("claimed by %q", running.ClaimedBy)
	}
	survivor := e.startWorker(WorkerOptions{ID: "survivor", Logger: testLogger()})
	// The survivor idles at its longest poll interval (the slowest case).
	testwait.Until(t, 30*time.Second, "the survivor polling at its longest interval", func() bool {
		return survivor.Stats().ClaimQueries >= 7
	})
	recovery := killAndTimeRecovery(t, e.pool, cmd, id)
	task := e.wait(id, 30*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || len(task.Attempts) != 2 {
		t.Fatalf("%s at attempt %d with %d archived (%s)", task.State, task.Attempt, len(task.Attempts), task.ErrorMessage)
	}
	a1 := task.Attempts[0]
	if a1.State != StateLost || a1.ClaimedBy != "doomed-worker" || !strings.Contains(a1.ErrorMessage, "database session ended") {
		t.Fatalf("attempt 1 %s by %s: %q", a1.State, a1.ClaimedBy, a1.ErrorMessage)
	}
	if recovery > 5*time.Second {
		t.Fatalf("attempt 2 RUNNING %v after kill -9, the goal is 5 s", recovery)
	}
	t.Logf("attempt 2 RUNNING %v after kill -9", recovery)
}

// killAndTimeRecovery kills cmd (kill -9) and returns the time from the
// kill to task id's attempt 2 being RUNNING (both on the server's clock);
// it fails t when that takes over 60 s.
func killAndTimeRecovery(t *testing.T, pool *pgxpool.Pool, cmd *exec.Cmd, id string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	var killed time.Time
	if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var started time.Time
	err := testwait.Poll(ctx, 10*time.Millisecond, "attempt 2 of "+id+" started", func(ctx context.Context) (bool, error) {
		err := pool.QueryRow(ctx, `SELECT started_at FROM rayflow_tasks WHERE task_id = $1 AND attempt_number = 2 AND started_at IS NOT NULL`, id).Scan(&started)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return started.Sub(killed)
}

// Only the first retry after a worker's session ended skips the backoff:
// when the worker running attempt 2 dies too, attempt 3 waits the usual
// backoff (a task that kills its workers does not loop at full speed).
// The sweeping worker (default options) claims from another queue, so
// that each attempt runs in a worker process of its own.
func TestSecondDeadWorkerLostBacksOff(t *testing.T) {
	e := newEnv(t)
	queue := ownKey(t, "doomed")
	e.startWorker(WorkerOptions{ID: "sweeper", Queue: ownKey(t, "elsewhere"), Logger: testLogger()})
	id := e.enqueue("test.sleep", `50`, EnqueueOptions{Queue: queue})
	runAfterLost := func(attempt int) time.Duration {
		t.Helper()
		cmd := e.startChildOn(fmt.Sprintf("doomed-%d", attempt), queue, true)
		e.waitState(id, StateRunning, 20*time.Second)
		if err := cmd.Process.Signal(os.Kill); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		var wait time.Duration
		testwait.Until(t, 30*time.Second, fmt.Sprintf("attempt %d LOST and the task QUEUED", attempt), func() bool {
			var secs float64
			err := e.pool.QueryRow(t.Context(), `SELECT extract(epoch FROM t.run_after - a.finished_at)::float8
FROM rayflow_tasks t JOIN rayflow_task_attempts a ON a.task_pk = t.id AND a.attempt_number = $2
WHERE t.task_id = $1 AND t.state = 'QUEUED' AND a.state = 'LOST'`, id, attempt).Scan(&secs)
			wait = time.Duration(secs * float64(time.Second))
			return err == nil
		})
		return wait
	}
	if wait := runAfterLost(1); wait > time.Second {
		t.Fatalf("attempt 2 runnable %v after attempt 1 was LOST, want at once", wait)
	}
	// backoffSeconds(60 s, 3) = 120 s before attempt 3.
	if wait := runAfterLost(2); wait < 119*time.Second {
		t.Fatalf("attempt 3 runnable %v after attempt 2 was LOST, want the 120 s backoff", wait)
	}
}

// A live worker whose step blocks (without looking at its context) is
// never marked LOST while another worker checks for lost sessions many
// times over: its session lock stays held. The blocked worker runs with
// the default options; the sweeping one polls and sweeps every few tens
// of milliseconds (with the default stuck timeout, so that only a session
// check could mark the attempt LOST).
func TestBlockedLiveWorkerIsNotLost(t *testing.T) {
	e := newEnv(t)
	queue := ownKey(t, "blocked")
	e.startWorker(WorkerOptions{ID: "blocked-worker", Queue: queue, Logger: testLogger()})
	id := e.enqueue("test.ignorectx", `5000`, EnqueueOptions{Queue: queue})
	e.waitState(id, StateRunning, 20*time.Second)
	o := fastOptions()
	o.ID, o.Queue, o.StuckTimeout, o.SweepInterval = "sweeper", queue, DefaultStuckTimeout, 20*time.Millisecond
	sweeper := e.startWorker(o)
	task := e.wait(id, 60*time.Second)
	if task.State != StateSucceeded || task.Attempt != 1 || len(task.Attempts) != 1 || task.Attempts[0].ClaimedBy != "blocked-worker" {
		t.Fatalf("%s at attempt %d, %d archived (%s)", task.State, task.Attempt, len(task.Attempts), task.ErrorMessage)
	}
	if n := sweeper.Stats().Sweeps; n < 50 {
		t.Fatalf("the sweeper swept %d times during the blocked step, want at least 50", n)
	}
}

// 4 workers × 2,000 no-op tasks: every task runs exactly once.
func TestFourWorkersRunEveryTaskExactlyOnce(t *testing.T) {
	e := newEnv(t)
	const n = 2000
	base := ownInputs(t, n)
	ctx := t.Context()
	var workers []*Worker
	for i := range 4 {
		o := fastOptions()
		o.ID = fmt.Sprintf("w%d", i)
		workers = append(workers, startWorkerOn(t, pgtest.PoolAt(t, e.url), o))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if _, err := e.c.EnqueueJSON(ctx, "test.noop", []byte(fmt.Sprint(base+i)), EnqueueOptions{Priority: i % 7}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	testwait.Until(t, 120*time.Second, fmt.Sprintf("%d tasks SUCCEEDED", n), func() bool {
		return e.count(`SELECT count(*) FROM rayflow_tasks WHERE state = 'SUCCEEDED'`) >= n
	})
	if c := e.count(`SELECT count(*) FROM rayflow_tasks WHERE state <> 'SUCCEEDED' OR attempt_number <> 1`); c != 0 {
		t.Fatalf("%d tasks not succeeded at attempt 1", c)
	}
	if c := e.count(`SELECT count(*) FROM rayflow_task_attempts WHERE state = 'SUCCEEDED' AND attempt_number = 1`); c != n {
		t.Fatalf("%d archived attempts, want %d", c, n)
	}
	for i := range n {
		v, ok := executions.Load(base + i)
		if !ok || v.(*countBox).get() != 1 {
			got := 0
			if ok {
				got = v.(*countBox).get()
			}
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
	for _, w := range workers {
		t.Logf("%s claimed %d in %d claim queries", w.ID(), w.Stats().Claimed, w.Stats().ClaimQueries)
		if w.Stats().Claimed == 0 {
			t.Errorf("%s claimed nothing", w.ID())
		}
	}
}

// Randomized stale-writer races: whatever supersedes an attempt (LOST and
// retry, cancel and retry, failure and manual retry), every later write
// of the old attempt changes 0 rows; and when an attempt's completion
// races the sweeper, exactly one of them wins.
func TestStaleWritersChangeNothing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	claimOne := func(worker string) claimed {
		t.Helper()
		cs, err := claimTasks(ctx, e.pool, "races", 1, worker, "local", "", nil)
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %v (%d)", err, len(cs))
		}
		return cs[0]
	}
	s := "1"
	for iter := range 60 {
		id := e.enqueue("test.noop", "1", EnqueueOptions{Queue: "races", MaxAttempts: 5})
		a := claimOne("A")
		// Supersede A.
		switch kind := rng.IntN(3); kind {
		case 0: // the sweeper declares it LOST and requeues it
			n, err := transition(ctx, e.pool, a.fence(), outcome{state: StateLost, retry: true})
			if err != nil || n != 1 {
				t.Fatalf("lost: %d %v", n, err)
			}
		case 1: // cancelled, then retried by hand
			if out, _ := e.c.Cancel(ctx, id, Expect{}); out != CancelAccepted {
				t.Fatal(out)
			}
			if n, err := transition(ctx, e.pool, a.fence(), outcome{state: StateCancelled}); err != nil || n != 1 {
				t.Fatalf("cancelled: %d %v", n, err)
			}
			if out, _ := e.c.Retry(ctx, id, Expect{}); out != RetryAccepted {
				t.Fatal(out)
			}
		case 2: // failed without retry, then retried by hand
			if n, err := transition(ctx, e.pool, a.fence(), outcome{state: StateFailed, errMsg: "x"}); err != nil || n != 1 {
				t.Fatalf("failed: %d %v", n, err)
			}
			if out, _ := e.c.Retry(ctx, id, Expect{}); out != RetryAccepted {
				t.Fatal(out)
			}
		}
		b := claimOne("B")
		// A's stale writes race B's live ones, in random order.
		var stale atomic.Int64
		var wg sync.WaitGroup
		staleWrites := []func() (int64, error){
			func() (int64, error) {
				_, err := heartbeatOnce(ctx, e.pool, a.fence())
				if errors.Is(err, pgx.ErrNoRows) {
					return 0, nil
				}
				return 1, err
			},
			func() (int64, error) { return pinPlan(ctx, e.pool, a.fence(), "sha256:stale", nil) },
			func() (int64, error) {
				return transition(ctx, e.pool, a.fence(), outcome{state: StateSucceeded, result: &s})
			},
			func() (int64, error) {
				return transition(ctx, e.pool, a.fence(), outcome{state: StateFailed, retry: true})
			},
			func() (int64, error) {
				return transition(ctx, e.pool, a.fence(), outcome{state: StateLost, retry: true})
			},
		}
		rng.Shuffle(len(staleWrites), func(i, j int) { staleWrites[i], staleWrites[j] = staleWrites[j], staleWrites[i] })
		for _, w := range staleWrites {
			wg.Go(func() {
				n, err := w()
				if err != nil {
					t.Error(err)
				}
				stale.Add(n)
			})
		}
		var live int64
		wg.Go(func() {
			if _, err := heartbeatOnce(ctx, e.pool, b.fence()); err != nil {
				t.Errorf("B's heartbeat: %v", err)
			}
			n, err := transition(ctx, e.pool, b.fence(), outcome{state: StateSucceeded, result: &s})
			if err != nil {
				t.Error(err)
			}
			live = n
		})
		wg.Wait()
		if stale.Load() != 0 || live != 1 {
			t.Fatalf("iteration %d: stale writes changed %d rows, live %d", iter, stale.Load(), live)
		}
		task, err := e.c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != StateSucceeded || task.RunID != b.runID || task.Attempt != b.attempt || len(task.Attempts) != b.attempt || task.PlanFingerprint != "" {
			t.Fatalf("iteration %d: %s run %s attempt %d archived %d pin %q", iter, task.State, task.RunID, task.Attempt, len(task.Attempts), task.PlanFingerprint)
		}
		// The completion of C races the sweeper declaring C LOST.
		id2 := e.enqueue("test.noop", "1", EnqueueOptions{Queue: "races"})
		c := claimOne("C")
		var won [2]int64
		var wg2 sync.WaitGroup
		wg2.Go(func() { won[0], _ = transition(ctx, e.pool, c.fence(), outcome{state: StateSucceeded, result: &s}) })
		wg2.Go(func() { won[1], _ = transition(ctx, e.pool, c.fence(), outcome{state: StateLost, retry: true}) })
		wg2.Wait()
		if won[0]+won[1] != 1 {
			t.Fatalf("iteration %d: completion %d and sweeper %d both changed the row", iter, won[0], won[1])
		}
		t2, _ := e.c.Get(ctx, id2)
		if want := map[bool]State{true: StateSucceeded, false: StateQueued}[won[0] == 1]; t2.State != want || len(t2.Attempts) != 1 {
			t.Fatalf("iteration %d: %s with %d archived", iter, t2.State, len(t2.Attempts))
		}
		if t2.State == StateQueued { // leave nothing claimable behind
			if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET queue_name = 'done' WHERE task_id = $1`, id2); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// PostgreSQL restarted mid-run: workers reconnect; no task is lost or
// completed twice (each runs exactly once here, since no attempt exceeds
// the stuck timeout).
func TestPostgresRestartMidRun(t *testing.T) {
	cl := pgtest.StartCluster(t)
	url := pgtest.NewDatabase(t, cl.URL)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c := NewClient(pool, nil)
	const n = 300
	base := ownInputs(t, n)
	for i := range n {
		if _, err := c.EnqueueJSON(ctx, "test.slowcount", fmt.Appendf(nil, `{"n":%d,"ms":40}`, base+i), EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := fastOptions()
	o.HeartbeatInterval, o.StuckTimeout, o.Concurrency = 500*time.Millisecond, 10*time.Second, 5
	for i := range 2 {
		o.ID = fmt.Sprintf("r%d", i)
		startWorkerOn(t, pgtest.PoolAt(t, url), o)
	}
	// succeeded counts the SUCCEEDED tasks; -1 while the server restarts.
	succeeded := func() int {
		var k int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE state = 'SUCCEEDED'`).Scan(&k); err != nil {
			return -1
		}
		return k
	}
	testwait.Until(t, 120*time.Second, "a quarter of the tasks SUCCEEDED", func() bool { return succeeded() >= n/4 })
	if err := cl.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the outage under test: the server stays down a second
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 120*time.Second, fmt.Sprintf("%d tasks SUCCEEDED after the restart", n), func() bool { return succeeded() >= n })
	var bad, archived int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state <> 'SUCCEEDED'), (SELECT count(*) FROM rayflow_task_attempts WHERE state = 'SUCCEEDED') FROM rayflow_tasks`).Scan(&bad, &archived); err != nil {
		t.Fatal(err)
	}
	if bad != 0 || archived != n {
		t.Fatalf("%d tasks not succeeded, %d successful attempts archived (want %d)", bad, archived, n)
	}
	for i := range n {
		v, ok := executions.Load(base + i)
		if !ok || v.(*countBox).get() != 1 {
			t.Fatalf("task %d ran %v times", i, v)
		}
	}
}

var _ = context.Background
