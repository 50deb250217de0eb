package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

type env struct {
	s      *Server
	pool   *pgxpool.Pool
	taskID string
	c      *pgstoretest.Chain
}

func newEnv(t *testing.T, n int) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	pool, taskID, c := pgstoretest.NewPublished(t, n, 2)
	s := testServer(t, pool)
	s.Reads().Now = func() time.Time { return pgstoretest.T0.Add(time.Hour) }
	return &env{s: s, pool: pool, taskID: taskID, c: c}
}

var tokensOf = map[string]string{"admin": "admin-token-0123456789", "chain": "chain-token-0123456789",
	"other": "other-token-0123456789", "nobody": "nobody-token-012345678"}

var dataCode = regexp.MustCompile(`<main data-code="([A-Z_]*)">`)

func (e *env) do(t *testing.T, principal, method, target string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if principal != "" {
		req.Header.Set("Authorization", "Bearer "+tokensOf[principal])
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	var body map[string]any
	if w.Code == http.StatusSeeOther && method == "POST" {
		return w.Code, map[string]any{"location": w.Header().Get("Location")} // a page's action
	}
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		// a page: its error code is the data-code of <main>
		m := dataCode.FindSubmatch(w.Body.Bytes())
		if m == nil {
			t.Fatalf("%s %s: page without <main data-code>: %q", method, target, w.Body)
		}
		return w.Code, map[string]any{"code": string(m[1])}
	}
	if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "text/plain") && w.Code == http.StatusOK {
		return w.Code, map[string]any{} // /metrics
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, target, w.Body, err)
	}
	return w.Code, body
}

// TestDenialOnEveryRoute walks the server's own route list, so a new
// route is covered without touching this test: a principal without the
// task's flow, or without any flow, gets 403 ACCESS_DENIED, for an
// existing and for an absent task alike; the allowed principal does not.
func TestDenialOnEveryRoute(t *testing.T) {
	e := newEnv(t, 4)
	const absent = "00000000-0000-4000-8000-000000000000"
	for _, rt := range e.s.Routes() {
		if rt.Public {
			continue
		}
		denied, allowed := []string{"other", "nobody"}, "chain"
		if rt.Flow != "" || rt.AllFlows {
			// an enqueue route: only a principal with that flow (admin: *);
			// a queue's route: only a principal of every flow
			denied, allowed = []string{"chain", "other", "nobody"}, "admin"
		}
		for _, principal := range denied {
			for _, task := range []string{e.taskID, absent} {
				if principal == "other" && !strings.Contains(rt.Pattern, "{task_id}") && rt.Flow == "" && !rt.AllFlows {
					continue // a list shows "other" only its own flows
				}
				target := strings.ReplaceAll(rt.Pattern, "{task_id}", task) + "?node_id=" + pgstoretest.NodeID(0)
				code, body := e.do(t, principal, rt.Method, target)
				if code != http.StatusForbidden || body["code"] != "ACCESS_DENIED" {
					t.Errorf("%s %s as %s: %d %v", rt.Method, target, principal, code, body)
				}
			}
		}
		target := strings.ReplaceAll(rt.Pattern, "{task_id}", e.taskID) + "?node_id=" + pgstoretest.NodeID(0)
		if code, body := e.do(t, allowed, rt.Method, target); code == http.StatusForbidden || code == http.StatusUnauthorized {
			t.Errorf("%s %s as the flow's principal: %d %v", rt.Method, target, code, body)
		}
		if strings.Contains(rt.Pattern, "{task_id}") {
			target := strings.ReplaceAll(rt.Pattern, "{task_id}", absent) + "?node_id=x"
			if code, _ := e.do(t, "admin", rt.Method, target); code != http.StatusNotFound {
				t.Errorf("%s %s as admin: %d, want 404", rt.Method, target, code)
			}
		}
	}
}

func TestReadCodesOverHTTP(t *testing.T) {
	e := newEnv(t, 300)
	base := "/api/workflows/" + e.taskID
	code, body := e.do(t, "chain", "GET", base)
	if code != 200 || body["availability"] != "AVAILABLE" || body["schema"] != "rayflow.workflow-progress-summary" {
		t.Fatalf("summary: %d %v", code, body)
	}
	code, body = e.do(t, "chain", "GET", base+"/topology/nodes?limit=100")
	if code != 200 || body["returned_count"] != float64(100) || body["next_cursor"] == nil {
		t.Fatalf("nodes: %d %v", code, body)
	}
	cur := body["next_cursor"].(string)
	code, body = e.do(t, "chain", "GET", base+"/topology/nodes?limit=100&cursor="+url.QueryEscape(cur))
	if code != 200 || body["returned_count"] != float64(100) {
		t.Fatalf("nodes page 2: %d %v", code, body)
	}
	code, body = e.do(t, "chain", "GET", base+"/node-detail?node_id="+pgstoretest.NodeID(2))
	if code != 200 || body["found"] != true {
		t.Fatalf("node: %d %v", code, body)
	}
	for _, tc := range []struct {
		target string
		code   int
		err    string
	}{
		{base + "/topology/nodes?limit=-1", 400, "INVALID_ARGUMENT"},
		{base + "/topology/nodes?limit=0", 400, "INVALID_ARGUMENT"},
		{base + "/topology/nodes?limit=x", 400, "INVALID_ARGUMENT"},
		{base + "?attempt_number=0", 400, "INVALID_ARGUMENT"},
		{base + "?attempt_number=9", 404, "NOT_FOUND"},
		{base + "/nodes?state=DONE", 400, "INVALID_ARGUMENT"},
		{base + "/node-detail", 400, "INVALID_ARGUMENT"},
		{base + "/topology/nodes?cursor=garbage", 400, "INVALID_CURSOR"},
		{base + "/topology/nodes?cursor=" + strings.Repeat("A", 2049), 400, "INVALID_CURSOR"},
		{base + "/topology/nodes?limit=101&cursor=" + url.QueryEscape(cur), 409, "CURSOR_MISMATCH"},
		{base + "/topology/edges?limit=100&cursor=" + url.QueryEscape(cur), 409, "CURSOR_MISMATCH"},
	} {
		code, body := e.do(t, "chain", "GET", tc.target)
		if code != tc.code || body["code"] != tc.err {
			t.Errorf("GET %.120s: %d %v, want %d %s", tc.target, code, body, tc.code, tc.err)
		}
	}
	// A newer topology retires the cursor: 410 with an EXPIRED page.
	e.c.Publish(t, e.pool, e.c.Pub(true, false))
	code, body = e.do(t, "chain", "GET", base+"/topology/nodes?limit=100&cursor="+url.QueryEscape(cur))
	if code != http.StatusGone || body["availability"] != "EXPIRED" || body["returned_count"] != float64(0) {
		t.Errorf("stale cursor: %d %v", code, body)
	}
	// A lost detail row: the final page is MISSING (409).
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM rayflow_progress_nodes WHERE node_id = $1`, pgstoretest.NodeID(5)); err != nil {
		t.Fatal(err)
	}
	if code, body := e.do(t, "chain", "GET", base+"/nodes?limit=256&state=PENDING"); code != 409 || body["code"] != "MISSING" {
		t.Errorf("missing row: %d %v", code, body)
	}
	// A stored summary that does not validate: CORRUPT (503).
	if _, err := e.pool.Exec(context.Background(), `UPDATE rayflow_tasks SET workflow_progress_summary_json = '{"schema_version": 2}' WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	if code, body := e.do(t, "chain", "GET", base); code != 503 || body["code"] != "CORRUPT" {
		t.Errorf("corrupt summary: %d %v", code, body)
	}
}

func TestTaskEndpoints(t *testing.T) {
	e := newEnv(t, 3)
	code, body := e.do(t, "chain", "GET", "/api/tasks/"+e.taskID)
	if code != 200 || body["state"] != "RUNNING" || body["flow"] != "chain" || body["input_max_bytes"] != float64(InputMaxBytes) {
		t.Fatalf("status: %d %v", code, body)
	}
	other, _ := pgstoretest.NewTask(t, e.pool, "otherflow")
	code, body = e.do(t, "chain", "GET", "/api/tasks?limit=100")
	if code != 200 || body["returned_count"] != float64(1) {
		t.Errorf("chain's list: %d %v", code, body)
	}
	code, body = e.do(t, "admin", "GET", "/api/tasks")
	if code != 200 || body["returned_count"] != float64(2) {
		t.Errorf("admin's list: %d %v", code, body)
	}
	counts, _ := body["counts"].(map[string]any)
	if counts["RUNNING"] != float64(2) || counts["QUEUED"] != float64(0) || len(counts) != 8 {
		t.Errorf("admin's counts: %v", counts)
	}
	// Signed cursors: one page of one, then the next; bound to principal, filters and limit.
	code, body = e.do(t, "admin", "GET", "/api/tasks?limit=1")
	if code != 200 || body["returned_count"] != float64(1) || body["has_more"] != true || body["next_cursor"] == nil {
		t.Fatalf("admin's first page: %d %v", code, body)
	}
	first := body["items"].([]any)[0].(map[string]any)["task_id"]
	cur := url.QueryEscape(body["next_cursor"].(string))
	code, body = e.do(t, "admin", "GET", "/api/tasks?limit=1&cursor="+cur)
	if code != 200 || body["returned_count"] != float64(1) || body["has_more"] != false || body["next_cursor"] != nil ||
		body["items"].([]any)[0].(map[string]any)["task_id"] == first {
		t.Errorf("admin's second page: %d %v", code, body)
	}
	for target, want := range map[string]string{
		"/api/tasks?limit=101":                          "INVALID_ARGUMENT",
		"/api/tasks?limit=0":                            "INVALID_ARGUMENT",
		"/api/tasks?state=NOPE":                         "INVALID_ARGUMENT",
		"/api/tasks?cursor=!!":                          "INVALID_CURSOR",
		"/api/tasks?cursor=MA.MA":                       "INVALID_CURSOR",
		"/api/tasks?limit=1&cursor=" + cur + "A":        "INVALID_CURSOR",
		"/api/tasks?limit=2&cursor=" + cur:              "CURSOR_MISMATCH",
		"/api/tasks?limit=1&state=QUEUED&cursor=" + cur: "CURSOR_MISMATCH",
	} {
		if code, body := e.do(t, "admin", "GET", target); body["code"] != want {
			t.Errorf("%s: %d %v, want %s", target, code, body, want)
		}
	}
	if code, body := e.do(t, "chain", "GET", "/api/tasks?limit=1&cursor="+cur); code != 409 {
		t.Errorf("another principal's cursor: %d %v", code, body)
	}
	code, body = e.do(t, "chain", "POST", "/api/tasks/"+e.taskID+"/retry")
	if code != 409 || body["outcome"] != "NOT_RETRYABLE" {
		t.Errorf("retry of a running task: %d %v", code, body)
	}
	code, body = e.do(t, "chain", "POST", fmt.Sprintf("/api/tasks/%s/cancel?expect_attempt=2", e.taskID))
	if code != 409 || body["outcome"] != "STALE_ATTEMPT" {
		t.Errorf("stale cancel: %d %v", code, body)
	}
	code, body = e.do(t, "chain", "POST", "/api/tasks/"+e.taskID+"/cancel")
	if code != 202 || body["outcome"] != "ACCEPTED" {
		t.Errorf("cancel: %d %v", code, body)
	}
	code, body = e.do(t, "other", "POST", "/api/tasks/"+other+"/cancel")
	if code != 202 {
		t.Errorf("other's cancel of its own task: %d %v", code, body)
	}
	if code, _ := e.do(t, "admin", "GET", "/readyz"); code != 200 {
		t.Errorf("readyz with a database: %d", code)
	}
}
