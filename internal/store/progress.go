package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The progress storage's writes (progress/pgstore): the summary on
// the task row and the rayflow_progress_* tables (migrations 0002, 0005).
// The statements run under a run's fence; those queued on a batch abort
// it with SQLSTATE RF001 when the fence no longer matches, RF002 when a
// staged manifest fails verification and RF003 when a first publication
// finds the run row there (rayflow_require, migration 0004).

// Run is a run's exact identity: its task, attempt, generation and run id.
type Run struct {
	TaskPK  int64
	Attempt int64
	Gen     int64
	RunID   string
}

func (r Run) args(more ...any) []any {
	return append([]any{r.TaskPK, r.Attempt, r.Gen, r.RunID}, more...)
}

// runFence matches Run's arguments $1–$4 on rayflow_tasks.
const runFence = `id = $1 AND attempt_number = $2 AND execution_generation = $3 AND workflow_run_id = $4::uuid`

// updateSummarySQL is the conditional summary update; as a transaction's
// first statement it also locks the task row.
const updateSummarySQL = `UPDATE rayflow_tasks SET workflow_progress_summary_json = $5, progress_summary_revision = $6
 WHERE ` + runFence + ` AND state = 'RUNNING' AND (progress_summary_revision IS NULL OR progress_summary_revision < $6)`

// fencedSummarySQL is updateSummarySQL aborting its batch (RF001) when it
// changes no row.
const fencedSummarySQL = `WITH u AS (` + updateSummarySQL + ` RETURNING 1)
SELECT rayflow_require(count(*), 'RF001', 'progressstore: the run fence no longer matches') FROM u`

// fencedLockSQL locks the task row under the same conditions as
// updateSummarySQL without writing it (RF001 when they do not hold).
const fencedLockSQL = `WITH u AS (SELECT 1 FROM rayflow_tasks WHERE ` + runFence + ` AND state = 'RUNNING'
   AND (progress_summary_revision IS NULL OR progress_summary_revision < $5) FOR NO KEY UPDATE)
SELECT rayflow_require(count(*), 'RF001', 'progressstore: the run fence no longer matches') FROM u`

// UpdateSummary stores summary (canonical JSON) with revision rev on the
// RUNNING task of run r when rev advances; 0 rows otherwise.
func UpdateSummary(ctx context.Context, q Querier, r Run, summary string, rev int64) (pgconn.CommandTag, error) {
	return q.Exec(ctx, updateSummarySQL, r.args(summary, rev)...)
}

// QueueFencedSummary queues UpdateSummary on b, aborting the batch (RF001)
// when it changes no row.
func QueueFencedSummary(b *pgx.Batch, r Run, summary string, rev int64) {
	b.Queue(fencedSummarySQL, r.args(summary, rev)...)
}

// QueueFencedLock queues a lock of the task row of run r under
// UpdateSummary's conditions for revision rev, without writing it (RF001
// when they do not hold): the first statement of a deferred final
// publication, whose summary the caller's terminal transition writes.
func QueueFencedLock(b *pgx.Batch, r Run, rev int64) {
	b.Queue(fencedLockSQL, r.args(rev)...)
}

// RunTaskState reads the state and summary revision (nil for none) of
// the task of run r (pgx.ErrNoRows when the fence matches no task).
func RunTaskState(ctx context.Context, q RowReader, r Run) (state string, rev *int64, err error) {
	err = q.QueryRow(ctx, `SELECT state, progress_summary_revision FROM rayflow_tasks WHERE `+runFence, r.args()...).Scan(&state, &rev)
	return state, rev, err
}

// RunDetail is a publication's update of its run row: the detail
// revision, the deltas of the counters and the new totals.
type RunDetail struct {
	RunPK                               int64
	Revision                            int64
	Pending, Running, Succeeded, Failed int
	Truncated                           int
	Events                              int
	Reasons                             string
	Bytes                               int64
	RetentionDays                       int64
	Expires                             *time.Time
}

// QueueRunDetail queues the update of the run row.
func QueueRunDetail(b *pgx.Batch, d RunDetail) {
	b.Queue(`UPDATE rayflow_progress_runs SET detail_revision = $2, detail_node_count = detail_node_count + $3 + $4 + $5 + $6,
 detail_pending_count = detail_pending_count + $3, detail_running_count = detail_running_count + $4,
 detail_succeeded_count = detail_succeeded_count + $5, detail_failed_count = detail_failed_count + $6,
 detail_truncated_count = detail_truncated_count + $7, detail_event_count = $8, detail_truncation_reasons = $9,
 detail_encoded_bytes = $10, detail_decoded_bytes = $10, detail_retention_days = $11, detail_expires_at = $12, updated_at = now()
 WHERE id = $1`, d.RunPK, d.Revision, d.Pending, d.Running, d.Succeeded, d.Failed, d.Truncated, d.Events, d.Reasons, d.Bytes,
		d.RetentionDays, d.Expires)
}

// QueuePromote queues the promotion of the run's PENDING manifest m to
// CURRENT (the CURRENT one deleted first), verified against m (RF002 when
// it does not match or misses page links).
func QueuePromote(b *pgx.Batch, runPK int64, m Manifest) {
	b.Queue(`DELETE FROM rayflow_progress_manifests WHERE run_pk = $1 AND slot = 'CURRENT'`, runPK)
	b.Queue(`WITH u AS (UPDATE rayflow_progress_manifests SET slot = 'CURRENT', published_at = now()
 WHERE manifest_id = $1 AND run_pk = $2 AND slot = 'PENDING' AND manifest_digest = $3 AND encoded_bytes = $4
   AND node_count = $5 AND edge_count = $6
   AND (SELECT count(*) FROM rayflow_progress_manifest_pages WHERE manifest_id = $1) = node_page_count + edge_page_count
 RETURNING 1)
SELECT rayflow_require(count(*), 'RF002', 'progressstore: the staged manifest failed verification') FROM u`,
		m.ID, runPK, m.Digest, m.EncodedBytes, m.Nodes, m.Edges)
}

// detailColumns are rows' columns as arrays: keys, node ids, invocation
// ids, states, event counts, truncated, payloads, digests.
func detailColumns(rows []DetailRow) []any {
	n := len(rows)
	keys, ids, states, payloads, digests := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	invs, evs, truncs := make([]*string, n), make([]int32, n), make([]bool, n)
	for i, r := range rows {
		keys[i], ids[i], states[i], payloads[i], digests[i] = r.Key, r.ID, r.State, r.Payload, r.Digest
		invs[i], evs[i], truncs[i] = r.Invocation, r.Events, r.Truncated
	}
	return []any{keys, ids, invs, states, evs, truncs, payloads, digests}
}

// QueueUpsertDetail queues the upsert of the run's detail rows rows, all
// of topology version topoVersion and detail revision rev.
func QueueUpsertDetail(b *pgx.Batch, runPK, topoVersion, rev int64, rows []DetailRow) {
	b.Queue(`INSERT INTO rayflow_progress_nodes AS n (run_pk, node_key, node_id, invocation_id, state, event_count, truncated,
   payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision)
 SELECT $1, k, i, inv, st, ec, tr, pl, dg, octet_length(pl), octet_length(pl), $2, $3
 FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bool[], $10::text[], $11::text[]) AS x(k, i, inv, st, ec, tr, pl, dg)
 ON CONFLICT (run_pk, node_key) DO UPDATE SET invocation_id = excluded.invocation_id, state = excluded.state,
   event_count = excluded.event_count, truncated = excluded.truncated, payload = excluded.payload, digest = excluded.digest,
   encoded_bytes = excluded.encoded_bytes, decoded_bytes = excluded.decoded_bytes,
   last_topology_version = excluded.last_topology_version, last_detail_revision = excluded.last_detail_revision, updated_at = now()`,
		append([]any{runPK, topoVersion, rev}, detailColumns(rows)...)...)
}

// QueueDeleteDetail queues the deletion of the run's detail rows of keys.
func QueueDeleteDetail(b *pgx.Batch, runPK int64, keys []string) {
	b.Queue(`DELETE FROM rayflow_progress_nodes WHERE run_pk = $1 AND node_key = ANY($2::text[])`, runPK, keys)
}

// CopyDetail writes a run's first detail rows by COPY (several times
// cheaper per row than the upsert) in tx, stamped now.
func CopyDetail(ctx context.Context, tx pgx.Tx, runPK, topoVersion, rev int64, rows []DetailRow, now time.Time) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"rayflow_progress_nodes"}, []string{"run_pk", "node_key", "node_id", "invocation_id", "state",
		"event_count", "truncated", "payload", "digest", "encoded_bytes", "decoded_bytes", "last_topology_version", "last_detail_revision",
		"created_at", "updated_at"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			return []any{runPK, r.Key, r.ID, r.Invocation, r.State, r.Events, r.Truncated, r.Payload, r.Digest,
				int32(len(r.Payload)), int32(len(r.Payload)), topoVersion, rev, now, now}, nil
		}))
	return err
}

// firstSQL creates a run's storage in one statement: the run row with its
// counters, the pages, the CURRENT manifest and its page links, the
// detail rows; RF003 when the run row exists.
const firstSQL = `WITH run AS (
  INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_retention_days, detail_revision,
    detail_node_count, detail_pending_count, detail_running_count, detail_succeeded_count, detail_failed_count, detail_truncated_count,
    detail_event_count, detail_truncation_reasons, detail_encoded_bytes, detail_decoded_bytes, detail_expires_at)
  VALUES ($1, $2, $3, $4::uuid, $5, $6, $7::int + $8::int + $9::int + $10::int, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)
  ON CONFLICT (task_pk, attempt_number, execution_generation, run_id) DO NOTHING RETURNING id
), pg AS (
  INSERT INTO rayflow_progress_pages (run_pk, digest, collection, payload, item_count, encoded_bytes, decoded_bytes)
  SELECT run.id, d, c, p, i, octet_length(p), octet_length(p) FROM run, unnest($16::text[], $17::text[], $18::text[], $19::int[]) AS x(d, c, p, i)
  RETURNING id, digest
), mf AS (
  INSERT INTO rayflow_progress_manifests (manifest_id, run_pk, topology_version, slot, manifest_digest, truncation_reasons,
    payload, node_count, edge_count, node_page_count, edge_page_count, encoded_bytes, decoded_bytes, published_at)
  SELECT $20, run.id, $21, 'CURRENT', $22, $23, $24, $25, $26, $27, $28, $29, $29, now() FROM run
  RETURNING manifest_id
), ln AS (
  INSERT INTO rayflow_progress_manifest_pages (manifest_id, page_id, collection, page_index)
  SELECT mf.manifest_id, pg.id, x.c, x.i FROM mf, unnest($16::text[], $17::text[], $30::int[]) AS x(d, c, i) JOIN pg ON pg.digest = x.d
), nd AS (
  INSERT INTO rayflow_progress_nodes (run_pk, node_key, node_id, invocation_id, state, event_count, truncated,
    payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision)
  SELECT run.id, k, i, inv, st, ec, tr, pl, dg, octet_length(pl), octet_length(pl), $21, $6
  FROM run, unnest($31::text[], $32::text[], $33::text[], $34::text[], $35::int[], $36::bool[], $37::text[], $38::text[]) AS x(k, i, inv, st, ec, tr, pl, dg)
)
SELECT max(id), rayflow_require(count(*), 'RF003', 'progressstore: the run row exists') FROM run`

// pageColumns are pages' columns as arrays: digests, collections,
// payloads, item counts, indexes.
func pageColumns(pages []Page) (digests, colls, payloads []string, items, idx []int32) {
	n := len(pages)
	digests, colls, payloads = make([]string, n), make([]string, n), make([]string, n)
	items, idx = make([]int32, n), make([]int32, n)
	for i, p := range pages {
		digests[i], colls[i], payloads[i], items[i], idx[i] = p.Digest, p.Collection, p.Payload, p.Items, p.Index
	}
	return
}

// QueueFirstPublication queues the storage of run r's first publication
// in one statement; its row holds the new run's id (and RF003 aborts the
// batch when the run row exists). The detail rows are all of the
// manifest's version and the run's detail revision.
func QueueFirstPublication(b *pgx.Batch, r FirstRun) {
	digests, colls, payloads, items, idx := pageColumns(r.Pages)
	m := r.Manifest
	args := []any{r.TaskPK, r.Attempt, r.Gen, r.RunID, r.RetentionDays, r.DetailRevision,
		r.Pending, r.Running, r.Succeeded, r.Failed, r.Truncated, r.Events, r.Reasons, r.Bytes, r.Expires,
		digests, colls, payloads, items,
		m.ID, m.Version, m.Digest, m.Reasons, m.Payload, m.Nodes, m.Edges, m.NodePages, m.EdgePages, m.EncodedBytes, idx}
	b.Queue(firstSQL, append(args, detailColumns(r.Nodes)...)...)
}

// runInsertSQL creates the run row under the fence (any task state: the
// publication checks RUNNING) and returns its id and whether it is new;
// RF001 when the fence matches no task.
const runInsertSQL = `WITH ins AS (INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_retention_days)
 SELECT id, attempt_number, execution_generation, workflow_run_id, $5 FROM rayflow_tasks WHERE ` + runFence + `
 ON CONFLICT (task_pk, attempt_number, execution_generation, run_id) DO UPDATE SET updated_at = now() RETURNING id, xmax = 0 AS inserted)
SELECT max(id), bool_or(inserted), rayflow_require(count(*), 'RF001', 'progressstore: the run fence no longer matches') FROM ins`

// QueueRunInsert queues the creation (or touch) of run r's row; its row
// holds the run's id, whether it is new, and 1.
func QueueRunInsert(b *pgx.Batch, r Run, retentionDays int64) {
	b.Queue(runInsertSQL, r.args(retentionDays)...)
}

// runRef is the id of the run row of identity $1…$4 (a later statement of
// the batch that created it sees it).
const runRef = `(SELECT id FROM rayflow_progress_runs WHERE task_pk = $1 AND attempt_number = $2 AND execution_generation = $3 AND run_id = $4::uuid)`

// QueueStage queues manifest m with its pages as run r's PENDING
// manifest (replacing an older pending one): four statements.
func QueueStage(b *pgx.Batch, r Run, m Manifest, pages []Page) {
	digests, colls, payloads, items, idx := pageColumns(pages)
	b.Queue(`DELETE FROM rayflow_progress_manifests WHERE run_pk = `+runRef+` AND slot = 'PENDING'`, r.args()...)
	b.Queue(`INSERT INTO rayflow_progress_pages (run_pk, digest, collection, payload, item_count, encoded_bytes, decoded_bytes)
 SELECT r.id, d, c, p, i, octet_length(p), octet_length(p) FROM `+runRef+` AS r(id), unnest($5::text[], $6::text[], $7::text[], $8::int[]) AS x(d, c, p, i)
 ON CONFLICT (run_pk, digest) DO NOTHING`, r.args(digests, colls, payloads, items)...)
	b.Queue(`INSERT INTO rayflow_progress_manifests (manifest_id, run_pk, topology_version, slot, manifest_digest, truncation_reasons,
   payload, node_count, edge_count, node_page_count, edge_page_count, encoded_bytes, decoded_bytes)
 VALUES ($5, `+runRef+`, $6, 'PENDING', $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
		r.args(m.ID, m.Version, m.Digest, m.Reasons, m.Payload, m.Nodes, m.Edges, m.NodePages, m.EdgePages, m.EncodedBytes)...)
	b.Queue(`INSERT INTO rayflow_progress_manifest_pages (manifest_id, page_id, collection, page_index)
 SELECT $5, p.id, x.c, x.i FROM unnest($6::text[], $7::text[], $8::int[]) AS x(d, c, i)
 JOIN rayflow_progress_pages p ON p.run_pk = `+runRef+` AND p.digest = x.d`, r.args(m.ID, digests, colls, idx)...)
}

// RunDetailRevision reads the detail revision (nil for none) of run row
// runPK.
func RunDetailRevision(ctx context.Context, q RowReader, runPK int64) (*int64, error) {
	var rev *int64
	err := q.QueryRow(ctx, `SELECT detail_revision FROM rayflow_progress_runs WHERE id = $1`, runPK).Scan(&rev)
	return rev, err
}

// RunDetailDigests lists the detail rows of run row runPK: node_key,
// digest, state, event_count, truncated, encoded_bytes.
func RunDetailDigests(ctx context.Context, q Reader, runPK int64) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT node_key, digest, state, event_count, truncated, encoded_bytes FROM rayflow_progress_nodes WHERE run_pk = $1`, runPK)
}

// The progress verifier's reads (progress/pgstore's Verify).

// TaskSummarySize reads the size of task pk's progress summary (nullable)
// and the summary when it is at most 16 KiB.
func TaskSummarySize(ctx context.Context, q RowReader, pk int64) pgx.Row {
	return q.QueryRow(ctx, `SELECT octet_length(workflow_progress_summary_json),
 CASE WHEN octet_length(workflow_progress_summary_json) <= 16384 THEN workflow_progress_summary_json END FROM rayflow_tasks WHERE id = $1`, pk)
}

// AttemptSummarySize is TaskSummarySize for the archived attempt of task pk.
func AttemptSummarySize(ctx context.Context, q RowReader, pk int64, attempt int) pgx.Row {
	return q.QueryRow(ctx, `SELECT octet_length(workflow_progress_summary_json),
 CASE WHEN octet_length(workflow_progress_summary_json) <= 16384 THEN workflow_progress_summary_json END FROM rayflow_task_attempts WHERE task_pk = $1 AND attempt_number = $2`, pk, attempt)
}

// RunCounters reads run r's row: id, detail_revision (nullable),
// detail_node_count, detail_pending_count, detail_running_count,
// detail_succeeded_count, detail_failed_count, detail_event_count.
func RunCounters(ctx context.Context, q RowReader, r Run) pgx.Row {
	return q.QueryRow(ctx, `SELECT id, detail_revision, detail_node_count, detail_pending_count, detail_running_count,
 detail_succeeded_count, detail_failed_count, detail_event_count
 FROM rayflow_progress_runs WHERE task_pk = $1 AND attempt_number = $2 AND execution_generation = $3 AND run_id = $4::uuid`, r.args()...)
}

// ManifestRow reads manifest id of run row runPK: payload,
// manifest_digest, slot, topology_version, encoded_bytes, node_count,
// edge_count.
func ManifestRow(ctx context.Context, q RowReader, id string, runPK int64) pgx.Row {
	return q.QueryRow(ctx, `SELECT payload, manifest_digest, slot, topology_version, encoded_bytes, node_count, edge_count
 FROM rayflow_progress_manifests WHERE manifest_id = $1 AND run_pk = $2`, id, runPK)
}

// ManifestPages lists manifest id's linked pages, NODE before EDGE, by
// index: link collection, page_index, digest, payload, item_count, page
// collection.
func ManifestPages(ctx context.Context, q Reader, id string) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT l.collection, l.page_index, p.digest, p.payload, p.item_count, p.collection
 FROM rayflow_progress_manifest_pages l JOIN rayflow_progress_pages p ON p.id = l.page_id
 WHERE l.manifest_id = $1 ORDER BY l.collection DESC, l.page_index`, id)
}

// RunDetailRows lists the detail rows of run row runPK: node_key,
// node_id, state, event_count, payload, digest.
func RunDetailRows(ctx context.Context, q Reader, runPK int64) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT node_key, node_id, state, event_count, payload, digest FROM rayflow_progress_nodes WHERE run_pk = $1`, runPK)
}

// progressSummariesSQL lists the stored progress summaries: the task
// row's (attempt 0) and every archived attempt's; %[1]s restricts the
// tasks.
const progressSummariesSQL = `SELECT t.id, t.task_id::text, 0 FROM rayflow_tasks t WHERE t.workflow_progress_summary_json IS NOT NULL %[1]s
 UNION ALL SELECT t.id, t.task_id::text, a.attempt_number FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk
 WHERE a.workflow_progress_summary_json IS NOT NULL %[1]s ORDER BY 1, 3`

// ProgressSummaries lists the stored progress summaries of the tasks
// taskIDs (nil: every task), by task pk then attempt. Rows: task pk,
// task_id, attempt (0 for the task row's summary).
func ProgressSummaries(ctx context.Context, q Reader, taskIDs []string) (pgx.Rows, error) {
	if taskIDs == nil {
		return q.Query(ctx, fmt.Sprintf(progressSummariesSQL, ""))
	}
	return q.Query(ctx, fmt.Sprintf(progressSummariesSQL, "AND t.task_id = ANY($1::uuid[])"), taskIDs)
}

// SendBatch sends b as one round trip (one implicit transaction) and
// returns its first error.
func SendBatch(ctx context.Context, q interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, b *pgx.Batch) error {
	br := q.SendBatch(ctx, b)
	var err error
	for i := 0; err == nil && i < b.Len(); i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
