package main

import (
	"context"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
)

// rayflow cleanup progress: usage errors, dry run, delete, and a failing
// candidate making the exit status non-zero.
func TestCleanupProgressCommand(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	pool := pgtest.PoolAt(t, db)
	ctx := context.Background()
	if _, err := durable.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cleanup"}, {"cleanup", "nodes"}, {"cleanup", "progress", "--batch-size", "0"}, {"cleanup", "progress", "--batch-size", "1001"}} {
		if code, _, _ := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want usage", args, code)
		}
	}
	// Two empty runs of a finished task, two hours old.
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, finished_at) VALUES (gen_random_uuid(), 't', '{}', 'SUCCEEDED', now());
 INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, updated_at)
 SELECT id, a, a, gen_random_uuid(), now() - interval '2 hours' FROM rayflow_tasks, generate_series(1, 2) a`); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "cleanup", "progress", "--batch-size", "1000")
	if code != exitOK || strings.TrimSpace(out) != "Workflow progress cleanup dry-run: 2 eligible, 0 deleted, 0 failed, 0 skipped (0 expired runs, 0 pending manifests, 0 orphan pages, 2 empty runs)." {
		t.Fatalf("dry run: %d %q", code, out)
	}
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
 CREATE TRIGGER refuse BEFORE DELETE ON rayflow_progress_runs FOR EACH ROW WHEN (OLD.attempt_number = 1) EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "cleanup", "progress", "--delete")
	if code != exitError || !strings.Contains(out, "delete: 2 eligible, 1 deleted, 1 failed") || !strings.Contains(errOut, "refused") {
		t.Fatalf("delete with a failure: %d %q %q", code, out, errOut)
	}
}
