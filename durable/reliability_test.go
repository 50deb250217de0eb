package durable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
)

// kill -9 of a worker process mid-task: after the stuck timeout another
// worker marks it LOST and retries it; it ends SUCCEEDED at attempt 2.
func TestKill9WorkerProcessIsLostAndRetried(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+e.url, childReadyEnv+"=doomed-worker", blockEnv+"=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id := e.enqueue("test.sleep", `50`, EnqueueOptions{})
	running := e.waitState(id, StateRunning, 20*time.Second)
	if running.ClaimedBy != "doomed-worker" {
		t.Fatalf("claimed by %q", running.ClaimedBy)
	}
	// Mid-task, once the attempt has heartbeated.
	testwait.Until(t, 20*time.Second, "a heartbeat of the doomed worker", func() bool {
		return e.count(`SELECT count(*) FROM rayflow_tasks WHERE task_id = $1 AND last_heartbeat_at > started_at`, id) == 1
	})
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	o := fastOptions()
	o.StuckTimeout = 2 * time.Second
	e.startWorker(o)
	task := e.wait(id, 30*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || len(task.Attempts) != 2 {
		t.Fatalf("%s at attempt %d with %d archived (%s)", task.State, task.Attempt, len(task.Attempts), task.ErrorMessage)
	}
	a1, a2 := task.Attempts[0], task.Attempts[1]
	if a1.State != StateLost || a1.ClaimedBy != "doomed-worker" || a1.RunID != running.RunID || a2.State != StateSucceeded || a2.Generation <= a1.Generation {
		t.Fatalf("attempts %+v / %+v", a1, a2)
	}
	if d := a1.FinishedAt.Sub(*running.LastHeartbeatAt); d < 2*time.Second {
		t.Fatalf("declared LOST %v after its last heartbeat, before the 2 s stuck timeout", d)
	}
	t.Logf("LOST and retried %v after kill -9", time.Since(killed))
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
