package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The progress readers' statements (serve/reader): every read runs in the
// caller's read-only snapshot. A payload over maxBytes is not loaded (NULL)
// but its size is, so that the reader can refuse it.

// TaskFlow reads task taskID's primary key and flow (for the
// authorizer; pgx.ErrNoRows when there is no such task).
func TaskFlow(ctx context.Context, q RowReader, taskID string) (pk int64, flow string, err error) {
	err = q.QueryRow(ctx, `SELECT id, flow_name FROM rayflow_tasks WHERE task_id = $1`, taskID).Scan(&pk, &flow)
	return pk, flow, err
}

// TaskProgress reads task taskID with its summary and, when attempt
// names an archived attempt, that attempt's, in one statement. Row: id,
// flow_name, attempt_number, execution_generation, workflow_run_id,
// summary size, summary (NULL over 16 KiB); then the archived attempt's
// attempt_number, execution_generation, workflow_run_id, summary size and
// summary (all NULL when there is no such attempt).
func TaskProgress(ctx context.Context, q RowReader, taskID string, attempt int64) pgx.Row {
	return q.QueryRow(ctx, `SELECT t.id, t.flow_name, t.attempt_number, t.execution_generation, t.workflow_run_id::text,
 octet_length(t.workflow_progress_summary_json),
 CASE WHEN octet_length(t.workflow_progress_summary_json) <= 16384 THEN t.workflow_progress_summary_json END,
 a.attempt_number, a.execution_generation, a.workflow_run_id::text, octet_length(a.workflow_progress_summary_json),
 CASE WHEN octet_length(a.workflow_progress_summary_json) <= 16384 THEN a.workflow_progress_summary_json END
 FROM rayflow_tasks t LEFT JOIN rayflow_task_attempts a ON a.task_pk = t.id AND a.attempt_number = $2
 WHERE t.task_id = $1`, taskID, attempt)
}

// runWhere selects the run row r of identity $1…$4.
const runWhere = `r.task_pk = $1 AND r.attempt_number = $2 AND r.execution_generation = $3 AND r.run_id = $4::uuid`

// CurrentManifest reads run r's CURRENT manifest of topology version
// version, in the statement that finds the run. Row: manifest_id,
// node_page_count, edge_page_count (NULL when the run has no such
// manifest; pgx.ErrNoRows when it has no run row).
func CurrentManifest(ctx context.Context, q RowReader, r Run, version int64) pgx.Row {
	return q.QueryRow(ctx, `SELECT m.manifest_id, m.node_page_count, m.edge_page_count FROM rayflow_progress_runs r
 LEFT JOIN rayflow_progress_manifests m ON m.run_pk = r.id AND m.slot = 'CURRENT' AND m.topology_version = $5
 WHERE `+runWhere, r.args(version)...)
}

// LinkedPage reads page index of collection coll linked by manifest
// manifestID. Row: size, payload (NULL over maxBytes), digest.
func LinkedPage(ctx context.Context, q RowReader, manifestID, coll string, index int64, maxBytes int) pgx.Row {
	return q.QueryRow(ctx, `SELECT octet_length(p.payload), CASE WHEN octet_length(p.payload) <= $4 THEN p.payload END, p.digest
 FROM rayflow_progress_manifest_pages mp JOIN rayflow_progress_pages p ON p.id = mp.page_id
 WHERE mp.manifest_id = $1 AND mp.collection = $2 AND mp.page_index = $3`, manifestID, coll, index, maxBytes)
}

// RunDetailCounts reads run r's row. Row: id, detail_node_count,
// detail_pending_count, detail_running_count, detail_succeeded_count,
// detail_failed_count.
func RunDetailCounts(ctx context.Context, q RowReader, r Run) pgx.Row {
	return q.QueryRow(ctx, `SELECT r.id, r.detail_node_count, r.detail_pending_count, r.detail_running_count, r.detail_succeeded_count,
 r.detail_failed_count FROM rayflow_progress_runs r WHERE `+runWhere, r.args()...)
}

// DetailPage lists at most limit detail rows of run row runPK after key
// after, by key, of state state ("" for every state). Rows: node_key,
// node_id, size, payload (NULL over maxBytes), digest.
func DetailPage(ctx context.Context, q Reader, runPK int64, after string, limit int, maxBytes int, state string) (pgx.Rows, error) {
	sql := `SELECT node_key, node_id, octet_length(payload), CASE WHEN octet_length(payload) <= $4 THEN payload END, digest
 FROM rayflow_progress_nodes WHERE run_pk = $1 AND node_key > $2 ORDER BY node_key LIMIT $3`
	args := []any{runPK, after, limit, maxBytes}
	if state != "" {
		sql = `SELECT node_key, node_id, octet_length(payload), CASE WHEN octet_length(payload) <= $4 THEN payload END, digest
 FROM rayflow_progress_nodes WHERE run_pk = $1 AND state = $5 AND node_key > $2 ORDER BY node_key LIMIT $3`
		args = append(args, state)
	}
	return q.Query(ctx, sql, args...)
}

// NodeDetail reads run r's detail row of key nodeKey, in the statement
// that finds the run. Row: size, payload (NULL over maxBytes), digest
// (all NULL when the run has no such row; pgx.ErrNoRows when it has no
// run row).
func NodeDetail(ctx context.Context, q RowReader, r Run, nodeKey string, maxBytes int) pgx.Row {
	return q.QueryRow(ctx, `SELECT octet_length(n.payload), CASE WHEN octet_length(n.payload) <= $6 THEN n.payload END, n.digest
 FROM rayflow_progress_runs r LEFT JOIN rayflow_progress_nodes n ON n.run_pk = r.id AND n.node_key = $5
 WHERE `+runWhere, r.args(nodeKey, maxBytes)...)
}

// MapFailedItemsSQL lists a task's attempts (the task row's current one,
// and the archived ones of rayflow_task_attempts) whose error names an
// item of the map (pattern $4: the error text naming an item, its index
// captured), newest first, before attempt $2, at most $3 rows: a
// primary-key lookup of the task and a range of the (task_pk,
// attempt_number) index of the attempts.
const MapFailedItemsSQL = `WITH t AS (SELECT id, attempt_number, state, error_type, error_message FROM rayflow_tasks WHERE id = $1)
SELECT x.attempt_number, x.state, coalesce(x.error_type, ''), substring(x.error_message from $4)::bigint,
 octet_length(x.error_message), CASE WHEN octet_length(x.error_message) <= $5 THEN x.error_message END
FROM (
 SELECT attempt_number, state, error_type, error_message FROM t
 UNION ALL
 SELECT a.attempt_number, a.state, a.error_type, a.error_message FROM rayflow_task_attempts a, t
 WHERE a.task_pk = t.id AND a.attempt_number <> t.attempt_number AND a.attempt_number < $2
) x
WHERE x.attempt_number < $2 AND x.error_message ~ $4
ORDER BY x.attempt_number DESC
LIMIT $3`

// MapFailedItems runs MapFailedItemsSQL for task row taskPK. Rows:
// attempt_number, state, error_type (” for none), the item's index,
// message size, message (NULL over maxMessage bytes).
func MapFailedItems(ctx context.Context, q Reader, taskPK, before int64, limit int, pattern string, maxMessage int) (pgx.Rows, error) {
	return q.Query(ctx, MapFailedItemsSQL, taskPK, before, limit, pattern, maxMessage)
}
