package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/net/html"

	"github.com/rayflow/rayflow/internal/store"
)

// listT0 is when the list tests' tasks are enqueued (plus i minutes).
var listT0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// addTask inserts a task of flow on queue in state, enqueued at
// listT0 + minute, and returns its id.
func addTask(t *testing.T, pool *pgxpool.Pool, flow, queue, state string, minute int) string {
	t.Helper()
	var id string
	err := pool.QueryRow(context.Background(), `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, state, input_json, enqueued_at,
 claimed_by, workflow_run_id, started_at)
 VALUES (gen_random_uuid(), $1, $2, $3, '{}', $4, 'test', gen_random_uuid(), now()) RETURNING task_id::text`,
		flow, queue, state, listT0.Add(time.Duration(minute)*time.Minute)).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fetch sends a GET as principal (by its bearer token; by a session
// cookie when cookie) without following a redirect.
func (e *env) fetch(t *testing.T, principal, target string, cookie bool) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	if cookie {
		req.AddCookie(signInCookie(t, e.s, principal))
	} else {
		req.Header.Set("Authorization", "Bearer "+tokensOf[principal])
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	return w
}

// listed is the task ids of a /tasks page's rows, in order, its next
// page link and its <main data-code>.
func listed(t *testing.T, body []byte) (ids []string, next, code string) {
	t.Helper()
	d := parse(t, body)
	for _, tr := range d.all("tr", func(n *html.Node) bool { return attr(n, "data-task-id") != "" }) {
		ids = append(ids, attr(tr, "data-task-id"))
	}
	if n := d.byID("next-page"); n != nil {
		next = attr(n, "href")
	}
	if m := dataCode.FindSubmatch(body); m != nil {
		code = string(m[1])
	}
	return ids, next, code
}

// TestTasksPage: the /tasks page lists a principal's tasks, newest first,
// by every filter, pages by the API's signed cursors within its page-size
// bounds, and refuses what the API refuses.
func TestTasksPage(t *testing.T) {
	e := newEnv(t, 3) // e.taskID: flow chain, RUNNING, enqueued now
	p := e.pool
	a := addTask(t, p, "chain", "default", "SUCCEEDED", 0)
	b := addTask(t, p, "chain", "gpu", "FAILED", 10)
	c := addTask(t, p, "other", "default", "QUEUED", 20)
	d := addTask(t, p, "otherflow", "default", "QUEUED", 30)
	x := addTask(t, p, "secret", "gpu", "FAILED", 40)
	newest := func(ids ...string) []string { slices.Reverse(ids); return ids } // by insertion: ids ascend
	for _, tc := range []struct {
		name, principal, query string
		code                   int
		want                   []string
		err                    string
	}{
		{"chain's flows", "chain", "", 200, newest(e.taskID, a, b, c), ""},
		{"admin: every flow", "admin", "", 200, newest(e.taskID, a, b, c, d, x), ""},
		{"other: its flow", "other", "", 200, []string{d}, ""},
		{"state", "chain", "state=FAILED", 200, []string{b}, ""},
		{"queue", "chain", "queue=gpu", 200, []string{b}, ""},
		{"flow", "chain", "flow=other", 200, []string{c}, ""},
		{"flow admin", "admin", "flow=secret", 200, []string{x}, ""},
		// filtered on enqueued_at: newest enqueued first
		{"from", "chain", "from=2026-11-01T08:10", 200, []string{e.taskID, c, b}, ""},
		{"to", "chain", "to=2026-11-01T08:10", 200, []string{a}, ""},
		{"between", "admin", "from=2026-11-01T08:10&to=2026-11-01T08:30:00", 200, newest(b, c), ""},
		{"rfc3339", "admin", "from=" + url.QueryEscape("2026-11-01T09:40:00+01:00"), 200, []string{e.taskID, x}, ""},
		{"combined", "admin", "state=QUEUED&queue=default&flow=otherflow", 200, []string{d}, ""},
		{"nothing matches", "chain", "state=LOST", 200, nil, ""},
		{"limit at the cap", "admin", "limit=100", 200, newest(e.taskID, a, b, c, d, x), ""},
		{"limit over the cap", "admin", "limit=101", 400, nil, "INVALID_ARGUMENT"},
		{"limit zero", "admin", "limit=0", 400, nil, "INVALID_ARGUMENT"},
		{"unknown state", "admin", "state=DONE", 400, nil, "INVALID_ARGUMENT"},
		{"bad time", "admin", "from=yesterday", 400, nil, "INVALID_ARGUMENT"},
		{"from not before to", "admin", "from=2026-11-01T08:10&to=2026-11-01T08:10", 400, nil, "INVALID_ARGUMENT"},
		{"flow at the cap", "admin", "flow=" + strings.Repeat("é", MaxFlowNameLen), 200, nil, ""},
		{"flow over the cap", "admin", "flow=" + strings.Repeat("é", MaxFlowNameLen+1), 400, nil, "INVALID_ARGUMENT"},
		{"queue over the cap", "admin", "queue=" + strings.Repeat("q", 129), 400, nil, "INVALID_ARGUMENT"},
		{"a flow not allowed", "chain", "flow=secret", 403, nil, "ACCESS_DENIED"},
		{"no flows", "nobody", "", 403, nil, "ACCESS_DENIED"},
		{"bad cursor", "admin", "cursor=!!", 400, nil, "INVALID_CURSOR"},
		{"bad id", "admin", "task_id=abc", 400, nil, "INVALID_ARGUMENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.fetch(t, tc.principal, "/tasks?"+tc.query, true)
			ids, _, code := listed(t, w.Body.Bytes())
			if w.Code != tc.code || code != tc.err {
				t.Fatalf("%d %q, want %d %q: %.300s", w.Code, code, tc.code, tc.err, w.Body)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}

	// Counts by state: every task the principal may see.
	w := e.fetch(t, "chain", "/tasks?state=QUEUED", false)
	counts := map[string]string{}
	for _, a := range parse(t, w.Body.Bytes()).all("a", func(n *html.Node) bool { return attr(n, "data-state") != "" }) {
		counts[attr(a, "data-state")] = strings.Fields(text(a))[1]
	}
	want := map[string]string{"QUEUED": "1", "RUNNING": "1", "CANCELLING": "0", "CANCELLED": "0", "SUCCEEDED": "1", "FAILED": "1", "LOST": "0", "EXPIRED": "0"}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("chain's counts (-want +got):\n%s", diff)
	}

	// An exact id jumps to its task page (which authorizes as always).
	for _, q := range []string{e.taskID, " " + strings.ToUpper(e.taskID) + " "} {
		w := e.fetch(t, "chain", "/tasks?task_id="+url.QueryEscape(q), true)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tasks/"+e.taskID {
			t.Errorf("task_id=%q: %d %q", q, w.Code, w.Header().Get("Location"))
		}
	}

	// Paging: two by two through admin's six tasks, by the next links,
	// in id order and in enqueued_at order.
	for _, pc := range []struct {
		query string
		want  []string
	}{
		{"limit=2&state=", newest(e.taskID, a, b, c, d, x)},
		{"limit=2&from=2026-11-01T08:00", []string{e.taskID, x, d, c, b, a}},
	} {
		var all []string
		target := "/tasks?" + pc.query
		for pages := 0; target != ""; pages++ {
			if pages > 3 {
				t.Fatalf("more than 3 pages: %v", all)
			}
			w := e.fetch(t, "admin", target, false)
			ids, next, _ := listed(t, w.Body.Bytes())
			if w.Code != 200 || len(ids) != 2 {
				t.Fatalf("%s: %d %v", target, w.Code, ids)
			}
			all = append(all, ids...)
			if next != "" {
				u, _ := url.Parse(next)
				if u.Query().Get("limit") != "2" || u.Query().Get("cursor") == "" {
					t.Errorf("next link %q", next)
				}
				if pages == 0 {
					// the cursor is bound to the filters and the principal
					mismatch := strings.Replace(next, "limit=2", "limit=3", 1)
					if w := e.fetch(t, "admin", mismatch, false); w.Code != http.StatusConflict {
						t.Errorf("cursor with another limit: %d", w.Code)
					}
					if w := e.fetch(t, "chain", next, false); w.Code != http.StatusConflict {
						t.Errorf("admin's cursor as chain: %d", w.Code)
					}
				}
			}
			target = next
		}
		if diff := cmp.Diff(pc.want, all); diff != "" {
			t.Errorf("%s: pages (-want +got):\n%s", pc.query, diff)
		}
	}
}

// walkPlan calls fn on every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(n map[string]any, fn func(map[string]any)) {
	fn(n)
	if subs, ok := n["Plans"].([]any); ok {
		for _, s := range subs {
			if m, ok := s.(map[string]any); ok {
				walkPlan(m, fn)
			}
		}
	}
}

// TestTaskListIndexed: over 100,000 tasks, neither the list query of the
// first page nor that of any filter, nor the counts by state, scans the
// task table, with custom and with generic plans (EXPLAIN on the real
// PostgreSQL after ANALYZE). It logs the server time of each page.
func TestTaskListIndexed(t *testing.T) {
	e := newEnv(t, 3)
	ctx := context.Background()
	start := time.Now()
	// 100,000 tasks over 10 flows, 3 queues, 5 states and 100 days.
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, state, input_json,
 claimed_by, workflow_run_id, started_at, enqueued_at)
 SELECT gen_random_uuid(), 'flow' || (g / 7 % 10), (ARRAY['default', 'gpu', 'batch'])[1 + g % 3],
  (ARRAY['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'FAILED', 'QUEUED', 'RUNNING', 'CANCELLED'])[1 + g % 7], '{}',
  'w', gen_random_uuid(), now(), $1::timestamptz + make_interval(mins => g * 144 / 100)
 FROM generate_series(1, 100000) g`, listT0.Add(-100*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `ANALYZE rayflow_tasks`); err != nil {
		t.Fatal(err)
	}
	t.Logf("100,000 tasks inserted and analyzed in %v", time.Since(start))
	from, to := listT0.Add(-60*24*time.Hour), listT0.Add(-59*24*time.Hour)
	old := listT0.Add(-99 * 24 * time.Hour)
	cases := []struct {
		name, principal string
		q               taskQuery
	}{
		{"first page", "admin", taskQuery{}},
		{"first page, two flows", "chain", taskQuery{}},
		{"state", "admin", taskQuery{State: "FAILED"}},
		{"rare state", "admin", taskQuery{State: "LOST"}},
		{"queue", "admin", taskQuery{Queue: "gpu"}},
		{"flow", "admin", taskQuery{Flow: "flow3"}},
		{"absent flow", "admin", taskQuery{Flow: "nosuchflow"}},
		{"from", "admin", taskQuery{From: &from}},
		{"to (the oldest tasks)", "admin", taskQuery{To: &old}},
		{"between", "admin", taskQuery{From: &from, To: &to}},
		{"all filters", "admin", taskQuery{State: "QUEUED", Queue: "batch", Flow: "flow5", From: &from, To: &to}},
	}
	// A list page reads at most this many rows it then drops (a filter
	// matching one row in ten read along the id order drops about ten
	// rows per shown row).
	const maxRemoved = 10 * (MaxListLimit + 1)
	for _, tc := range cases {
		tc.q.Limit = MaxListLimit
		flows, err := e.s.listFlows(tc.principal, tc.q.Flow)
		if err != nil {
			t.Fatal(err)
		}
		listQ, listArgs := listSQL(tc.q, flows, nil)
		countQ, countArgs := countSQL(e.s.countFlows(tc.principal))
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			err := pgx.BeginTxFunc(ctx, e.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
					return err
				}
				for i, q := range []struct {
					sql  string
					args []any
				}{{listQ, listArgs}, {countQ, countArgs}} {
					if i == 1 {
						if err := store.AvoidSeqScans(ctx, tx); err != nil {
							return err
						}
					}
					var plan []map[string]any
					if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q.sql, q.args...).Scan(&plan); err != nil {
						return err
					}
					// Rows a scan of the task table read and dropped: a list
					// read through an index on its filters drops few.
					removed := 0.0
					walkPlan(plan[0]["Plan"].(map[string]any), func(n map[string]any) {
						if n["Relation Name"] != "rayflow_tasks" {
							return
						}
						if n["Node Type"] == "Seq Scan" {
							b, _ := json.Marshal(plan)
							t.Errorf("%s (%s): a sequential scan of rayflow_tasks in\n%s\n%s", tc.name, mode, q.sql, b)
						}
						for _, k := range []string{"Rows Removed by Filter", "Rows Removed by Index Recheck"} {
							f, _ := n[k].(float64)
							removed += f
						}
					})
					if i == 0 && removed > maxRemoved {
						b, _ := json.Marshal(plan)
						t.Errorf("%s (%s): the list read and dropped %v rows (more than %d) in\n%s\n%s", tc.name, mode, removed, maxRemoved, q.sql, b)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
	}
	// The server time of each page (logged, not asserted): the fastest of
	// five renders of GET /tasks with its filters.
	for _, tc := range cases {
		v := url.Values{"state": {tc.q.State}, "queue": {tc.q.Queue}, "flow": {tc.q.Flow}}
		if tc.q.From != nil {
			v.Set("from", tc.q.From.Format(time.RFC3339))
		}
		if tc.q.To != nil {
			v.Set("to", tc.q.To.Format(time.RFC3339))
		}
		var times []time.Duration
		for range 5 {
			start := time.Now()
			w := e.fetch(t, tc.principal, "/tasks?"+v.Encode(), false)
			times = append(times, time.Since(start))
			if w.Code != 200 {
				t.Fatalf("%s: %d %.300s", tc.name, w.Code, w.Body)
			}
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		t.Logf("GET /tasks %-24s fastest %v, median %v", fmt.Sprintf("(%s):", tc.name), times[0].Round(10*time.Microsecond), times[2].Round(10*time.Microsecond))
	}
}
