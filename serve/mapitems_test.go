package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"golang.org/x/net/html"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
	"github.com/rayflow/rayflow/serve/reader"
)

// mapItemsEnv is a task of six attempts whose errors name items of the
// map n000003 (or not): attempt 1 (archived with its progress: the map
// failed with 4 items in flight) item 17, attempt 2 an item of another
// map, attempt 3 item 5 (a step inside the item's body), attempt 4 item 9
// with a message over 4 KiB, attempt 5 an item of a map whose id extends
// n000003's, attempt 6 (the task row's) item 2.
func mapItemsEnv(t *testing.T) (*env, string) {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t, 1)
	taskID, id := pgstoretest.NewTask(t, e.pool, "chain")
	c := pgstoretest.NewChain(id, 5)
	c.States[0], c.States[1], c.States[2], c.States[3] = detail.NodeStateSucceeded, detail.NodeStateSucceeded, detail.NodeStateSucceeded, detail.NodeStateFailed
	p := c.Pub(true, true)
	p.Nodes[3].Kind = topology.NodeKindMap
	ten := int64(10)
	p.Details[3].Fanout = &detail.NodeFanout{MaxItems: &ten, SubmittedItems: 6, CompletedItems: 2, InFlightItems: 4}
	c.Publish(t, e.pool, p)
	e.taskID, e.c = taskID, c
	mapID := pgstoretest.NodeID(3)
	archive := func(n int, withProgress bool, errType, msg string) {
		t.Helper()
		progress := "NULL"
		if withProgress {
			progress = "workflow_progress_summary_json"
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at,
 workflow_progress_summary_json, error_type, error_message)
 SELECT id, $2, execution_generation, workflow_run_id, 'FAILED', now(), `+progress+`, $3, $4 FROM rayflow_tasks WHERE task_id = $1`, taskID, n, errType, msg); err != nil {
			t.Fatal(err)
		}
	}
	archive(1, true, "StepError", "rayflow: step "+mapID+".m17 (main.Square): boom")
	archive(2, false, "StepError", "rayflow: step "+pgstoretest.NodeID(4)+".m2 (main.Square): another map")
	archive(3, false, "ValueError", "rayflow: step "+mapID+".m5.1 (main.Check): bad input")
	archive(4, false, "StepError", "rayflow: step "+mapID+".m9 (main.Square): "+strings.Repeat("x", ErrorMaxBytes))
	archive(5, false, "StepError", "rayflow: step "+mapID+"0.m1 (main.Square): a map whose id extends it")
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'FAILED', attempt_number = 6, execution_generation = 5, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL, finished_at = now(), error_type = 'StepError', error_message = $2 WHERE task_id = $1`,
		taskID, "rayflow: step "+mapID+".m2 (main.Square): boom"); err != nil {
		t.Fatal(err)
	}
	return e, "/tasks/" + taskID + "/graph/map-items?node_id=" + mapID
}

func itemRows(d dom) [][]string {
	var rows [][]string
	for _, tr := range d.all("tr", func(n *html.Node) bool { return attr(n, "data-attempt") != "" }) {
		var cells []string
		for _, td := range (dom{tr}).all("td", nil) {
			cells = append(cells, text(td))
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestMapFailedItemsPage: a map's failed items page lists, newest attempt
// first, the item each attempt's stored error names (not another map's,
// nor one whose id only starts like it), its error type and message (one
// over 4 KiB not shown, and counted), and the items cancelled with it
// where the attempt's detail of the map recorded them; keyset pages with
// signed cursors bound to the principal, task, map and limit; limit at
// the cap and one over; authorized like the other pages.
func TestMapFailedItemsPage(t *testing.T) {
	e, target := mapItemsEnv(t)
	mapID := pgstoretest.NodeID(3)
	row6 := []string{"6", "2", "FAILED", "StepError", "rayflow: step " + mapID + ".m2 (main.Square): boom", "not recorded"}
	row4 := []string{"4", "9", "FAILED", "StepError", "over 4 KiB, not shown", "not recorded"}
	row3 := []string{"3", "5", "FAILED", "ValueError", "rayflow: step " + mapID + ".m5.1 (main.Check): bad input", "not recorded"}
	row1 := []string{"1", "17", "FAILED", "StepError", "rayflow: step " + mapID + ".m17 (main.Square): boom", "3"}

	code, _, body := e.get(t, "chain", target)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	d := parse(t, body)
	if diff := cmp.Diff([][]string{row6, row4, row3, row1}, itemRows(d)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(text(d.byID("bound")), "at most one failed item") || text(d.byID("omitted")) != "1 message is over 4 KiB and not shown." {
		t.Errorf("bound %q, omitted %q", text(d.byID("bound")), text(d.byID("omitted")))
	}
	if d.byID("next-page") != nil || d.byID("first-page") != nil {
		t.Error("one page has page links")
	}

	// Pages of two: the cursor carries on from the last attempt shown.
	_, _, body = e.get(t, "chain", target+"&limit=2")
	d = parse(t, body)
	next := attr(d.byID("next-page"), "href")
	if diff := cmp.Diff([][]string{row6, row4}, itemRows(d)); diff != "" || next == "" {
		t.Fatalf("page 1 (-want +got):\n%s next %q", diff, next)
	}
	_, _, body = e.get(t, "chain", next)
	d = parse(t, body)
	if diff := cmp.Diff([][]string{row3, row1}, itemRows(d)); diff != "" || d.byID("next-page") != nil || attr(d.byID("first-page"), "href") != "/tasks/"+e.taskID+"/graph/map-items?limit=2&node_id="+mapID {
		t.Errorf("page 2 (-want +got):\n%s first %q", diff, attr(d.byID("first-page"), "href"))
	}
	u, _ := url.Parse(next)
	cursor := u.Query().Get("cursor")

	for _, c := range []struct {
		name, principal, target string
		code                    int
		errCode                 string
	}{
		{"limit at the cap", "chain", target + "&limit=100", 200, ""},
		{"limit one over", "chain", target + "&limit=101", 400, "INVALID_ARGUMENT"},
		{"limit zero", "chain", target + "&limit=0", 400, "INVALID_ARGUMENT"},
		{"no node", "chain", "/tasks/" + e.taskID + "/graph/map-items", 400, "INVALID_ARGUMENT"},
		{"node id over 256 bytes", "chain", "/tasks/" + e.taskID + "/graph/map-items?node_id=" + strings.Repeat("n", 257), 400, "INVALID_ARGUMENT"},
		{"tampered cursor", "chain", target + "&limit=2&cursor=" + url.QueryEscape(cursor[:len(cursor)-2]+"AA"), 400, "INVALID_CURSOR"},
		{"cursor of another limit", "chain", target + "&limit=3&cursor=" + url.QueryEscape(cursor), 409, "CURSOR_MISMATCH"},
		{"cursor of another map", "chain", "/tasks/" + e.taskID + "/graph/map-items?node_id=n000004&limit=2&cursor=" + url.QueryEscape(cursor), 409, "CURSOR_MISMATCH"},
		{"cursor of another principal", "admin", target + "&limit=2&cursor=" + url.QueryEscape(cursor), 409, "CURSOR_MISMATCH"},
		{"another flow's principal", "other", target, 403, "ACCESS_DENIED"},
		{"another flow's principal, with a cursor", "other", target + "&limit=2&cursor=" + url.QueryEscape(cursor), 403, "ACCESS_DENIED"},
		{"no flow", "nobody", target, 403, "ACCESS_DENIED"},
		{"absent task", "admin", "/tasks/00000000-0000-4000-8000-000000000000/graph/map-items?node_id=x", 404, "NOT_FOUND"},
	} {
		code, body := e.do(t, c.principal, "GET", c.target)
		if code != c.code || body["code"] != c.errCode {
			t.Errorf("%s: %d %v", c.name, code, body)
		}
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login?next=") {
		t.Errorf("unauthenticated: %d %s", w.Code, w.Header().Get("Location"))
	}

	// The map's node page and the failures view link to the page.
	_, _, body = e.get(t, "chain", "/tasks/"+e.taskID+"/graph/node?attempt_number=1&node_id="+mapID)
	if href := attr(parse(t, body).byID("map-items-link"), "href"); href != target {
		t.Errorf("node page links to %q", href)
	}
	_, _, body = e.get(t, "chain", "/tasks/"+e.taskID+"/graph?attempt_number=1&view=failures")
	links := parse(t, body).all("a", func(n *html.Node) bool { return attr(n, "href") == target })
	if len(links) != 1 {
		t.Errorf("the failures view has %d links to the map's failed items", len(links))
	}
}

// TestMapFailedItemsIndexed: over 100,000 archived attempts (1,000 tasks
// of 100) the failed-items query reads the task by its key and the
// attempts by the (task_pk, attempt_number) index, never a sequential
// scan, with custom and generic plans, on a first and a later page.
func TestMapFailedItemsIndexed(t *testing.T) {
	e, _ := mapItemsEnv(t)
	ctx := context.Background()
	start := time.Now()
	if _, err := e.pool.Exec(ctx, `WITH tasks AS (
 INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, claimed_by, workflow_run_id, started_at, attempt_number)
 SELECT gen_random_uuid(), 'chain', '{}', 'FAILED', 'w', gen_random_uuid(), now(), 101 FROM generate_series(1, 1000) RETURNING id)
 INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at, error_type, error_message)
 SELECT tasks.id, a, a - 1, gen_random_uuid(), 'FAILED', now(), 'StepError', 'rayflow: step n000003.m' || a || ' (main.Square): boom'
 FROM tasks, generate_series(1, 100) a`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `ANALYZE rayflow_tasks; ANALYZE rayflow_task_attempts`); err != nil {
		t.Fatal(err)
	}
	t.Logf("100,000 attempts inserted and analyzed in %v", time.Since(start))
	var pk int64
	if err := e.pool.QueryRow(ctx, `SELECT id FROM rayflow_tasks WHERE attempt_number = 101 LIMIT 1`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	for _, before := range []int64{0, 50} {
		sql, args := reader.MapFailedItemsQuery(pk, pgstoretest.NodeID(3), before, MaxListLimit+1, ErrorMaxBytes)
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			err := pgx.BeginTxFunc(ctx, e.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
					return err
				}
				var plan []map[string]any
				if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
					return err
				}
				var scans []string
				walkPlan(plan[0]["Plan"].(map[string]any), func(n map[string]any) {
					if rel, _ := n["Relation Name"].(string); rel != "" {
						scans = append(scans, fmt.Sprintf("%s:%s", rel, n["Node Type"]))
					}
				})
				sort.Strings(scans)
				for _, s := range scans {
					if strings.HasSuffix(s, ":Seq Scan") {
						b, _ := json.Marshal(plan)
						t.Errorf("before %d (%s): a sequential scan (%s) in\n%s", before, mode, s, b)
					}
				}
				if len(scans) == 0 {
					t.Errorf("before %d (%s): no table read in the plan", before, mode)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	items, err := e.s.reads.MapFailedItems(ctx, "admin", e.taskID, pgstoretest.NodeID(3), 0, MaxListLimit+1, ErrorMaxBytes)
	if err != nil || len(items) != 4 {
		t.Errorf("the env's task among 100,000 attempts: %d items, %v", len(items), err)
	}
}
