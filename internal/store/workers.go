package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Worker sessions (migration 0008): a durable worker holds a
// session-scoped advisory lock on a key of its own on its LISTEN
// connection and records the key in rayflow_workers. When its process
// dies the server ends the session and frees the lock: a RUNNING attempt
// whose worker's lock is free has no worker left.

// lockFree is the condition "no session of this database holds the
// advisory lock on the bigint key k" (a session lock on one bigint key is
// the pg_locks row of classid = its high and objid = its low 32 bits,
// objsubid 1).
func lockFree(k string) string {
	return `NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = (` + k + ` >> 32)::oid AND l.objid = (` + k + ` & 4294967295)::oid)`
}

const runningTask = `t.state IN ('RUNNING', 'CANCELLING')`

// serverSettled is true 15 s after the server (re)started: a restart ends
// every session, so until live workers have reconnected and taken their
// lock again, a free lock proves nothing.
const serverSettled = `pg_postmaster_start_time() < now() - interval '15 seconds'`

// orphanedWhere matches the running tasks t (joined with their worker w)
// whose worker's session ended.
var orphanedWhere = runningTask + ` AND ` + serverSettled + ` AND ` + lockFree("w.lock_key")

// TryWorkerLock takes the session advisory lock on key on conn (false
// when another session holds it).
func TryWorkerLock(ctx context.Context, q RowReader, key int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}

// RegisterWorker records that worker holds the lock on key (replacing an
// earlier key of the same worker id).
func RegisterWorker(ctx context.Context, q Querier, worker, queue string, key int64) error {
	_, err := q.Exec(ctx, `INSERT INTO rayflow_workers (worker_id, lock_key, queue_name) VALUES ($1, $2, $3)
ON CONFLICT (worker_id) DO UPDATE SET lock_key = excluded.lock_key, queue_name = excluded.queue_name, registered_at = now()`,
		worker, key, queue)
	return err
}

// UnregisterWorker deletes worker's row if it still records key.
func UnregisterWorker(ctx context.Context, q Querier, worker string, key int64) error {
	_, err := q.Exec(ctx, `DELETE FROM rayflow_workers WHERE worker_id = $1 AND lock_key = $2`, worker, key)
	return err
}

// sweepColumns are the columns of a task to sweep (see SweepTasks).
const sweepColumns = `t.id, t.state, t.attempt_number, t.max_attempts, t.execution_generation, t.workflow_run_id::text,
  coalesce(t.ray_job_id, ''), t.task_id::text, t.flow_name,
  extract(epoch FROM now() - CASE WHEN t.state = 'QUEUED' THEN t.enqueued_at ELSE coalesce(t.started_at, t.enqueued_at) END)::float8,
  coalesce(t.workflow_plan_fingerprint, ''), t.queue_name`

const stuckWhere = `(` + runningTask + ` AND coalesce(t.last_heartbeat_at, t.started_at) < now() - make_interval(secs => $1))
   OR (t.state = 'QUEUED' AND t.queue_deadline_at < now())`

const stuckSQL = `SELECT ` + sweepColumns + `, '', 0::bigint, false FROM rayflow_tasks t
WHERE ` + stuckWhere + `
LIMIT 500`

// sessionsSweepSQL is stuckSQL and the running tasks whose worker's
// session ended; it deletes the rows of workers that are gone and own no
// running task.
var sessionsSweepSQL = `WITH gone AS (
  DELETE FROM rayflow_workers w WHERE ` + serverSettled + ` AND ` + lockFree("w.lock_key") + `
    AND NOT EXISTS (SELECT 1 FROM rayflow_tasks t WHERE t.claimed_by = w.worker_id AND ` + runningTask + `)
)
(SELECT ` + sweepColumns + `, '', 0::bigint, false FROM rayflow_tasks t
WHERE ` + stuckWhere + `
LIMIT 500)
UNION ALL
(SELECT ` + sweepColumns + `, w.worker_id, w.lock_key,
  NOT EXISTS (SELECT 1 FROM rayflow_task_attempts a WHERE a.task_pk = t.id AND a.state = 'LOST')
FROM rayflow_tasks t JOIN rayflow_workers w ON w.worker_id = t.claimed_by
WHERE ` + orphanedWhere + ` AND coalesce(t.last_heartbeat_at, t.started_at) >= now() - make_interval(secs => $1)
LIMIT 500)`

// SweepTasks lists tasks to sweep: running ones without a heartbeat for
// stuckSeconds and queued ones past their deadline (at most 500), and,
// with sessions, the running tasks whose worker's session ended (at most
// 500 more; the rows of workers gone without a running task are deleted).
// Rows: id, state, attempt_number, max_attempts, execution_generation,
// workflow_run_id, ray_job_id, task_id, flow_name, seconds in the state,
// the pinned plan fingerprint ("" for none), queue_name, and for a task whose
// worker's session ended its worker, the worker's lock key and whether no earlier attempt of the task was LOST ("", 0,
// false for the others).
func SweepTasks(ctx context.Context, q Querier, stuckSeconds float64, sessions bool) (pgx.Rows, error) {
	if sessions {
		return q.Query(ctx, sessionsSweepSQL, stuckSeconds)
	}
	return q.Query(ctx, stuckSQL, stuckSeconds)
}

// Published flows (migration 0009): one row of rayflow_worker_flows per
// worker and flow it serves, deleted with the worker's row.

// FlowPublication is one flow as a worker publishes it.
type FlowPublication struct {
	Flow, InputSchema, Fingerprint, BuildRevision string
}

// PublishFlows records that worker serves flows on queue: it replaces the
// worker's earlier publication (a flow no longer listed is deleted) in
// one statement.
func PublishFlows(ctx context.Context, q Querier, worker, queue string, flows []FlowPublication) error {
	names, schemas, fps, builds := make([]string, len(flows)), make([]string, len(flows)), make([]string, len(flows)), make([]string, len(flows))
	for i, f := range flows {
		names[i], schemas[i], fps[i], builds[i] = f.Flow, f.InputSchema, f.Fingerprint, f.BuildRevision
	}
	_, err := q.Exec(ctx, `WITH gone AS (
  DELETE FROM rayflow_worker_flows WHERE worker_id = $1 AND NOT (flow_name = ANY ($3::text[]))
)
INSERT INTO rayflow_worker_flows (worker_id, flow_name, queue_name, input_schema, plan_fingerprint, build_revision)
SELECT $1, u.f, $2, u.s, u.fp, u.b FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS u(f, s, fp, b)
ON CONFLICT (worker_id, flow_name) DO UPDATE SET queue_name = excluded.queue_name, input_schema = excluded.input_schema,
  plan_fingerprint = excluded.plan_fingerprint, build_revision = excluded.build_revision, published_at = now()`,
		worker, queue, names, schemas, fps, builds)
	return err
}

// liveWorker is true for a worker w whose session holds its lock (or
// while the server settles after a restart, when a free lock proves
// nothing).
var liveWorker = `NOT (` + serverSettled + ` AND ` + lockFree("w.lock_key") + `)`

// PublishedFlows lists the flows live workers publish (only flow's when
// flow is not ""), ordered by flow, queue, newest publication first and
// worker. Rows: flow_name, queue_name, input_schema, plan_fingerprint,
// build_revision, worker_id, published_at.
func PublishedFlows(ctx context.Context, q Reader, flow string) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT f.flow_name, f.queue_name, f.input_schema, f.plan_fingerprint, f.build_revision, f.worker_id, f.published_at
FROM rayflow_worker_flows f JOIN rayflow_workers w ON w.worker_id = f.worker_id
WHERE ($1 = '' OR f.flow_name = $1) AND `+liveWorker+`
ORDER BY f.flow_name, f.queue_name, f.published_at DESC, f.worker_id`, flow)
}
