package store

import (
	"context"
	"fmt"
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
//
// Keyed says which claim runs: the plain claim takes only tasks without a
// concurrency key and ignores the queue's limits (a queue that has none,
// the fast path); the keyed claim (ClaimTasks with Keyed) locks the
// queue's limits row, so that concurrent keyed claims of one queue take
// turns, and takes tasks round-robin across their keys, starting after
// Cursor (the last key this claimer served), within each key's running
// limit and the queue's start rate.
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
	Keyed        bool
	Cursor       string
}

const claimPins = `p AS (SELECT * FROM unnest($6::text[], $7::text[], $8::text[]) AS p(flow, fp, sel))`

// claimSet is the SET list of a claim: a new attempt's generation and run
// id, its worker, and the plan pin of a task that has none.
const claimSet = `state = 'RUNNING', execution_generation = t.execution_generation + 1,
  workflow_run_id = gen_random_uuid(), claimed_by = $3, started_at = clock_timestamp(), last_heartbeat_at = now(),
  finished_at = NULL, runner = $4, ray_address = $5, ray_job_id = NULL,
  workflow_plan_pinned_attempt = CASE WHEN t.workflow_plan_fingerprint IS NULL
    AND EXISTS (SELECT 1 FROM p WHERE p.flow = t.flow_name) THEN t.attempt_number ELSE t.workflow_plan_pinned_attempt END,
  workflow_plan_fingerprint = coalesce(t.workflow_plan_fingerprint, (SELECT p.fp FROM p WHERE p.flow = t.flow_name)),
  workflow_plan_selection = CASE WHEN t.workflow_plan_fingerprint IS NULL
    THEN (SELECT p.sel FROM p WHERE p.flow = t.flow_name) ELSE t.workflow_plan_selection END`

// claimable is the condition on a queued task of queue $1 (no alias) that
// a claim may take now.
const claimable = `state = 'QUEUED' AND queue_name = $1 AND run_after <= now()
    AND (queue_deadline_at IS NULL OR queue_deadline_at > now())
    AND (workflow_plan_fingerprint IS NULL OR EXISTS (SELECT 1 FROM p WHERE p.flow = flow_name AND p.fp = workflow_plan_fingerprint))`

// claimReturning is a claim's row: see ClaimTasks.
const claimReturning = `t.id, t.task_id::text, t.flow_name, t.attempt_number, t.max_attempts, t.execution_generation,
  t.workflow_run_id::text, t.input_json, coalesce(t.timeout_seconds, 0), coalesce(t.workflow_plan_fingerprint, ''),
  coalesce(t.workflow_plan_pinned_attempt, 0), t.priority, t.created_at,
  extract(epoch FROM now() - greatest(t.run_after, t.enqueued_at))::float8, coalesce(t.concurrency_key, '')`

// claimMarkers follows a claim's rows (CTE c) with its marker rows: id 0
// when some running task's worker session ended (with checkOrphans), and
// id -1 when the queue has limits or keyed tasks (its claims must be
// keyed), -2 when it has neither (plain claims will do). After a keyed
// claim the -1/-2 row also carries, as its attempt number, how many keys
// it visited were at their running limit (a task that ends may let them
// start another); as its seconds waited, the time until the start-rate
// bucket holds its next token (0 without a rate); and, as its
// concurrency key, where the claimer's next round starts: after the last
// key served, or, when the claim took fewer than it could, after the last
// key visited.
func claimMarkers(checkOrphans, keyed bool) string {
	wait, cursor, limited := "0::float8", "''", "0"
	if keyed {
		limited = `(SELECT count(*) FROM ko WHERE room = 0)::int`
		wait = `coalesce((SELECT CASE WHEN starts_per_second IS NULL THEN 0
    ELSE greatest(0, 1 - (tokens - (SELECT count(*) FROM c))) / starts_per_second END
  FROM rayflow_queues WHERE queue_name = $1), 0)::float8`
		cursor = `coalesce(CASE WHEN (SELECT count(*) FROM pick) < (SELECT n FROM q)
    THEN (SELECT k FROM ko ORDER BY ord DESC LIMIT 1)
    ELSE (SELECT k FROM pick WHERE k IS NOT NULL ORDER BY rn DESC, ord DESC LIMIT 1) END, '')`
	}
	s := `SELECT * FROM c
UNION ALL
SELECT m.id, '', '', ` + limited + `, 0, 0::bigint, '', '', 0, '', 0, 0, now(), ` + wait + `, ` + cursor + ` FROM (SELECT CASE WHEN
  EXISTS (SELECT 1 FROM rayflow_queues WHERE queue_name = $1)
  OR (SELECT concurrency_key FROM rayflow_tasks WHERE state = 'QUEUED' AND queue_name = $1 AND concurrency_key IS NOT NULL
      ORDER BY concurrency_key LIMIT 1) IS NOT NULL
  THEN -1 ELSE -2 END::bigint AS id) m`
	if checkOrphans {
		s += `
UNION ALL
SELECT 0::bigint, '', '', 0, 0, 0::bigint, '', '', 0, '', 0, 0, now(), 0::float8, ''
WHERE EXISTS (SELECT 1 FROM rayflow_tasks t JOIN rayflow_workers w ON w.worker_id = t.claimed_by WHERE ` + orphanedWhere + `)`
	}
	return s
}

// plainClaim claims tasks without a key, FOR UPDATE SKIP LOCKED, of a
// queue without limits (a queue's limits take effect at once: a worker
// that has not seen them yet claims nothing and learns of them from the
// markers).
var plainClaim = `WITH ` + claimPins + `, c AS (
UPDATE rayflow_tasks t SET ` + claimSet + `
FROM (SELECT id FROM rayflow_tasks WHERE ` + claimable + ` AND concurrency_key IS NULL
  AND NOT EXISTS (SELECT 1 FROM rayflow_queues WHERE queue_name = $1)
  ORDER BY priority DESC, created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) c
WHERE t.id = c.id
RETURNING ` + claimReturning + `)
`

// keyedSettings makes the keyed claim that follows in its transaction run
// its prepared statement's generic plan: planning the claim anew for each
// call's values (PostgreSQL's choice for it otherwise) costs more than
// running it, and the plan does not depend on the values. JIT compiling
// would cost more still. The transaction commits without waiting for its
// WAL flush: the keyed claims of a queue take turns on its row lock, which
// a commit holds until it returns, so waiting for the disk would make every
// claim of the queue wait for every other's flush. A server crash can lose
// the last few milliseconds of such claims; their tasks are then queued
// again and claimed anew, and the lost attempts' fenced writes change
// nothing (as when a worker dies).
const keyedSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true), set_config('synchronous_commit', 'off', true)`

// keyedRefill locks queue $1's limits row (so that keyed claims of the
// queue take turns: the claim that follows in the same transaction sees
// every earlier claim's tasks running) and refills its token bucket.
const keyedRefill = `UPDATE rayflow_queues SET refilled_at = now(), tokens = CASE WHEN starts_per_second IS NULL THEN 0
  ELSE least(burst::float8, tokens + starts_per_second * greatest(0, extract(epoch FROM now() - refilled_at))) END
WHERE queue_name = $1`

// maxKeysPerClaim bounds the keys one keyed claim visits (round-robin
// from the claimer's cursor, so that later keys get their turn).
const maxKeysPerClaim = 256

// keyedClaim takes, after keyedRefill: up to n = min(N, the bucket's
// whole tokens) tasks, interleaving the keys by rank (every key's first
// task, then every key's second, ...), keys in order from after the
// cursor $9 and wrapping around; a key takes at most its limit less its
// running tasks. Tasks without a key count as one more key without a
// limit, first. It spends the bucket's tokens.
var keyedClaim = `WITH RECURSIVE ` + claimPins + `,
q AS (SELECT per_key_running AS lim, CASE WHEN starts_per_second IS NULL THEN $2 ELSE least($2, floor(tokens)::int) END AS n
      FROM rayflow_queues WHERE queue_name = $1
      UNION ALL SELECT NULL, $2 WHERE NOT EXISTS (SELECT 1 FROM rayflow_queues WHERE queue_name = $1)),
k1 AS ((SELECT concurrency_key AS k FROM rayflow_tasks WHERE state = 'QUEUED' AND queue_name = $1 AND concurrency_key > $9
        ORDER BY concurrency_key LIMIT 1)
      UNION ALL
      SELECT (SELECT concurrency_key FROM rayflow_tasks WHERE state = 'QUEUED' AND queue_name = $1 AND concurrency_key > k1.k
        ORDER BY concurrency_key LIMIT 1) FROM k1 WHERE k1.k IS NOT NULL),
k2 AS ((SELECT concurrency_key AS k FROM rayflow_tasks WHERE state = 'QUEUED' AND queue_name = $1 AND concurrency_key IS NOT NULL
        AND concurrency_key <= $9 ORDER BY concurrency_key LIMIT 1)
      UNION ALL
      SELECT (SELECT concurrency_key FROM rayflow_tasks WHERE state = 'QUEUED' AND queue_name = $1 AND concurrency_key > k2.k
        AND concurrency_key <= $9 ORDER BY concurrency_key LIMIT 1) FROM k2 WHERE k2.k IS NOT NULL),
ko AS (SELECT k, ord, CASE WHEN (SELECT lim FROM q) IS NULL THEN 2147483647 ELSE greatest(0, (SELECT lim FROM q)
        - (SELECT count(*) FROM rayflow_tasks r WHERE r.state IN ('RUNNING', 'CANCELLING') AND r.queue_name = $1
             AND r.concurrency_key = v.k)) END AS room
      FROM (SELECT k, row_number() OVER (ORDER BY part, k) AS ord FROM (
        (SELECT k, 1 AS part FROM k1 WHERE k IS NOT NULL LIMIT ` + fmt.Sprint(maxKeysPerClaim) + `)
        UNION ALL
        (SELECT k, 2 FROM k2 WHERE k IS NOT NULL LIMIT ` + fmt.Sprint(maxKeysPerClaim) + `)) u
      ORDER BY part, k LIMIT ` + fmt.Sprint(maxKeysPerClaim) + `) v),
cand AS (
  SELECT x.id, ko.k, row_number() OVER (PARTITION BY ko.k ORDER BY x.priority DESC, x.created_at, x.id) AS rn, ko.ord
  FROM ko CROSS JOIN LATERAL (SELECT * FROM (
    SELECT id, priority, created_at FROM rayflow_tasks WHERE ` + claimable + ` AND concurrency_key = ko.k
    ORDER BY priority DESC, created_at, id
    LIMIT least((SELECT n FROM q), ko.room)
    FOR UPDATE SKIP LOCKED) y LIMIT $2) x
  UNION ALL
  SELECT u.id, NULL, row_number() OVER (ORDER BY u.priority DESC, u.created_at, u.id), 0 FROM (
    SELECT id, priority, created_at FROM rayflow_tasks WHERE ` + claimable + ` AND concurrency_key IS NULL
    ORDER BY priority DESC, created_at, id LIMIT (SELECT n FROM q) FOR UPDATE SKIP LOCKED) u),
pick AS (SELECT * FROM (SELECT id, k, rn, ord FROM cand ORDER BY rn, ord LIMIT (SELECT n FROM q)) z LIMIT $2),
c AS (
UPDATE rayflow_tasks t SET ` + claimSet + `
WHERE t.id = ANY (ARRAY(SELECT id FROM pick))
RETURNING ` + claimReturning + `),
spend AS (UPDATE rayflow_queues SET tokens = tokens - (SELECT count(*) FROM c)
  WHERE queue_name = $1 AND starts_per_second IS NOT NULL)
`

// ClaimTasks claims tasks as new attempts (new generation and run id),
// larger priority first, FIFO by creation (with Keyed, round-robin
// across keys first). Rows (in no order): id, task_id, flow_name,
// attempt_number, max_attempts, execution_generation, workflow_run_id,
// input_json, timeout seconds, pinned fingerprint, pinned attempt,
// priority, created_at, seconds waited, concurrency key ("" for none);
// then the marker rows of claimMarkers (ids 0, -1, -2). A keyed claim
// needs q to send batches (store.Batcher): its two statements go in one
// round trip and one transaction.
func ClaimTasks(ctx context.Context, q Querier, c Claim) (pgx.Rows, error) {
	args := []any{c.Queue, c.N, c.Worker, c.Runner, c.RayAddress, c.Flows, c.Fingerprints, c.Selections}
	if !c.Keyed {
		return q.Query(ctx, plainClaim+claimMarkers(c.CheckOrphans, false), args...)
	}
	b, ok := q.(Batcher)
	if !ok {
		return nil, fmt.Errorf("store: a keyed claim needs a connection that sends batches, not %T", q)
	}
	batch := &pgx.Batch{}
	batch.Queue(keyedSettings)
	batch.Queue(keyedRefill, c.Queue)
	batch.Queue(keyedClaim+claimMarkers(c.CheckOrphans, true), append(args, c.Cursor)...)
	res := b.SendBatch(ctx, batch)
	for range 2 { // keyedSettings, keyedRefill
		if _, err := res.Exec(); err != nil {
			_ = res.Close()
			return nil, err
		}
	}
	rows, err := res.Query()
	if err != nil {
		_ = res.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, res: res}, nil
}

// batchRows are a batch's last rows: closing them closes the batch.
type batchRows struct {
	pgx.Rows
	res pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.res.Close()
}

// Err is the rows' error, else (the rows read) the batch's: its
// transaction's commit.
func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.res.Close()
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
	ConcurrencyKey      *string    // the task's concurrency key (nil: none)
}

// insertTask is the INSERT of a new task, its columns and values from a
// NewTask's args ($1–$11), more columns and their values (from $12 on)
// appended by each kind of enqueue, so that a column is added in one place.
func insertTask(moreColumns, moreValues, rest string) string {
	return `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, priority, max_attempts, input_json,
    timeout_seconds, queue_timeout_seconds, run_after, queue_deadline_at, repair_of, concurrency_key` + moreColumns + `)
SELECT $1, $2, $3, $4, $5, $6, $7::integer, $8::integer, ra, CASE WHEN $8::integer IS NULL THEN NULL
    ELSE greatest(now(), ra) + make_interval(secs => $8::integer) END, $10::bigint, $11::text` + moreValues + `
FROM (SELECT coalesce($9::timestamptz, now()) AS ra) r
` + rest
}

// args are t's values for insertTask's $1–$11, then more.
func (t NewTask) args(more ...any) []any {
	return append([]any{t.TaskID, t.Flow, t.Queue, t.Priority, t.MaxAttempts, t.InputJSON,
		t.TimeoutSeconds, t.QueueTimeoutSeconds, t.RunAfter, t.RepairOf, t.ConcurrencyKey}, more...)
}

var insertPlainTask = insertTask("", "", `ON CONFLICT ON CONSTRAINT rayflow_task_id_unique DO NOTHING
RETURNING id`)

// InsertTask inserts t and returns its primary key (pgx.ErrNoRows when
// its task id exists already).
func InsertTask(ctx context.Context, q Querier, t NewTask) (int64, error) {
	var pk int64
	err := q.QueryRow(ctx, insertPlainTask, t.args()...).Scan(&pk)
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
	err := q.QueryRow(ctx, insertUniqueTask, t.args(u.Key, u.Scope, u.ForSeconds)...).
		Scan(&r.PK, &r.TaskID, &r.Flow, &r.State, &r.MaxAttempts, &r.Released)
	return r, err
}

var insertUniqueTask = insertTask(", unique_key, unique_scope, unique_until", ", $12, $13, now() + make_interval(secs => $14::integer)",
	`ON CONFLICT `+uniqueArbiter+`
DO UPDATE SET unique_released = coalesce(rayflow_tasks.unique_until <= now(), false)
RETURNING id, task_id::text, flow_name, state, max_attempts, unique_released`)

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
// (NULL for a hold while not terminal), unique_released and the
// concurrency key (empty for none).
const taskColumns = `id, task_id::text, flow_name, queue_name, priority, state, attempt_number, max_attempts,
 execution_generation, coalesce(workflow_run_id::text, ''), coalesce(workflow_plan_fingerprint, ''),
 coalesce(workflow_plan_pinned_attempt, 0), input_json, result_data, coalesce(runner, ''), coalesce(ray_address, ''), coalesce(ray_job_id, ''),
 created_at, enqueued_at, started_at, finished_at, last_heartbeat_at, run_after, coalesce(timeout_seconds, 0),
 coalesce(queue_timeout_seconds, 0), queue_deadline_at, coalesce(claimed_by, ''), coalesce(cancellation_status, ''),
 coalesce(cancellation_error, ''), coalesce(error_type, ''), coalesce(error_message, ''), coalesce(error_traceback, ''),
 coalesce((SELECT o.task_id::text FROM rayflow_tasks o WHERE o.id = rayflow_tasks.repair_of), ''),
 coalesce(unique_key, ''), coalesce(unique_scope = '', false), unique_until, unique_released,
 coalesce(concurrency_key, '')`

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
// (NULL when unset), concurrency_key (NULL for none).
func LockTaskForRepair(ctx context.Context, q Querier, taskID string) pgx.Row {
	return q.QueryRow(ctx, `SELECT id, state, flow_name, queue_name, priority, max_attempts, input_json, timeout_seconds, queue_timeout_seconds,
 concurrency_key FROM rayflow_tasks WHERE task_id = $1 FOR SHARE`, taskID)
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

// SetQueueLimits records queue's limits (rayflow_queues, migration
// 0012): a bucket that had no rate before starts full; a changed burst
// caps the tokens of one that had.
func SetQueueLimits(ctx context.Context, q Querier, queue string, perKey *int, rate *float64, burst *int) error {
	_, err := q.Exec(ctx, `INSERT INTO rayflow_queues (queue_name, per_key_running, starts_per_second, burst, tokens)
VALUES ($1, $2, $3, $4, coalesce($4, 0))
ON CONFLICT (queue_name) DO UPDATE SET per_key_running = excluded.per_key_running,
  starts_per_second = excluded.starts_per_second, burst = excluded.burst,
  tokens = CASE WHEN rayflow_queues.starts_per_second IS NULL THEN coalesce(excluded.burst, 0)
    ELSE least(rayflow_queues.tokens, coalesce(excluded.burst, 0)) END,
  refilled_at = CASE WHEN rayflow_queues.starts_per_second IS NULL THEN now() ELSE rayflow_queues.refilled_at END,
  updated_at = now()`, queue, perKey, rate, burst)
	return err
}

// DeleteQueueLimits removes queue's limits.
func DeleteQueueLimits(ctx context.Context, q Querier, queue string) error {
	_, err := q.Exec(ctx, `DELETE FROM rayflow_queues WHERE queue_name = $1`, queue)
	return err
}

// QueueStatus reads queue's limits and counts. Row: per_key_running,
// starts_per_second, burst, the bucket's tokens now (NULL without a
// rate; the first three NULL without limits), queued, running (with
// cancelling), keys with a queued task, keys with a running task, keys
// at their per-key limit.
func QueueStatus(ctx context.Context, q RowReader, queue string) pgx.Row {
	return q.QueryRow(ctx, `WITH l AS (SELECT * FROM rayflow_queues WHERE queue_name = $1),
r AS (SELECT concurrency_key AS k, count(*) AS n FROM rayflow_tasks
      WHERE queue_name = $1 AND state IN ('RUNNING', 'CANCELLING') AND concurrency_key IS NOT NULL GROUP BY 1)
SELECT (SELECT per_key_running FROM l), (SELECT starts_per_second FROM l), (SELECT burst FROM l),
  (SELECT least(burst::float8, tokens + starts_per_second * greatest(0, extract(epoch FROM now() - refilled_at))) FROM l),
  (SELECT count(*) FROM rayflow_tasks WHERE queue_name = $1 AND state = 'QUEUED'),
  (SELECT count(*) FROM rayflow_tasks WHERE queue_name = $1 AND state IN ('RUNNING', 'CANCELLING')),
  (SELECT count(DISTINCT concurrency_key) FROM rayflow_tasks WHERE queue_name = $1 AND state = 'QUEUED' AND concurrency_key IS NOT NULL),
  (SELECT count(*) FROM r),
  (SELECT count(*) FROM r WHERE r.n >= (SELECT per_key_running FROM l))`, queue)
}
