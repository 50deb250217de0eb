package showcase_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/durable/durabletest"
	orderwf "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/serve"
	"github.com/rayflow/rayflow/serve/internal/fixture"
	"github.com/rayflow/rayflow/serve/reader"
	"github.com/rayflow/rayflow/serve/showcase"
)

func init() { showcase.Register() }

var tokensOf = map[string]string{"admin": "admin-token-0123456789", "ops": "ops-token-0123456789abcd"}

// server is the API with the showcase's routes, on pool; its tokens are
// tokensOf's, admin allowed every flow and ops the full-policy complex
// workflow only.
func server(t *testing.T, pool *pgxpool.Pool) *serve.Server {
	t.Helper()
	tk, err := serve.ParseTokens(strings.NewReader("admin " + tokensOf["admin"] + " *\nops " + tokensOf["ops"] + " complex\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := reader.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(pool, tk, k, slog.New(slog.DiscardHandler), serve.WithEnqueueRoutes(showcase.Routes()...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// enqueueServer is a server on a migrated database (under -short: a
// server whose database is unreachable, so any write would be a 500, never
// a 400), its pool, and a count of its tasks.
func enqueueServer(t *testing.T) (*serve.Server, *pgxpool.Pool, func() int64) {
	t.Helper()
	if testing.Short() {
		pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return server(t, pool), pool, func() int64 { return 0 }
	}
	pool := pgtest.MigratedPool(t)
	return server(t, pool), pool, func() int64 {
		var n int64
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rayflow_tasks`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func post(t *testing.T, s *serve.Server, principal, target, body string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	code := fixture.DoJSON(t, s, "POST", target, tokensOf[principal], body, &out)
	return code, out
}

// TestEnqueueInvalidInput: every kind of bad input is a 400 INVALID_ARGUMENT
// naming the parameter, every bound is accepted at its edge and refused
// one over, and nothing is written.
func TestEnqueueInvalidInput(t *testing.T) {
	s, _, count := enqueueServer(t)
	before := count()
	fixture.PostInvalid(t, s, tokensOf["admin"], [][3]string{
		{"/api/examples/orderfulfillment?item_count=0", "item_count", ""},
		{"/api/examples/orderfulfillment?item_count=101", "item_count", ""},
		{"/api/examples/orderfulfillment?item_count=1.5", "item_count", ""},
		{"/api/examples/orderfulfillment?item_count=x", "item_count", ""},
		{"/api/examples/orderfulfillment?work_seconds=-0.001", "work_seconds", ""},
		{"/api/examples/orderfulfillment?work_seconds=5.001", "work_seconds", ""},
		{"/api/examples/orderfulfillment?work_seconds=NaN", "work_seconds", ""},
		{"/api/examples/orderfulfillment?failure_stage=nope", "failure_stage", ""},
		{"/api/examples/orderfulfillment?failure_stage=reserve_inventory&failure_item=3", "failure_item", ""},
		{"/api/examples/orderfulfillment?failure_stage=decide_fulfillment&failure_item=1", "failure_item", ""},
		{"/api/examples/orderfulfillment?failure_item=1", "failure_item", ""},
		{"/api/examples/orderfulfillment?item_count=1&item_count=2", "item_count", ""},
		{"/api/examples/orderfulfillment?color=red", "color", ""},
		{"/api/examples/orderfulfillment", "", `{"item_count":3}`},
		{"/api/examples/orderfulfillment?%zz", "", ""},
		{"/api/examples/recovery?failure_stage=join_order_inputs", "failure_stage", ""}, // server-owned
		{"/api/examples/recovery?attempt=3", "attempt", ""},
		{"/api/examples/recovery?item_count=101", "item_count", ""},
		{"/api/examples/complex?fast_items=1001", "fast_items", ""},
		{"/api/examples/complex?failure_branch=medium", "failure_branch", ""},
		{"/api/examples/complex?failure_branch=slow&failure_item=2", "failure_item", ""},
		{"/api/examples/complex?failure_item=1", "failure_item", ""},
		{"/api/examples/complex?reporting_policy=sampled", "reporting_policy", ""},
		{"/api/examples/fanout?count=10001", "count", ""},
		{"/api/examples/fanout?count=-1", "count", ""},
	})
	if n := count(); n != before {
		t.Errorf("%d tasks written by invalid requests", n-before)
	}
	if testing.Short() {
		return
	}
	// the edges accepted
	for _, target := range []string{
		"/api/examples/orderfulfillment?item_count=100&work_seconds=0",
		"/api/examples/orderfulfillment?item_count=1&work_seconds=5",
		"/api/examples/orderfulfillment?item_count=2&failure_stage=reserve_inventory&failure_item=1",
		"/api/examples/recovery",
		"/api/examples/complex?fast_items=1000&slow_items=0",
		"/api/examples/fanout?count=10000",
	} {
		if code, body := post(t, s, "admin", target, ""); code != http.StatusCreated {
			t.Errorf("POST %s: %d %v", target, code, body)
		}
	}
}

// TestEnqueueCreatesTask: a 201 names the task and its URLs, the task
// holds the flow and the decoded input, and a reporting policy picks the
// complex workflow's flow of that policy.
func TestEnqueueCreatesTask(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s, pool, _ := enqueueServer(t)
	client := durable.NewClient(pool, nil)
	for _, c := range []struct {
		target, flow, input string
		attempts            int
	}{
		{"/api/examples/orderfulfillment", "orderfulfillment", `{"item_count":3,"work_seconds":0.05}`, 1},
		{"/api/examples/orderfulfillment?item_count=1&work_seconds=0.01&failure_stage=reserve_inventory&failure_item=0", "orderfulfillment",
			`{"item_count":1,"work_seconds":0.01,"failure_stage":"reserve_inventory"}`, 1},
		{"/api/examples/recovery?item_count=1&work_seconds=0.01", "recovery", `{"item_count":1,"work_seconds":0.01}`, 3},
		{"/api/examples/complex?reporting_policy=terminal_only&failure_branch=slow&failure_item=0", "complex_terminal_only",
			`{"fast_items":4,"slow_items":2,"fast_work":10000000,"slow_work":20000000,"failure_branch":"slow","failure_item":0}`, 1},
		{"/api/examples/fanout?count=20", "fanout", `20`, 1},
	} {
		code, body := post(t, s, "admin", c.target, "")
		id, _ := body["task_id"].(string)
		if code != http.StatusCreated || body["flow"] != c.flow || body["graph_url"] != "/tasks/"+id+"/graph" || body["max_attempts"] != float64(c.attempts) {
			t.Fatalf("POST %s: %d %v", c.target, code, body)
		}
		task, err := client.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Flow != c.flow || string(task.Input) != c.input || task.MaxAttempts != c.attempts || task.State != durable.StateQueued {
			t.Errorf("task %s: flow %s input %s max attempts %d state %s", id, task.Flow, task.Input, task.MaxAttempts, task.State)
		}
	}
	// a principal allowed the full-policy flow only cannot pick another policy
	if code, body := post(t, s, "ops", "/api/examples/complex", ""); code != http.StatusCreated {
		t.Errorf("complex as ops: %d %v", code, body)
	}
	if code, body := post(t, s, "ops", "/api/examples/complex?reporting_policy=disabled", ""); code != http.StatusForbidden || body["code"] != "ACCESS_DENIED" {
		t.Errorf("complex_disabled as ops: %d %v", code, body)
	}
}

// runWorker runs a durable worker (local engine, no retry backoff) on
// pool until the test ends.
func runWorker(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	o := durabletest.QuickOptions()
	o.Concurrency = 2
	durabletest.StartWorker(t, pool, o)
}

func getJSON(t *testing.T, s *serve.Server, target string, out any) int {
	t.Helper()
	return fixture.DoJSON(t, s, "GET", target, tokensOf["admin"], "", out)
}

func waitTask(t *testing.T, pool *pgxpool.Pool, id string) *durable.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := durable.NewClient(pool, nil).Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// topologyOf walks the topology pages of an attempt through the API.
func topologyOf(t *testing.T, s *serve.Server, id string, attempt int) (nodes []string, edges [][2]string) {
	t.Helper()
	for _, kind := range []string{"nodes", "edges"} {
		cursor := ""
		for {
			var page struct {
				Items []struct {
					NodeID string `json:"node_id"`
					Source string `json:"source"`
					Target string `json:"target"`
				} `json:"items"`
				NextCursor *string `json:"next_cursor"`
			}
			target := fmt.Sprintf("/api/workflows/%s/topology/%s?attempt_number=%d&limit=7", id, kind, attempt)
			if cursor != "" {
				target += "&cursor=" + cursor
			}
			if code := getJSON(t, s, target, &page); code != 200 {
				t.Fatalf("GET %s: %d", target, code)
			}
			for _, it := range page.Items {
				if kind == "nodes" {
					nodes = append(nodes, it.NodeID)
				} else {
					edges = append(edges, [2]string{it.Source, it.Target})
				}
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
	}
	return nodes, edges
}

// nodeState is one node's state in an attempt, through node-detail.
func nodeState(t *testing.T, s *serve.Server, id string, attempt int, node string) string {
	t.Helper()
	var out struct {
		Found bool `json:"found"`
		Item  struct {
			State string `json:"state"`
		} `json:"item"`
	}
	target := fmt.Sprintf("/api/workflows/%s/node-detail?attempt_number=%d&node_id=%s", id, attempt, node)
	if code := getJSON(t, s, target, &out); code != 200 || !out.Found {
		t.Fatalf("GET %s: %d %+v", target, code, out)
	}
	return out.Item.State
}

// TestShowcasesThroughTheAPI enqueues both showcases over HTTP, runs them
// with a durable worker and reads them back over HTTP: the order
// fulfillment's 21 nodes, 28 edges and 12 layers (items 3: the seed's 25
// and 36); the recovery's FAILED, FAILED, SUCCEEDED attempts, each with its
// own graph (the failing node of each) and the graph page's attempt switcher
// linking all three.
func TestShowcasesThroughTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s, pool, _ := enqueueServer(t)
	runWorker(t, pool)
	_, order := post(t, s, "admin", "/api/examples/orderfulfillment?item_count=3&work_seconds=0.001", "")
	_, rec := post(t, s, "admin", "/api/examples/recovery?item_count=1&work_seconds=0.001", "")
	orderID, recID := order["task_id"].(string), rec["task_id"].(string)

	if task := waitTask(t, pool, orderID); task.State != durable.StateSucceeded {
		t.Fatalf("order fulfillment: %s %s", task.State, task.ErrorMessage)
	}
	nodes, edges := topologyOf(t, s, orderID, 1)
	layers, err := orderwf.LongestPathLayers(nodes, edges)
	if err != nil || len(nodes) != orderwf.Nodes || len(edges) != orderwf.Edges || layers != orderwf.Layers {
		t.Fatalf("order fulfillment topology: %d nodes, %d edges, %d layers (%v)", len(nodes), len(edges), layers, err)
	}
	if sn, se := orderwf.SeedCounts(len(nodes), len(edges), 3, 3); sn != 25 || se != 36 {
		t.Fatalf("seed counts %d/%d", sn, se)
	}

	task := waitTask(t, pool, recID)
	if task.State != durable.StateSucceeded || task.Attempt != 3 {
		t.Fatalf("recovery: %s at attempt %d: %s", task.State, task.Attempt, task.ErrorMessage)
	}
	var status serve.TaskStatus
	if code := getJSON(t, s, "/api/tasks/"+recID, &status); code != 200 {
		t.Fatalf("status: %d", code)
	}
	var states []string
	for _, a := range status.Attempts {
		states = append(states, string(a.State))
	}
	if !slices.Equal(states[len(states)-3:], []string{"FAILED", "FAILED", "SUCCEEDED"}) && !slices.Equal(states, []string{"FAILED", "FAILED"}) {
		t.Fatalf("attempts %v", states)
	}
	if !strings.Contains(string(status.Result), `"recovery":{"attempt":3}`) {
		t.Fatalf("result %s", status.Result)
	}
	for attempt, failed := range map[int]string{1: "0.1.g0.0", 2: "0.2"} {
		if st := nodeState(t, s, recID, attempt, failed); st != "FAILED" {
			t.Errorf("attempt %d: %s is %s", attempt, failed, st)
		}
	}
	if st := nodeState(t, s, recID, 3, "0.8"); st != "SUCCEEDED" {
		t.Errorf("attempt 3: 0.8 is %s", st)
	}
	// the task page lists each attempt once, with its graph link
	req := httptest.NewRequest("GET", "/tasks/"+recID, nil)
	req.Header.Set("Authorization", "Bearer "+tokensOf["admin"])
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	for n := 1; n <= 3; n++ {
		if c := strings.Count(w.Body.String(), fmt.Sprintf(`aria-label="Graph of attempt %d"`, n)); c != 1 {
			t.Errorf("task page: %d links to the graph of attempt %d", c, n)
		}
	}
	// the graph page of attempt 1 links all three attempts
	req = httptest.NewRequest("GET", "/tasks/"+recID+"/graph?attempt_number=1", nil)
	req.Header.Set("Authorization", "Bearer "+tokensOf["admin"])
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	page := w.Body.String()
	for n := 1; n <= 3; n++ {
		if !regexp.MustCompile(`href="/tasks/` + recID + `/graph\?attempt_number=` + fmt.Sprint(n) + `"`).MatchString(page) {
			t.Errorf("graph page (%d) lacks the link to attempt %d", w.Code, n)
		}
	}
}

// TestRoutesDocumentedAndRegistered: every route's flow (and every flow
// of Flows) is registered, and /api/openapi.json documents every route
// with its parameters.
func TestRoutesDocumentedAndRegistered(t *testing.T) {
	s, _, _ := enqueueServer(t)
	registered := durable.DefaultRegistry.Names()
	for _, f := range showcase.Flows() {
		if !slices.Contains(registered, f) {
			t.Errorf("flow %s is not registered", f)
		}
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/api/openapi.json", nil))
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, rt := range showcase.Routes() {
		if !slices.Contains(showcase.Flows(), rt.Flow) {
			t.Errorf("%s creates %s, not in Flows", rt.Path, rt.Flow)
		}
		ps := doc.Paths[rt.Path]["post"].Parameters
		if len(ps) != len(rt.Params) {
			t.Errorf("%s: %d documented parameters, %d accepted", rt.Path, len(ps), len(rt.Params))
			continue
		}
		for i, p := range rt.Params {
			if ps[i].Name != p.Name {
				t.Errorf("%s: parameter %d documented as %s, accepted as %s", rt.Path, i, ps[i].Name, p.Name)
			}
		}
	}
}
