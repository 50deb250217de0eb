package durable

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rayflow/rayflow/engine/progressstore"
	"github.com/rayflow/rayflow/gen/summary"
)

// Group commit of terminal transitions. A worker's attempts that end
// within groupWait of each other are recorded by one statement (one round
// trip, one transaction) instead of one each: PostgreSQL builds a
// statement's CHECK expressions, opens its indexes and plans its
// foreign-key checks once per statement and table, which is most of what
// a no-op task costs it. The fencing stays per task: the statement locks
// and changes only the rows whose own fence (task, RUNNING or CANCELLING,
// attempt, generation, run id, and the summary the attempt expects on the
// row) matches, and returns their ids; an attempt whose row did not match
// is then recorded alone by the per-task path (transition), exactly as if
// it had never been grouped — a stale neighbour changes nothing of the
// others, and its own writes (the archive, the final progress
// publication) are those of its row only, so nothing of it lands.
const (
	groupWait = time.Millisecond
	maxGroup  = 64
)

// groupReq is one attempt's terminal transition waiting for its group.
type groupReq struct {
	f           fence
	o           outcome
	sum, expect *string
	finRev      *int64 // the final publication's revision (nil: none)
	done        chan groupResult
}

type groupResult struct {
	matched bool // the transition (and its final publication) committed
	err     error
}

type grouper struct {
	mu      sync.Mutex
	pending []*groupReq
	leader  bool
	sending int
	arrived chan struct{}
}

// groupable returns o's group request, or nil when o must be recorded by
// the per-task path: a fence other than a running attempt's, an outcome
// whose expected summary is unknown, a final publication that is not
// lock-only or a first one.
func groupable(f fence, o outcome) *groupReq {
	if f.runID == nil || !slices.Equal(f.states, runningStates) {
		return nil
	}
	r := &groupReq{f: f, o: o, done: make(chan groupResult, 1)}
	switch {
	case o.final != nil:
		fin := o.final
		if !fin.Groupable() {
			return nil
		}
		if e := fin.Expect(); e != nil {
			s := string(e)
			r.expect = &s
		}
		if fin.IsTerminal(summary.TerminalState(o.state)) {
			s := string(fin.Summary())
			r.sum = &s
		} else {
			r.sum = envelope(fin.Summary(), o.state)
		}
		rev := fin.Revision()
		r.finRev = &rev
	case o.lastKnown:
		if o.lastSummary != nil {
			s := string(o.lastSummary)
			r.expect = &s
		}
		r.sum = envelope(o.lastSummary, o.state)
	default:
		return nil
	}
	return r
}

// submit records r with whatever other attempts end within groupWait: the
// first to arrive leads, waits for the others (or until every running
// attempt of the worker is in the group) and sends the group.
func (w *Worker) submit(r *groupReq) groupResult {
	g := &w.group
	g.mu.Lock()
	g.pending = append(g.pending, r)
	lead := !g.leader
	g.leader = true
	g.mu.Unlock()
	if !lead {
		signal(g.arrived)
		return <-r.done
	}
	deadline := time.NewTimer(groupWait)
	defer deadline.Stop()
wait:
	for {
		g.mu.Lock()
		n := len(g.pending)
		all := n+g.sending >= w.runningCount()
		g.mu.Unlock()
		if n >= maxGroup || all {
			break
		}
		select {
		case <-g.arrived:
		case <-deadline.C:
			break wait
		}
	}
	w.lead()
	return <-r.done
}

// lead sends the pending requests as groups until none is left; the
// leader role ends when it takes the last of them.
func (w *Worker) lead() {
	g := &w.group
	for {
		g.mu.Lock()
		batch := g.pending
		if len(batch) > maxGroup {
			batch = batch[:maxGroup]
		}
		g.pending = slices.Clone(g.pending[len(batch):])
		// With requests left (over maxGroup) this goroutine stays the
		// leader and sends them next; else the next arrival leads.
		more := len(g.pending) > 0
		g.leader = more
		g.sending += len(batch)
		g.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		res := w.sendGroup(batch)
		g.mu.Lock()
		g.sending -= len(batch)
		g.mu.Unlock()
		for i, q := range batch {
			q.done <- res[i]
		}
		if !more {
			return
		}
	}
}

// sendGroup records batch with one statement; an error is every request's.
func (w *Worker) sendGroup(batch []*groupReq) []groupResult {
	res := make([]groupResult, len(batch))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	matched, err := transitionGroup(ctx, w.pool, batch)
	w.stats.groups.Add(1)
	w.stats.grouped.Add(int64(len(batch)))
	for i, q := range batch {
		res[i] = groupResult{matched: matched[q.f.pk], err: err}
	}
	return res
}

// groupLockSQL locks the rows of the group whose fence matches: a running
// attempt's (RUNNING or CANCELLING), holding the summary the attempt
// expects; with a final publication (finrev) the task must be RUNNING with
// a smaller summary revision (progressstore's fencedLockSQL).
const groupLockSQL = `WITH x AS (
  SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::uuid[], $5::text[], $6::bool[], $7::float8[], $8::text[],
    $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bigint[], $17::bool[])
  AS x(pk, att, gen, run, st, retry, backoff, result, et, em, etr, cs, ce, sum, expect, finrev, first)
), old AS (
  SELECT t.id, t.attempt_number, t.execution_generation, t.workflow_run_id, t.claimed_by, t.workflow_plan_fingerprint, t.started_at,
    x.st, x.retry, x.backoff, x.result, x.et, x.em, x.etr, x.cs, x.ce, x.sum, x.first
  FROM rayflow_tasks t JOIN x ON t.id = x.pk
  WHERE t.state IN ('RUNNING', 'CANCELLING') AND t.attempt_number = x.att AND t.execution_generation = x.gen
    AND t.workflow_run_id = x.run AND t.workflow_progress_summary_json IS NOT DISTINCT FROM x.expect
    AND (x.finrev IS NULL OR (t.state = 'RUNNING' AND (t.progress_summary_revision IS NULL OR t.progress_summary_revision < x.finrev)))
  ORDER BY t.id FOR UPDATE OF t
)`

// groupTransitionSQL archives and updates the locked rows (ok: old, less
// the first publications that could not be written), as transitionSQL
// does one.
const groupTransitionSQL = `, arch AS (
  INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, claimed_by,
    workflow_plan_fingerprint, started_at, finished_at, error_type, error_message, error_traceback, result_data,
    workflow_progress_summary_json)
  SELECT id, attempt_number, execution_generation, workflow_run_id, st, claimed_by, workflow_plan_fingerprint,
    started_at, now(), et, em, etr, result, sum FROM ok
)
UPDATE rayflow_tasks t SET
  state = CASE WHEN ok.retry THEN 'QUEUED' ELSE ok.st END,
  result_data = CASE WHEN ok.retry THEN NULL ELSE ok.result END,
  finished_at = CASE WHEN ok.retry THEN NULL ELSE now() END,
  attempt_number = t.attempt_number + CASE WHEN ok.retry THEN 1 ELSE 0 END,
  execution_generation = t.execution_generation + CASE WHEN ok.retry THEN 1 ELSE 0 END,
  workflow_run_id = CASE WHEN ok.retry THEN NULL ELSE t.workflow_run_id END,
  claimed_by = CASE WHEN ok.retry THEN NULL ELSE t.claimed_by END,
  started_at = CASE WHEN ok.retry THEN NULL ELSE t.started_at END,
  last_heartbeat_at = CASE WHEN ok.retry THEN NULL ELSE t.last_heartbeat_at END,
  run_after = CASE WHEN ok.retry THEN now() + make_interval(secs => ok.backoff) ELSE t.run_after END,
  enqueued_at = CASE WHEN ok.retry THEN now() ELSE t.enqueued_at END,
  queue_deadline_at = CASE WHEN NOT ok.retry THEN t.queue_deadline_at WHEN t.queue_timeout_seconds IS NULL THEN NULL
    ELSE now() + make_interval(secs => ok.backoff) + make_interval(secs => t.queue_timeout_seconds) END,
  error_type = ok.et, error_message = ok.em, error_traceback = ok.etr,
  cancellation_status = coalesce(ok.cs, t.cancellation_status),
  cancellation_error = coalesce(ok.ce, t.cancellation_error),
  workflow_progress_summary_json = CASE WHEN ok.retry THEN NULL ELSE ok.sum END,
  progress_summary_revision = CASE WHEN ok.retry OR ok.sum IS NULL THEN NULL ELSE 9223372036854775807 END
FROM ok WHERE t.id = ok.id AND t.execution_generation = ok.execution_generation AND t.attempt_number = ok.attempt_number
RETURNING t.id`

// transitionGroup records the group's terminal transitions (with their
// final progress publications) in one statement and returns the task pks
// whose fence matched: those, and only those, committed (their final
// publications marked committed). A database error records none.
func transitionGroup(ctx context.Context, db DB, batch []*groupReq) (map[int64]bool, error) {
	n := len(batch)
	pks, gens := make([]int64, n), make([]int64, n)
	atts := make([]int32, n)
	runs, states := make([]string, n), make([]string, n)
	retry, first := make([]bool, n), make([]bool, n)
	backoff := make([]float64, n)
	result, et, em, etr, cs, ce, sum, expect := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n),
		make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	finrev := make([]*int64, n)
	var fg progressstore.FinalGroup
	for i, q := range batch {
		f, o := q.f, q.o
		pks[i], atts[i], gens[i], runs[i] = f.pk, int32(f.attempt), f.gen, *f.runID
		states[i], retry[i], backoff[i], result[i] = string(o.state), o.retry, o.backoffSeconds, o.result
		et[i], em[i], etr[i] = nullText(truncate(o.errType, 512)), nullText(truncate(o.errMsg, MaxErrorMessageBytes)), nullText(truncate(o.errTrace, MaxErrorMessageBytes))
		cs[i], ce[i] = nullText(o.cancellation), nullText(truncate(o.cancelErr, 4096))
		sum[i], expect[i], finrev[i] = q.sum, q.expect, q.finRev
		if o.final != nil {
			first[i] = fg.Add(o.final)
		}
	}
	args := []any{pks, atts, gens, runs, states, retry, backoff, result, et, em, etr, cs, ce, sum, expect, finrev, first}
	sql := groupLockSQL + `, ok AS (SELECT * FROM old)` + groupTransitionSQL
	if fg.Len() > 0 {
		ctes, more := fg.CTEs("old", len(args))
		sql = groupLockSQL + ctes + `, ok AS (SELECT * FROM old WHERE NOT old.first OR old.id IN (SELECT task_pk FROM pr_run))` + groupTransitionSQL
		args = append(args, more...)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
	}
	matched := make(map[int64]bool, n)
	for rows.Next() {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
		}
		matched[pk] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
	}
	for _, q := range batch {
		if matched[q.f.pk] && q.o.final != nil {
			q.o.final.Committed()
		}
	}
	return matched, nil
}
