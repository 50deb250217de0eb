package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// TestTaskFailures: the task page lists each attempt's stored error
// (type and message) first, with the failed node of the attempt's
// retained detail linked to the graph's node page; an attempt without
// progress detail says the node is not recorded, and a message over the
// inline bound is not shown.
func TestTaskFailures(t *testing.T) {
	e := newEnv(t, 6)
	ctx := context.Background()
	// Attempt 1 fails at node 5 first (node 3, first in node order, later),
	// as its progress records.
	e.c.States[3], e.c.States[5] = detail.NodeStateFailed, detail.NodeStateFailed
	p := e.c.Pub(false, true)
	later := "2026-12-01T10:00:09Z"
	p.Details[3].FinishedAt = &later
	e.c.Publish(t, e.pool, p)
	// Archived as a retry does; attempt 2 fails with no progress and a long message.
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at,
 workflow_progress_summary_json, error_type, error_message)
 SELECT id, 1, execution_generation, workflow_run_id, 'FAILED', now(), workflow_progress_summary_json, 'StepError', 'step n000005: boom' FROM rayflow_tasks WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'FAILED', attempt_number = 2, execution_generation = 1, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL, finished_at = now(), error_type = 'ValueError', error_message = $2 WHERE task_id = $1`,
		e.taskID, strings.Repeat("x", ErrorMaxBytes+1)); err != nil {
		t.Fatal(err)
	}
	code, _, body := e.get(t, "chain", "/tasks/"+e.taskID)
	if code != 200 {
		t.Fatalf("task page: %d", code)
	}
	d := parse(t, body)
	var rows [][]string
	var links []string
	for _, tr := range d.all("tr", func(n *html.Node) bool { return attr(n, "data-attempt") != "" }) {
		var cells []string
		for _, td := range (dom{tr}).all("td", nil) {
			cells = append(cells, text(td))
		}
		rows = append(rows, cells)
		for _, a := range (dom{tr}).all("a", nil) {
			links = append(links, attr(a, "href"))
		}
	}
	want := [][]string{
		{"1", "FAILED", "StepError", "step n000005: boom", pgstoretest.NodeID(5) + ": boom"},
		{"2", "FAILED", "ValueError", "over 4 KiB, not shown", "not recorded"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{nodeHref(e.taskID, 1, pgstoretest.NodeID(5))}, links); diff != "" {
		t.Errorf("failed node links (-want +got):\n%s", diff)
	}
	// The failures come before the task's other details.
	if i, j := strings.Index(string(body), `id="failures"`), strings.Index(string(body), "<dl>"); i < 0 || i > j {
		t.Errorf("failures at %d, details at %d", i, j)
	}
	// The link opens the node's page.
	if code, _, body := e.get(t, "chain", links[0]); code != 200 || text(parse(t, body).byID("node-state")) != "FAILED" {
		t.Errorf("failed node page: %d", code)
	}
}
