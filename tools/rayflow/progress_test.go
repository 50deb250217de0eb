package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
)

// rayflow progress verify: a worker's stored runs check; a corrupted
// topology page and a deleted node detail row are reported (CORRUPT,
// MISSING) with exit status 1; usage errors are 2.
func TestProgressVerify(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate: %s", errOut)
	}
	for _, bad := range [][]string{{"progress"}, {"progress", "verify"}, {"progress", "verify", "--all", "x"}, {"progress", "verify", "nope"}} {
		if code, _, _ := runCLI(t, "", bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	var ids []string
	for _, in := range []string{"30", "3"} {
		code, out, errOut := runCLI(t, "", "tasks", "enqueue", "fanout", "--input", in)
		if code != exitOK {
			t.Fatalf("enqueue: %s", errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var b strings.Builder
		done <- run(ctx, []string{"worker", "--concurrency", "2", "--poll-max-interval", "200ms"}, env{stdin: strings.NewReader(""), stdout: &b, stderr: &b})
	}()
	for _, id := range ids {
		if code, _, errOut := runCLI(t, "", "tasks", "wait", id, "--timeout", "60s"); code != exitOK {
			t.Fatalf("wait: %s", errOut)
		}
	}
	stop()
	<-done
	if code, out, _ := runCLI(t, "", "progress", "verify", "--all"); code != exitOK || !strings.Contains(out, "verified 4 summaries: 4 ok") {
		t.Fatalf("verify --all: %d %q", code, out)
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// one byte changed in a page of the first task's run: its digest no longer checks
	if _, err := conn.Exec(t.Context(), `UPDATE rayflow_progress_pages
 SET payload = overlay(payload PLACING CASE WHEN substr(payload, 3, 1) = 'a' THEN 'b' ELSE 'a' END FROM 3 FOR 1) WHERE id = (SELECT min(p.id)
 FROM rayflow_progress_pages p JOIN rayflow_progress_runs r ON r.id = p.run_pk JOIN rayflow_tasks t ON t.id = r.task_pk WHERE t.task_id = $1)`, ids[0]); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "progress", "verify", "--all")
	if code != exitError || !strings.Contains(out, ids[0]+" task row: CORRUPT") || !strings.Contains(out, ids[0]+" attempt 1: CORRUPT") ||
		strings.Contains(out, ids[1]) || !strings.Contains(out, "verified 4 summaries: 2 ok, 2 MISSING or CORRUPT") {
		t.Fatalf("verify after a corrupt page: %d %q", code, out)
	}
	if _, err := conn.Exec(t.Context(), `DELETE FROM rayflow_progress_nodes WHERE run_pk = (SELECT r.id FROM rayflow_progress_runs r
 JOIN rayflow_tasks t ON t.id = r.task_pk WHERE t.task_id = $1)`, ids[1]); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "", "progress", "verify", ids[1])
	if code != exitError || !strings.Contains(out, ids[1]+" task row: MISSING") || !strings.Contains(out, "verified 2 summaries: 0 ok") {
		t.Fatalf("verify after deleted detail rows: %d %q", code, out)
	}
}
