package pgstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

func TestPublishChain(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(id, 1000)
	if err := sink.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	st := sink.LastStats()
	if st.Pages == 0 || st.Upserted != 1000 {
		t.Fatalf("initial stats %+v", st)
	}
	// Sparse update: one node PENDING→RUNNING.
	c.States[500] = detail.NodeStateRunning
	if err := sink.Publish(ctx, c.Pub(false, false)); err != nil {
		t.Fatal(err)
	}
	st = sink.LastStats()
	if st.Upserted != 1 || st.Deleted != 0 || st.Pages != 0 || st.Statements > 5 {
		t.Fatalf("sparse stats %+v, want 1 upsert in ≤ 5 statements", st)
	}
	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	if err := sink.Publish(ctx, c.Pub(false, true)); err != nil {
		t.Fatal(err)
	}
	var raw string
	var rev int64
	if err := pool.QueryRow(ctx, `SELECT workflow_progress_summary_json, progress_summary_revision FROM rayflow_tasks WHERE id = $1`, id.TaskExecutionPK).Scan(&raw, &rev); err != nil {
		t.Fatal(err)
	}
	s, err := summary.DecodeSummary([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if rev != summary.ReservedRevision || s.State != summary.StateSucceeded || *s.DetailRevision != 3 {
		t.Fatalf("terminal summary rev %d state %s detail %d", rev, s.State, *s.DetailRevision)
	}
	var nodes, succeeded, cnt, dn int64
	if err := pool.QueryRow(ctx, `SELECT m.node_count, r.detail_succeeded_count, r.detail_node_count,
 (SELECT count(*) FROM rayflow_progress_nodes n WHERE n.run_pk = r.id AND n.state = 'SUCCEEDED')
 FROM rayflow_progress_runs r JOIN rayflow_progress_manifests m ON m.run_pk = r.id AND m.slot = 'CURRENT' WHERE r.task_pk = $1`,
		id.TaskExecutionPK).Scan(&nodes, &succeeded, &cnt, &dn); err != nil {
		t.Fatal(err)
	}
	if nodes != 1000 || succeeded != 1000 || cnt != 1000 || dn != 1000 {
		t.Fatalf("stored nodes %d succeeded %d count %d rows %d", nodes, succeeded, cnt, dn)
	}
}

func TestStaleFence(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(id, 10)
	if err := sink.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	advance(t, pool, id.TaskExecutionPK)
	c.States[0] = detail.NodeStateRunning
	err := sink.Publish(ctx, c.Pub(true, false))
	if !errors.Is(err, progress.ErrStaleFence) {
		t.Fatalf("publish after the fence moved: %v, want ErrStaleFence", err)
	}
	var n int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE id = $1 AND workflow_progress_summary_json IS NULL`, id.TaskExecutionPK).Scan(&n); err != nil || n != 1 {
		t.Fatalf("stale publication wrote the summary (%d, %v)", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_progress_nodes WHERE state = 'RUNNING'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("stale publication wrote detail rows (%d, %v)", n, err)
	}
}

// A sink recreated for the same run (a restarted coordinator) reloads the
// committed rows: counters stay exact and only changes are written.
func TestRecreatedSinkKeepsDeltasExact(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	c := pgstoretest.NewChain(id, 30)
	if err := newSink(t, pool).Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	c.States[2], c.States[3] = detail.NodeStateRunning, detail.NodeStateSucceeded
	second := newSink(t, pool)
	if err := second.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	if st := second.LastStats(); st.Upserted != 2 {
		t.Fatalf("recreated sink upserted %d rows, want the 2 changed", st.Upserted)
	}
	rep, err := pgstore.Verify(ctx, pool, id.TaskExecutionPK, 0)
	if err != nil || rep.Availability != summary.DetailAvailabilityAvailable || len(rep.Problems) > 0 {
		t.Fatalf("%v %+v", err, rep)
	}
}

// A CANCELLING task keeps its last summary: the publication writes
// nothing and is not a stale fence (the run is being cancelled anyway).
func TestCancellingTaskIsNotWritten(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(id, 5)
	if err := sink.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	var before string
	if err := pool.QueryRow(ctx, `UPDATE rayflow_tasks SET state = 'CANCELLING' WHERE id = $1 RETURNING workflow_progress_summary_json`, id.TaskExecutionPK).Scan(&before); err != nil {
		t.Fatal(err)
	}
	c.States[0] = detail.NodeStateRunning
	if err := sink.Publish(ctx, c.Pub(false, false)); err != nil || !sink.LastStats().Skipped {
		t.Fatalf("publish while CANCELLING: %v, skipped %v", err, sink.LastStats().Skipped)
	}
	var after string
	var running int
	if err := pool.QueryRow(ctx, `SELECT workflow_progress_summary_json, (SELECT detail_running_count FROM rayflow_progress_runs WHERE task_pk = $1) FROM rayflow_tasks WHERE id = $1`, id.TaskExecutionPK).Scan(&after, &running); err != nil {
		t.Fatal(err)
	}
	if after != before || running != 0 {
		t.Fatalf("a CANCELLING task was written (summary changed %v, running %d)", after != before, running)
	}
}

// The database enforces the bounds too: a 16 KiB summary is stored, one
// byte more is refused; node detail payloads likewise.
func TestSchemaBoundsAtTheCap(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	pad := func(n int) string { return `{"x":"` + strings.Repeat("a", n-8) + `"}` }
	for _, c := range []struct {
		sql  string
		n    int
		okay bool
	}{
		{`UPDATE rayflow_tasks SET workflow_progress_summary_json = $2, progress_summary_revision = 1 WHERE id = $1`, 16384, true},
		{`UPDATE rayflow_tasks SET workflow_progress_summary_json = $2, progress_summary_revision = 1 WHERE id = $1`, 16385, false},
		{`INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_event_count)
 VALUES ($1, 9, 9, gen_random_uuid(), 32 + 0 * length($2))`, 16, true},
		{`INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_event_count)
 VALUES ($1, 9, 10, gen_random_uuid(), 33 + 0 * length($2))`, 16, false},
	} {
		_, err := pool.Exec(ctx, c.sql, id.TaskExecutionPK, pad(c.n))
		if (err == nil) != c.okay {
			t.Errorf("%d bytes: %v (want ok=%v)", c.n, err, c.okay)
		}
	}
}
