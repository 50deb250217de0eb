package pgstore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// finishedRun publishes a terminal run of n nodes, ends the task, archives
// its summary on an attempt row, and makes its detail expired.
func finishedRun(t *testing.T, pool *pgxpool.Pool, n int) common.RunIdentity {
	t.Helper()
	ctx := t.Context()
	id := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(id, n)
	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	if err := sink.Publish(ctx, c.Pub(true, true)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at, workflow_progress_summary_json)
 SELECT id, attempt_number, execution_generation, workflow_run_id, 'SUCCEEDED', now(), workflow_progress_summary_json FROM rayflow_tasks WHERE id = $1`,
		`UPDATE rayflow_tasks SET state = 'SUCCEEDED', finished_at = now() WHERE id = $1`,
		`UPDATE rayflow_progress_runs SET detail_expires_at = now() - interval '1 second' WHERE task_pk = $1`,
	} {
		if _, err := pool.Exec(ctx, q, id.TaskExecutionPK); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func summaries(t *testing.T, pool *pgxpool.Pool, pk int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(t.Context(), `SELECT t.workflow_progress_summary_json || '|' || a.workflow_progress_summary_json
 FROM rayflow_tasks t JOIN rayflow_task_attempts a ON a.task_pk = t.id WHERE t.id = $1`, pk).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCleanupDryRunThenDelete(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	expired := finishedRun(t, pool, 300)
	before := summaries(t, pool, expired.TaskExecutionPK)
	// The active run, with an expiry in the past: protected.
	active := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(active, 50)
	if err := sink.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE rayflow_progress_runs SET detail_expires_at = now() - interval '1 day' WHERE task_pk = $1`,
		// A pending manifest and an orphan page, both two hours old.
		`INSERT INTO rayflow_progress_manifests (manifest_id, run_pk, topology_version, slot, manifest_digest, payload, node_count, edge_count,
   node_page_count, edge_page_count, encoded_bytes, decoded_bytes, created_at)
 SELECT manifest_id || '-x', run_pk, topology_version + 1, 'PENDING', manifest_digest, payload, node_count, edge_count, 0, 0,
   octet_length(payload), octet_length(payload), now() - interval '2 hours' FROM rayflow_progress_manifests r WHERE run_pk = (SELECT id FROM rayflow_progress_runs WHERE task_pk = $1)`,
		`INSERT INTO rayflow_progress_pages (run_pk, digest, collection, payload, item_count, encoded_bytes, decoded_bytes, created_at)
 SELECT id, repeat('e', 64), 'EDGE', '{}', 1, 2, 2, now() - interval '2 hours' FROM rayflow_progress_runs WHERE task_pk = $1`,
		// An empty run of an older attempt, two hours old.
		`INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, created_at, updated_at)
 VALUES ($1, 7, 7, gen_random_uuid(), now() - interval '2 hours', now() - interval '2 hours')`,
	} {
		if _, err := pool.Exec(ctx, q, active.TaskExecutionPK); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	count := func(table string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	nodesBefore := count("rayflow_progress_nodes")
	dry, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Workflow progress cleanup dry-run: 4 eligible, 0 deleted, 0 failed, 0 skipped (1 expired runs, 1 pending manifests, 1 orphan pages, 1 empty runs)."
	if dry.Line() != want || count("rayflow_progress_nodes") != nodesBefore {
		t.Fatalf("dry run: %s (nodes %d → %d)", dry.Line(), nodesBefore, count("rayflow_progress_nodes"))
	}
	res, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(strings.Replace(want, "dry-run", "delete", 1), "0 deleted", "4 deleted", 1); res.Line() != want {
		t.Fatalf("delete: %s, want %s", res.Line(), want)
	}
	if after := summaries(t, pool, expired.TaskExecutionPK); after != before {
		t.Fatal("task/attempt summaries changed by cleanup")
	}
	if n := count("rayflow_progress_nodes"); n != 50 {
		t.Fatalf("%d detail rows left, want the active run's 50", n)
	}
	rep, err := pgstore.Verify(ctx, pool, active.TaskExecutionPK, 0)
	if err != nil || rep.Availability != summary.DetailAvailabilityAvailable {
		t.Fatalf("active run after cleanup: %v %+v", err, rep)
	}
	// Nothing left: a second pass finds nothing.
	if res, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{Delete: true}); err != nil || res.Eligible != 0 {
		t.Fatalf("second pass: %v %s", err, res.Line())
	}
}

func TestCleanupRecordsFailuresAndGoesOn(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	a := finishedRun(t, pool, 5)
	b := finishedRun(t, pool, 5)
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$;
 CREATE TRIGGER refuse BEFORE DELETE ON rayflow_progress_runs FOR EACH ROW WHEN (OLD.task_pk = `+itoa(a.TaskExecutionPK)+`) EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	res, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{Delete: true, BatchSize: 1000})
	if !errors.Is(err, pgstore.ErrCleanupFailed) || res.Failed != 1 || res.Deleted != 1 {
		t.Fatalf("%v: %s", err, res.Line())
	}
	var msg string
	if err := pool.QueryRow(ctx, `SELECT cleanup_error FROM rayflow_progress_runs WHERE task_pk = $1`, a.TaskExecutionPK).Scan(&msg); err != nil || !strings.Contains(msg, "refused by test") {
		t.Fatalf("cleanup_error %q (%v)", msg, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_progress_runs WHERE task_pk = $1`, b.TaskExecutionPK).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the later candidate was not deleted (%d, %v)", n, err)
	}
	for _, size := range []int{-1, 1001} {
		if _, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{BatchSize: size}); err == nil {
			t.Fatalf("batch size %d accepted", size)
		}
	}
	for _, size := range []int{1, 1000} {
		if _, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{BatchSize: size}); err != nil {
			t.Fatalf("batch size %d: %v", size, err)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
