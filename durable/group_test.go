package durable

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/sdk"
)

// deferredFinal runs test.noop as attempt c with a progress sink that
// defers its final publication, as the worker does, and returns the
// outcome the worker would record (its final publication attached).
func deferredFinal(t *testing.T, e *env, c claimed) outcome {
	t.Helper()
	fe, err := DefaultRegistry.lookup("test.noop")
	if err != nil {
		t.Fatal(err)
	}
	m, err := fe.materialize(false)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := pgstore.NewSink(e.pool, pgstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sink.DeferFinal()
	id := sdk.RunIdentity{TaskExecutionPK: c.pk, AttemptNumber: int64(c.attempt), ExecutionGeneration: c.gen, RunID: c.runID}
	out, err := fe.run(t.Context(), c.input, c.attempt, []sdk.RunOption{sdk.WithPlan(m), sdk.WithRunIdentity(id), sdk.WithProgress(sink)})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	o := outcome{state: StateSucceeded, result: &s, final: sink.TakeFinal()}
	if o.final == nil || !o.final.Groupable() {
		t.Fatalf("a no-op run's final publication is not a groupable first one: %v", o.final)
	}
	o.lastKnown, o.lastSummary = true, sink.LastSummary()
	return o
}

// TestGroupTransitionFencesEachTask: randomized groups of terminal
// transitions, some with their run's first progress publication, mixing
// live attempts with superseded ones (swept and requeued, a stale
// generation, a stale expected summary) and cancelling ones. Exactly the
// live rows change: each is archived once with its progress storage; a
// stale member writes nothing (no archive, no run row, no summary) and
// does not hold its neighbours back.
func TestGroupTransitionFencesEachTask(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	for iter := range 30 {
		queue := fmt.Sprintf("group-%d", iter)
		k := 1 + rng.IntN(8)
		for range k {
			e.enqueue("test.noop", "1", EnqueueOptions{Queue: queue, MaxAttempts: 5})
		}
		cs, err := claimTasks(ctx, e.pool, queue, k, "G", "local", "", nil)
		if err != nil || len(cs) != k {
			t.Fatalf("claim: %v (%d of %d)", err, len(cs), k)
		}
		want := map[int64]bool{}
		withFinal := map[int64]bool{}
		kinds := map[int64]string{}
		var batch []*groupReq
		for _, c := range cs {
			var o outcome
			if rng.IntN(2) == 0 {
				o = deferredFinal(t, e, c)
				withFinal[c.pk] = true
			} else {
				s := "1"
				o = outcome{state: StateSucceeded, result: &s, lastKnown: true}
			}
			f := c.fence()
			switch rng.IntN(5) {
			case 0, 1:
				kinds[c.pk], want[c.pk] = "live", true
			case 2: // swept LOST and requeued before the group lands
				kinds[c.pk] = "swept"
				if n, err := transition(ctx, e.pool, c.fence(), outcome{state: StateLost, retry: true}); err != nil || n != 1 {
					t.Fatalf("sweep: %d %v", n, err)
				}
			case 3: // an older generation's fence
				kinds[c.pk] = "stale generation"
				f.Gen--
			case 4: // cancel requested: the transition still lands, its final publication (RUNNING only) does not
				kinds[c.pk] = "cancelling"
				if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'CANCELLING' WHERE id = $1`, c.pk); err != nil {
					t.Fatal(err)
				}
				want[c.pk] = !withFinal[c.pk]
			}
			if rng.IntN(6) == 0 && kinds[c.pk] == "live" { // the row holds another summary than the attempt believes
				kinds[c.pk] = "stale summary"
				want[c.pk] = false
				o.lastSummary = []byte(`{"not":"the row's"}`)
				if o.final != nil {
					o.final = nil // a first publication expects none: believe one instead
				}
			}
			r := groupable(f, o)
			if r == nil {
				t.Fatalf("%s: not groupable", kinds[c.pk])
			}
			batch = append(batch, r)
		}
		matched, err := transitionGroup(ctx, e.pool, batch)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		for _, c := range cs {
			if matched[c.pk] != want[c.pk] {
				t.Fatalf("iteration %d: %s task (final %v) matched %v, want %v", iter, kinds[c.pk], withFinal[c.pk], matched[c.pk], want[c.pk])
			}
			var state string
			var archived, runs int
			var sum *string
			if err := e.pool.QueryRow(ctx, `SELECT state, workflow_progress_summary_json,
  (SELECT count(*) FROM rayflow_task_attempts a WHERE a.task_pk = t.id AND a.execution_generation = $2),
  (SELECT count(*) FROM rayflow_progress_runs r WHERE r.task_pk = t.id)
FROM rayflow_tasks t WHERE id = $1`, c.pk, c.gen).Scan(&state, &sum, &archived, &runs); err != nil {
				t.Fatal(err)
			}
			wantArchived := map[bool]int{true: 1, false: 0}[want[c.pk]]
			if kinds[c.pk] == "swept" {
				wantArchived = 1 // the sweep's, as LOST
			}
			wantRuns := map[bool]int{true: 1, false: 0}[want[c.pk] && withFinal[c.pk]]
			if archived != wantArchived || runs != wantRuns {
				t.Fatalf("iteration %d: %s task (final %v): %d attempts archived (want %d), %d run rows (want %d)",
					iter, kinds[c.pk], withFinal[c.pk], archived, wantArchived, runs, wantRuns)
			}
			switch {
			case want[c.pk] && state != "SUCCEEDED":
				t.Fatalf("iteration %d: live %s task is %s", iter, kinds[c.pk], state)
			case !want[c.pk] && state == "SUCCEEDED":
				t.Fatalf("iteration %d: %s task SUCCEEDED", iter, kinds[c.pk])
			case want[c.pk] && withFinal[c.pk] && sum == nil:
				t.Fatalf("iteration %d: live task without its final summary", iter)
			}
			if want[c.pk] && withFinal[c.pk] {
				// What the group wrote reads back intact (manifest, pages,
				// links, detail rows, counters, summary).
				rep, err := pgstore.Verify(ctx, e.pool, c.pk, 0)
				if err != nil || rep.Availability != summary.DetailAvailabilityAvailable || len(rep.Problems) > 0 {
					t.Fatalf("iteration %d: verify: %v %+v", iter, err, rep)
				}
			}
		}
	}
}

// TestGroupCommitManyConcurrentFinishes: 150 attempts of one worker end at
// once (more than maxGroup): every one is recorded exactly once, in far
// fewer statements than attempts, none waiting on a group that is never
// sent.
func TestGroupCommitManyConcurrentFinishes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const n = 150
	for range n {
		e.enqueue("test.noop", "1", EnqueueOptions{Queue: "many"})
	}
	var cs []claimed
	for len(cs) < n {
		got, err := claimTasks(ctx, e.pool, "many", n-len(cs), "M", "local", "", nil)
		if err != nil || len(got) == 0 {
			t.Fatalf("claim: %v (%d)", err, len(got))
		}
		cs = append(cs, got...)
	}
	o := fastOptions()
	o.Queue = "many"
	w, err := NewWorker(e.pool, o)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.inUse = n // the attempts run in this worker's slots
	w.mu.Unlock()
	done := make(chan struct{})
	for _, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			s := "1"
			w.finish(c.fence(), outcome{state: StateSucceeded, result: &s, lastKnown: true}, w.log, 0)
		}()
	}
	for range n {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("a finish never returned")
		}
	}
	var succeeded, archived int
	if err := e.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rayflow_tasks WHERE queue_name = 'many' AND state = 'SUCCEEDED'),
  (SELECT count(*) FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk WHERE t.queue_name = 'many')`).Scan(&succeeded, &archived); err != nil {
		t.Fatal(err)
	}
	groups, grouped := w.stats.groups.Load(), w.stats.grouped.Load()
	if succeeded != n || archived != n || w.Stats().Finished != n || grouped != n {
		t.Fatalf("%d succeeded, %d archived, %d finished, %d grouped; want %d", succeeded, archived, w.Stats().Finished, grouped, n)
	}
	if groups > n/4 {
		t.Fatalf("%d statements for %d transitions ending together", groups, n)
	}
	t.Logf("%d transitions in %d statements", n, groups)
}
