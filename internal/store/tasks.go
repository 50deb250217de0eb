package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The durable task queue's statements (durable): rayflow_tasks,
// rayflow_task_attempts and rayflow_plans (migrations 0001, 0003, 0004,
// 0006 and 0010).

// NotifyChannel carries "q:<queue>" (a task became claimable) and
// "c:<task pk>" (a running task's cancellation was requested).
const NotifyChannel = "rayflow_tasks"

const listenSQL = "LISTEN " + NotifyChannel

// Listen subscribes conn's session to NotifyChannel.
func Listen(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, listenSQL)
	return err
}

const notifySQL = `SELECT pg_notify($1, $2)`

// Notify sends payload on NotifyChannel (delivered at commit).
func Notify(ctx context.Context, q Querier, payload string) error {
	_, err := q.Exec(ctx, notifySQL, NotifyChannel, payload)
	return err
}

// Fence identifies one attempt of one task: a write that carries it in
// its WHERE clause changes 0 rows once the attempt is superseded.
type Fence struct {
	PK      int64
	States  []string // RUNNING and CANCELLING for a running attempt
	Attempt int
	Gen     int64
	RunID   *string // nil for a task that was never claimed in this attempt
}

// fenceWhere matches Fence's arguments $1–$5.
const fenceWhere = `id = $1 AND state = ANY($2::text[]) AND attempt_number = $3
 AND execution_generation = $4 AND workflow_run_id IS NOT DISTINCT FROM $5::uuid`

func (f Fence) args(more ...any) []any {
	return append([]any{f.PK, f.States, f.Attempt, f.Gen, f.RunID}, more...)
}

// Outcome is a terminal transition of a fenced attempt: the attempt is
// archived with State; the task becomes State, or QUEUED as the next
// attempt (after BackoffSeconds) when Retry is set. Summary is the
// terminal progress summary stored with it; with Check the transition
// changes nothing unless the row's summary is Expect.
type Outcome struct {
	State          string
	Retry          bool
	BackoffSeconds float64
	Result         *string
	ErrType        *string
	ErrMessage     *string
	ErrTraceback   *string
	Cancellation   *string // nil keeps the task's cancellation status
	CancelErr      *string
	Summary        *string
	Expect         *string
	Check          bool
}

func (o Outcome) args(f Fence) []any {
	return f.args(o.State, o.Retry, o.BackoffSeconds, o.Result, o.ErrType, o.ErrMessage, o.ErrTraceback,
		o.Cancellation, o.CancelErr, o.Summary, o.Expect, o.Check)
}

// transitionSQL archives the fenced attempt and updates the task in one
// statement: the row is locked by the first CTE, so nothing can change it
// between the copy and the update. With $17 it changes nothing unless the
// row's progress summary is $16 (the one $15 was derived from).
const transitionSQL = transitionCTEs + transitionUpdate

// transitionFencedSQL is transitionSQL aborting its batch (RF001) when it
// changes no row.
const transitionFencedSQL = transitionCTEs + `, upd AS (` + transitionUpdate + ` RETURNING 1)
SELECT rayflow_require(count(*), 'RF001', 'durable: the attempt fence no longer matches') FROM upd`

const transitionCTEs = `WITH old AS (
  SELECT id, attempt_number, execution_generation, workflow_run_id, claimed_by, workflow_plan_fingerprint, started_at
  FROM rayflow_tasks WHERE ` + fenceWhere + `
    AND (NOT $17::bool OR workflow_progress_summary_json IS NOT DISTINCT FROM $16::text) FOR UPDATE
), arch AS (
  INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, claimed_by,
    workflow_plan_fingerprint, started_at, finished_at, error_type, error_message, error_traceback, result_data,
    workflow_progress_summary_json)
  SELECT id, attempt_number, execution_generation, workflow_run_id, $6, claimed_by, workflow_plan_fingerprint,
    started_at, now(), $10, $11, $12, $9, $15::text FROM old
)`

const transitionUpdate = `UPDATE rayflow_tasks t SET
  state = CASE WHEN $7 THEN 'QUEUED' ELSE $6 END,
  result_data = CASE WHEN $7 THEN NULL ELSE $9 END,
  finished_at = CASE WHEN $7 THEN NULL ELSE now() END,
  attempt_number = t.attempt_number + CASE WHEN $7 THEN 1 ELSE 0 END,
  execution_generation = t.execution_generation + CASE WHEN $7 THEN 1 ELSE 0 END,
  workflow_run_id = CASE WHEN $7 THEN NULL ELSE t.workflow_run_id END,
  claimed_by = CASE WHEN $7 THEN NULL ELSE t.claimed_by END,
  started_at = CASE WHEN $7 THEN NULL ELSE t.started_at END,
  last_heartbeat_at = CASE WHEN $7 THEN NULL ELSE t.last_heartbeat_at END,
  run_after = CASE WHEN $7 THEN now() + make_interval(secs => $8) ELSE t.run_after END,
  enqueued_at = CASE WHEN $7 THEN now() ELSE t.enqueued_at END,
  queue_deadline_at = CASE WHEN NOT $7 THEN t.queue_deadline_at WHEN t.queue_timeout_seconds IS NULL THEN NULL
    ELSE now() + make_interval(secs => $8) + make_interval(secs => t.queue_timeout_seconds) END,
  error_type = $10, error_message = $11, error_traceback = $12,
  cancellation_status = coalesce($13, t.cancellation_status),
  cancellation_error = coalesce($14, t.cancellation_error),
  workflow_progress_summary_json = CASE WHEN $7 THEN NULL ELSE $15::text END,
  progress_summary_revision = CASE WHEN $7 OR $15::text IS NULL THEN NULL ELSE 9223372036854775807 END
FROM old WHERE t.id = old.id AND t.` + `execution_generation = old.execution_generation AND t.attempt_number = old.attempt_number`

// Transition ends the fenced attempt; the command tag counts the rows
// changed (0 when the fence no longer matches).
func Transition(ctx context.Context, q Querier, f Fence, o Outcome) (pgconn.CommandTag, error) {
	return q.Exec(ctx, transitionSQL, o.args(f)...)
}

// QueueTransitionFenced queues Transition on b, aborting the batch
// (SQLSTATE RF001) when the fence matches no row.
func QueueTransitionFenced(b *pgx.Batch, f Fence, o Outcome) {
	b.Queue(transitionFencedSQL, o.args(f)...)
}

// TaskSummary reads the fenced attempt's progress summary (nil for none;
// pgx.ErrNoRows when the fence no longer matches).
func TaskSummary(ctx context.Context, q RowReader, f Fence) (*string, error) {
	var sum *string
	err := q.QueryRow(ctx, `SELECT workflow_progress_summary_json FROM rayflow_tasks WHERE `+fenceWhere, f.args()...).Scan(&sum)
	return sum, err
}

// Heartbeat refreshes the fenced attempt's heartbeat and returns the
// task's state (pgx.ErrNoRows when the fence no longer matches).
func Heartbeat(ctx context.Context, q Querier, f Fence) (string, error) {
	var state string
	err := q.QueryRow(ctx, `UPDATE rayflow_tasks SET last_heartbeat_at = now() WHERE `+fenceWhere+` RETURNING state`, f.args()...).Scan(&state)
	return state, err
}

// PinPlan records a plan's fingerprint and selection under the fence
// when the task has no pin (0 rows otherwise).
func PinPlan(ctx context.Context, q Querier, f Fence, fingerprint string, selection *string) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `UPDATE rayflow_tasks SET workflow_plan_fingerprint = $6,
 workflow_plan_pinned_attempt = attempt_number, workflow_plan_selection = $7
WHERE `+fenceWhere+` AND workflow_plan_fingerprint IS NULL`, f.args(fingerprint, selection)...)
}

// StorePlan records a plan's canonical JSON once per fingerprint.
func StorePlan(ctx context.Context, q Querier, fingerprint, planJSON string) error {
	_, err := q.Exec(ctx, `INSERT INTO rayflow_plans (fingerprint, plan_json) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		fingerprint, planJSON)
	return err
}

// Claim asks for up to N QUEUED tasks of Queue, claimed by Worker.
// Flows, Fingerprints and Selections (one per registered flow) pin the
// plan of a task that has none; a task pinned to a plan (a retry) is
// claimed only when its flow's fingerprint here is the pinned one, so
// that it waits for a worker of the build that can reproduce its plan.
type Claim struct {
	Queue        string
	N            int
	Worker       string
	Runner       string
	RayAddress   *string
	Flows        []string
	Fingerprints []string
	Selections   []string
	CheckOrphans bool
}

const claimPins = `WITH p AS (SELECT * FROM unnest($6::text[], $7::text[], $8::text[]) AS p(flow, fp, sel))`

const claimSQL = claimPins + "\n" + claimUpdate

// claimCheckSQL is claimSQL followed, when some running task's worker
// session ended, by one marker row of id 0 (the orphan check of an idle
// poll, in the same statement).
var claimCheckSQL = claimPins + `, c(id, task_id, flow, attempt, max_attempts, gen, run_id, input, timeout, fp, pinned, priority, created, waited) AS (
` + claimUpdate + `)
SELECT * FROM c
UNION ALL
SELECT 0::bigint, '', '', 0, 0, 0::bigint, '', '', 0, '', 0, 0, now(), 0::float8
WHERE EXISTS (SELECT 1 FROM rayflow_tasks t JOIN rayflow_workers w ON w.worker_id = t.claimed_by WHERE ` + orphanedWhere + `)`

const claimUpdate = `UPDATE rayflow_tasks t SET state = 'RUNNING', execution_generation = t.execution_generation + 1,
  workflow_run_id = gen_random_uuid(), claimed_by = $3, started_at = now(), last_heartbeat_at = now(),
  finished_at = NULL, runner = $4, ray_address = $5, ray_job_id = NULL,
  workflow_plan_pinned_attempt = CASE WHEN t.workflow_plan_fingerprint IS NULL
    AND EXISTS (SELECT 1 FROM p WHERE p.flow = t.flow_name) THEN t.attempt_number ELSE t.workflow_plan_pinned_attempt END,
  workflow_plan_fingerprint = coalesce(t.workflow_plan_fingerprint, (SELECT p.fp FROM p WHERE p.flow = t.flow_name)),
  workflow_plan_selection = CASE WHEN t.workflow_plan_fingerprint IS NULL
    THEN (SELECT p.sel FROM p WHERE p.flow = t.flow_name) ELSE t.workflow_plan_selection END
FROM (SELECT id FROM rayflow_tasks
  WHERE state = 'QUEUED' AND queue_name = $1 AND run_after <= now()
    AND (queue_deadline_at IS NULL OR queue_deadline_at > now())
    AND (workflow_plan_fingerprint IS NULL OR EXISTS (SELECT 1 FROM p WHERE p.flow = flow_name AND p.fp = workflow_plan_fingerprint))
  ORDER BY priority DESC, created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) c
WHERE t.id = c.id
RETURNING t.id, t.task_id::text, t.flow_name, t.attempt_number, t.max_attempts, t.execution_generation,
  t.workflow_run_id::text, t.input_json, coalesce(t.timeout_seconds, 0), coalesce(t.workflow_plan_fingerprint, ''),
  coalesce(t.workflow_plan_pinned_attempt, 0), t.priority, t.created_at,
  extract(epoch FROM now() - greatest(t.run_after, t.enqueued_at))::float8`

// ClaimTasks claims tasks as new attempts (new generation and run id)
// with FOR UPDATE SKIP LOCKED, larger priority first, FIFO by creation.
// Rows (in no order): id, task_id, flow_name, attempt_number,
// max_attempts, execution_generation, workflow_run_id, input_json,
// timeout seconds, pinned fingerprint, pinned attempt, priority,
// created_at, seconds waited. With CheckOrphans (migration 0008) one more
// row of id 0 says that some running task's worker session ended.
func ClaimTasks(ctx context.Context, q Querier, c Claim) (pgx.Rows, error) {
	sql := claimSQL
	if c.CheckOrphans {
		sql = claimCheckSQL
	}
	return q.Query(ctx, sql, c.Queue, c.N, c.Worker, c.Runner, c.RayAddress, c.Flows, c.Fingerprints, c.Selections)
}

// NewTask is a task to enqueue.
type NewTask struct {
	TaskID              string
	Flow                string
	Queue               string
	Priority            int
	MaxAttempts         int
	InputJSON           string
	TimeoutSeconds      *int64
	QueueTimeoutSeconds *int64
	RunAfter            *time.Time // nil: now
	RepairOf            *int64     // the primary key of the task a repair task repairs
}

// InsertTask inserts t and returns its primary key (pgx.ErrNoRows when
// the task id exists already).
func InsertTask(ctx context.Context, q Querier, t NewTask) (int64, error) {
	var pk int64
	err := q.QueryRow(ctx, `
INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, priority, max_attempts, input_json,
    timeout_seconds, queue_timeout_seconds, run_after, queue_deadline_at, repair_of)
SELECT $1, $2, $3, $4, $5, $6, $7::integer, $8::integer, ra, CASE WHEN $8::integer IS NULL THEN NULL
    ELSE greatest(now(), ra) + make_interval(secs => $8::integer) END, $10::bigint
FROM (SELECT coalesce($9::timestamptz, now()) AS ra) r
ON CONFLICT ON CONSTRAINT rayflow_task_id_unique DO NOTHING
RETURNING id`, t.TaskID, t.Flow, t.Queue, t.Priority, t.MaxAttempts, t.InputJSON,
		t.TimeoutSeconds, t.QueueTimeoutSeconds, t.RunAfter, t.RepairOf).Scan(&pk)
	return pk, err
}

// UniqueTask is the unique key of a task to enqueue (migration 0010):
// Scope is "" for every flow, else the flow's name; ForSeconds, when set,
// holds the key that long from the enqueue whatever the task's state
// (otherwise while the task is not terminal).
type UniqueTask struct {
	Key        string
	Scope      string
	ForSeconds *int64
}

// uniqueArbiter is the ON CONFLICT target of rayflow_tasks_unique: its
// columns and its predicate, which must match the index's.
const uniqueArbiter = `(unique_scope, unique_key) WHERE unique_key IS NOT NULL AND NOT unique_released
  AND (unique_until IS NOT NULL OR state IN ('QUEUED', 'RUNNING', 'CANCELLING'))`

// UniqueIndex is the name of the unique index of held keys (a retry that
// would make a second holder fails on it with SQLSTATE 23505).
const UniqueIndex = "rayflow_tasks_unique"

// InsertedUnique is InsertUniqueTask's answer: the task that holds the
// key after the statement (the inserted one when TaskID is the new
// task's id), its flow, state and max attempts, and Released when that
// task's period had passed and the statement released its key instead
// (nothing was inserted: insert again).
type InsertedUnique struct {
	PK          int64
	TaskID      string
	Flow        string
	State       string
	MaxAttempts int
	Released    bool
}

// InsertUniqueTask inserts t holding key u in one INSERT ... ON CONFLICT
// on rayflow_tasks_unique. When another task holds the key the
// statement inserts nothing and returns that task (locking its row, so
// that it holds the key until the caller's transaction ends); when that
// task's period has passed it releases its key and returns it with
// Released. A task id collision fails with SQLSTATE 23505 on
// rayflow_task_id_unique.
func InsertUniqueTask(ctx context.Context, q Querier, t NewTask, u UniqueTask) (InsertedUnique, error) {
	var r InsertedUnique
	err := q.QueryRow(ctx, `
INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, priority, max_attempts, input_json,
    timeout_seconds, queue_timeout_seconds, run_after, queue_deadline_at, repair_of, unique_key, unique_scope, unique_until)
SELECT $1, $2, $3, $4, $5, $6, $7::integer, $8::integer, ra, CASE WHEN $8::integer IS NULL THEN NULL
    ELSE greatest(now(), ra) + make_interval(secs => $8::integer) END, $10::bigint, $11, $12,
    now() + make_interval(secs => $13::integer)
FROM (SELECT coalesce($9::timestamptz, now()) AS ra) r
ON CONFLICT `+uniqueArbiter+`
DO UPDATE SET unique_released = coalesce(rayflow_tasks.unique_until <= now(), false)
RETURNING id, task_id::text, flow_name, state, max_attempts, unique_released`, t.TaskID, t.Flow, t.Queue, t.Priority, t.MaxAttempts, t.InputJSON,
		t.TimeoutSeconds, t.QueueTimeoutSeconds, t.RunAfter, t.RepairOf, u.Key, u.Scope, u.ForSeconds).
		Scan(&r.PK, &r.TaskID, &r.Flow, &r.State, &r.MaxAttempts, &r.Released)
	return r, err
}

// UniqueHolder returns the task id of the task other than pk that holds
// pk's unique key (pgx.ErrNoRows when none does).
func UniqueHolder(ctx context.Context, q RowReader, pk int64) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT h.task_id::text FROM rayflow_tasks t JOIN rayflow_tasks h
  ON h.unique_scope = t.unique_scope AND h.unique_key = t.unique_key AND h.id <> t.id
WHERE t.id = $1 AND h.unique_key IS NOT NULL AND NOT h.unique_released
  AND (h.unique_until IS NOT NULL OR h.state IN ('QUEUED', 'RUNNING', 'CANCELLING'))`, pk).Scan(&id)
	return id, err
}

// taskColumns are the columns of a task record, in this order: id,
// task_id, flow_name, queue_name, priority, state, attempt_number,
// max_attempts, execution_generation, workflow_run_id, plan fingerprint,
// pinned attempt, input_json, result_data, runner, ray_address,
// ray_job_id, created_at, enqueued_at, started_at, finished_at,
// last_heartbeat_at, run_after, timeout seconds, queue timeout seconds,
// queue_deadline_at, claimed_by, cancellation_status,
// cancellation_error, error_type, error_message, error_traceback, the
// task id of the task a repair task repairs (empty for other tasks),
// unique_key (empty for none), whether the key is global, unique_until
// (NULL for a hold while not terminal) and unique_released.
const taskColumns = `id, task_id::text, flow_name, queue_name, priority, state, attempt_number, max_attempts,
 execution_generation, coalesce(workflow_run_id::text, ''), coalesce(workflow_plan_fingerprint, ''),
 coalesce(workflow_plan_pinned_attempt, 0), input_json, result_data, coalesce(runner, ''), coalesce(ray_address, ''), coalesce(ray_job_id, ''),
 created_at, enqueued_at, started_at, finished_at, last_heartbeat_at, run_after, coalesce(timeout_seconds, 0),
 coalesce(queue_timeout_seconds, 0), queue_deadline_at, coalesce(claimed_by, ''), coalesce(cancellation_status, ''),
 coalesce(cancellation_error, ''), coalesce(error_type, ''), coalesce(error_message, ''), coalesce(error_traceback, ''),
 coalesce((SELECT o.task_id::text FROM rayflow_tasks o WHERE o.id = rayflow_tasks.repair_of), ''),
 coalesce(unique_key, ''), coalesce(unique_scope = '', false), unique_until, unique_released`

// TaskByID reads the task record (the columns of taskColumns) of task id.
func TaskByID(ctx context.Context, q RowReader, taskID string) pgx.Row {
	return q.QueryRow(ctx, `SELECT `+taskColumns+` FROM rayflow_tasks WHERE task_id = $1`, taskID)
}

// ListTasks lists task records (the columns of taskColumns) with id
// below before, newest first; state and queue filter unless empty.
func ListTasks(ctx context.Context, q Reader, before int64, state, queue string, limit int) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT `+taskColumns+` FROM rayflow_tasks
WHERE id < $1 AND ($2 = '' OR state = $2) AND ($3 = '' OR queue_name = $3)
ORDER BY id DESC LIMIT $4`, before, state, queue, limit)
}

// TaskAttempts lists the archived attempts of task pk in order. Rows:
// attempt_number, execution_generation, workflow_run_id, state,
// claimed_by, plan fingerprint, started_at, finished_at, error_type,
// error_message, error_traceback, result_data.
func TaskAttempts(ctx context.Context, q Reader, pk int64) (pgx.Rows, error) {
	return q.Query(ctx, `
SELECT attempt_number, execution_generation, coalesce(workflow_run_id::text, ''), state, coalesce(claimed_by, ''),
 coalesce(workflow_plan_fingerprint, ''), started_at, finished_at, coalesce(error_type, ''), coalesce(error_message, ''),
 coalesce(error_traceback, ''), result_data
FROM rayflow_task_attempts WHERE task_pk = $1 ORDER BY attempt_number`, pk)
}

// LockTaskForRetry locks task id's row: id, state, attempt_number,
// execution_generation, workflow_run_id (” for none), queue_name.
func LockTaskForRetry(ctx context.Context, q Querier, taskID string) pgx.Row {
	return q.QueryRow(ctx, `SELECT id, state, attempt_number, execution_generation, coalesce(workflow_run_id::text, ''), queue_name
FROM rayflow_tasks WHERE task_id = $1 FOR UPDATE`, taskID)
}

// LockTaskForRepair reads task taskID for a repair, locking it against
// a concurrent retry. Row: id, state, flow_name, queue_name, priority,
// max_attempts, input_json, timeout_seconds, queue_timeout_seconds
// (NULL when unset).
func LockTaskForRepair(ctx context.Context, q Querier, taskID string) pgx.Row {
	return q.QueryRow(ctx, `SELECT id, state, flow_name, queue_name, priority, max_attempts, input_json, timeout_seconds, queue_timeout_seconds
FROM rayflow_tasks WHERE task_id = $1 FOR SHARE`, taskID)
}

// RequeueTask makes the ended attempt (pk, state, attempt, gen) of a
// task the next one, QUEUED and runnable at once; with rebuild it also
// drops the task's plan pin, so that the next claim pins the claiming
// worker's plan.
func RequeueTask(ctx context.Context, q Querier, pk int64, state string, attempt int, gen int64, rebuild bool) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `UPDATE rayflow_tasks SET state = 'QUEUED', attempt_number = attempt_number + 1,
 workflow_plan_fingerprint = CASE WHEN $5 THEN NULL ELSE workflow_plan_fingerprint END,
 workflow_plan_pinned_attempt = CASE WHEN $5 THEN NULL ELSE workflow_plan_pinned_attempt END,
 workflow_plan_selection = CASE WHEN $5 THEN NULL ELSE workflow_plan_selection END,
 execution_generation = execution_generation + 1, workflow_run_id = NULL, claimed_by = NULL, started_at = NULL,
 finished_at = NULL, last_heartbeat_at = NULL, result_data = NULL, run_after = now(), enqueued_at = now(),
 queue_deadline_at = CASE WHEN queue_timeout_seconds IS NULL THEN NULL ELSE now() + make_interval(secs => queue_timeout_seconds) END,
 cancellation_status = NULL, cancellation_error = NULL, error_type = NULL, error_message = NULL, error_traceback = NULL
WHERE id = $1 AND state = $2 AND attempt_number = $3 AND execution_generation = $4`, pk, state, attempt, gen, rebuild)
}

// LockTaskForCancel locks task id's row: id, state, attempt_number,
// execution_generation, workflow_run_id (nullable).
func LockTaskForCancel(ctx context.Context, q Querier, taskID string) pgx.Row {
	return q.QueryRow(ctx, `SELECT id, state, attempt_number, execution_generation, workflow_run_id::text
FROM rayflow_tasks WHERE task_id = $1 FOR UPDATE`, taskID)
}

// RequestCancel moves the RUNNING task pk of generation gen to
// CANCELLING.
func RequestCancel(ctx context.Context, q Querier, pk, gen int64) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `UPDATE rayflow_tasks SET state = 'CANCELLING', cancellation_status = 'REQUESTED'
WHERE id = $1 AND state = 'RUNNING' AND execution_generation = $2`, pk, gen)
}

// SetRayJobID records the attempt's Ray job id under the fence.
func SetRayJobID(ctx context.Context, q Querier, f Fence, job string) (pgconn.CommandTag, error) {
	return q.Exec(ctx, `UPDATE rayflow_tasks SET ray_job_id = $6 WHERE `+fenceWhere, f.args(job)...)
}

// AdoptRayJob makes worker the owner of the fenced attempt running Ray
// job job. Row: task_id, flow_name, max_attempts, input_json, timeout
// seconds, pinned fingerprint, pinned attempt (pgx.ErrNoRows when the
// fence or the job no longer match).
func AdoptRayJob(ctx context.Context, q Querier, f Fence, worker, job string) pgx.Row {
	return q.QueryRow(ctx, `UPDATE rayflow_tasks SET claimed_by = $6, last_heartbeat_at = now()
WHERE `+fenceWhere+` AND ray_job_id = $7
RETURNING task_id::text, flow_name, max_attempts, input_json, coalesce(timeout_seconds, 0),
  coalesce(workflow_plan_fingerprint, ''), coalesce(workflow_plan_pinned_attempt, 0)`, f.args(worker, job)...)
}

// InsertRunningTask inserts a task of flow already RUNNING (claimed by
// worker, with a new run id, execution generation 0) without a claim: the
// serve and progress test fixtures' task. Row: task_id, id,
// workflow_run_id.
func InsertRunningTask(ctx context.Context, q Querier, flow, worker string) pgx.Row {
	return q.QueryRow(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, claimed_by, workflow_run_id, started_at)
 VALUES (gen_random_uuid(), $1, '{}', 'RUNNING', $2, gen_random_uuid(), now()) RETURNING task_id::text, id, workflow_run_id::text`, flow, worker)
}
