package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// advance makes a new attempt of the task current (as a retry does) and returns its identity.
func advance(t testing.TB, pool *pgxpool.Pool, pk int64) common.RunIdentity {
	t.Helper()
	id := common.RunIdentity{SchemaVersion: 1, TaskExecutionPK: pk}
	err := pool.QueryRow(context.Background(), `UPDATE rayflow_tasks SET attempt_number = attempt_number + 1,
 execution_generation = execution_generation + 1, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL
 WHERE id = $1 RETURNING attempt_number, execution_generation, workflow_run_id::text`, pk).Scan(&id.AttemptNumber, &id.ExecutionGeneration, &id.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newSink(t testing.TB, pool *pgxpool.Pool) *pgstore.Sink {
	t.Helper()
	s, err := pgstore.NewSink(pool, pgstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTask inserts a RUNNING task and returns its run identity.
func newTask(t testing.TB, pool *pgxpool.Pool) common.RunIdentity {
	t.Helper()
	_, id := pgstoretest.NewTask(t, pool, "test")
	return id
}
