package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// GroupTransitions are the terminal transitions of a group of attempts
// (one element per attempt in every slice), recorded by one statement.
// FinalRevision, when set, requires a RUNNING task with a smaller summary
// revision (the attempt's final progress publication goes with it);
// First marks an attempt whose final publication is its first one.
type GroupTransitions struct {
	PKs            []int64
	Attempts       []int32
	Gens           []int64
	RunIDs         []string
	States         []string
	Retry          []bool
	BackoffSeconds []float64
	Results        []*string
	ErrTypes       []*string
	ErrMessages    []*string
	ErrTracebacks  []*string
	Cancellations  []*string
	CancelErrs     []*string
	Summaries      []*string
	Expects        []*string
	FinalRevisions []*int64
	First          []bool
}

func (g GroupTransitions) args() []any {
	return []any{g.PKs, g.Attempts, g.Gens, g.RunIDs, g.States, g.Retry, g.BackoffSeconds, g.Results, g.ErrTypes,
		g.ErrMessages, g.ErrTracebacks, g.Cancellations, g.CancelErrs, g.Summaries, g.Expects, g.FinalRevisions, g.First}
}

// groupLockSQL locks the rows of the group whose fence matches: a running
// attempt's (RUNNING or CANCELLING), holding the summary the attempt
// expects; with a final publication (finrev) the task must be RUNNING with
// a smaller summary revision (as fencedLockSQL in progress.go).
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

// groupArgs is the number of GroupTransitions' parameters ($1–$17).
const groupArgs = 17

// TransitionGroup records g in one statement; its rows are the pks of
// the tasks whose fence matched. With final (the group's first progress
// publications, FinalGroup.ctes) an attempt whose first publication could
// not be written is left out.
func TransitionGroup(ctx context.Context, q Querier, g GroupTransitions, final *FinalGroup) (pgx.Rows, error) {
	args := g.args()
	sql := groupLockSQL + `, ok AS (SELECT * FROM old)` + groupTransitionSQL
	if final != nil && final.Len() > 0 {
		ctes, more := final.ctes("old", groupArgs)
		sql = groupLockSQL + ctes + `, ok AS (SELECT * FROM old WHERE NOT old.first OR old.id IN (SELECT task_pk FROM pr_run))` + groupTransitionSQL
		args = append(args, more...)
	}
	return q.Query(ctx, sql, args...)
}
