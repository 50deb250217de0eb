package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve/internal/fixture"
)

// echoIn is the input of the test flows serve_echo and serve_echo_alt.
type echoIn struct {
	Count int     `json:"count"`
	Ratio float64 `json:"ratio"`
	Mode  string  `json:"mode,omitempty"`
}

func echo(_ context.Context, in echoIn) (echoIn, error) { return in, nil }

func init() {
	durable.Register("serve_echo_alt", sdk.Step(echo))
	durable.Register("serve_echo", sdk.Step(echo))
}

// testRoutes are the enqueue routes every test server installs (so the
// route walks of TestUnauthenticated and TestDenialOnEveryRoute cover one).
var testRoutes = []EnqueueRoute{{
	Path: "/api/test/echo", Flow: "serve_echo", MaxAttempts: 2,
	Summary: "enqueue an echo", Description: "the test flow.",
	Params: []Param{
		{Name: "count", Default: "3", Min: 1, Max: 100, Integer: true},
		{Name: "ratio", Default: "0.5", Min: 0, Max: 5},
		{Name: "mode", Enum: []string{"a", "b"}},
		{Name: "variant", Default: "main", Enum: []string{"main", "alt"}},
	},
	Input: func(q Query) (string, any, string, error) {
		in := echoIn{Count: q.Int("count"), Ratio: q.Float("ratio"), Mode: q["mode"]}
		if in.Count == 7 && in.Mode == "" {
			return "", nil, "mode", errors.New("count 7 needs a mode")
		}
		if q["variant"] == "alt" {
			return "serve_echo_alt", in, "", nil
		}
		return "serve_echo", in, "", nil
	},
}}

// enqueueServer is a server with testRoutes on a migrated database (under
// -short, lazyServer: any write would be a 500, never a 400) and a count
// of its tasks.
func enqueueServer(t *testing.T) (*Server, func() int64) {
	t.Helper()
	if testing.Short() {
		return lazyServer(t), func() int64 { return 0 }
	}
	pool := pgtest.MigratedPool(t)
	s := testServer(t, pool)
	return s, func() int64 {
		var n int64
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rayflow_tasks`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func post(t *testing.T, s *Server, principal, target, body string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	code := fixture.DoJSON(t, s, "POST", target, tokensOf[principal], body, &out)
	return code, out
}

// TestEnqueueInvalidInput: every kind of bad input is a 400
// INVALID_ARGUMENT naming the parameter, every bound is accepted at its
// edge and refused one over, and nothing is written.
func TestEnqueueInvalidInput(t *testing.T) {
	s, count := enqueueServer(t)
	before := count()
	fixture.PostInvalid(t, s, tokensOf["admin"], [][3]string{
		{"/api/test/echo?count=0", "count", ""},
		{"/api/test/echo?count=101", "count", ""},
		{"/api/test/echo?count=1.5", "count", ""},
		{"/api/test/echo?count=x", "count", ""},
		{"/api/test/echo?ratio=-0.001", "ratio", ""},
		{"/api/test/echo?ratio=5.001", "ratio", ""},
		{"/api/test/echo?ratio=NaN", "ratio", ""},
		{"/api/test/echo?mode=c", "mode", ""},
		{"/api/test/echo?variant=", "variant", ""},
		{"/api/test/echo?count=7", "mode", ""}, // the route's own validation
		{"/api/test/echo?count=1&count=2", "count", ""},
		{"/api/test/echo?color=red", "color", ""},
		{"/api/test/echo", "", `{"count":3}`},
		{"/api/test/echo?%zz", "", ""},
	})
	if n := count(); n != before {
		t.Errorf("%d tasks written by invalid requests", n-before)
	}
	if testing.Short() {
		return
	}
	for _, target := range []string{"/api/test/echo?count=100&ratio=0", "/api/test/echo?count=1&ratio=5", "/api/test/echo?count=7&mode=b"} {
		if code, body := post(t, s, "admin", target, ""); code != http.StatusCreated {
			t.Errorf("POST %s: %d %v", target, code, body)
		}
	}
}

// TestEnqueueCreatesTask: a 201 names the task and its URLs, the task
// holds the flow, the decoded input and the route's attempts, and a
// variant flow needs its own allowlist entry.
func TestEnqueueCreatesTask(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s, _ := enqueueServer(t)
	for _, c := range []struct{ target, flow, input string }{
		{"/api/test/echo", "serve_echo", `{"count":3,"ratio":0.5}`},
		{"/api/test/echo?count=9&ratio=1.25&mode=a&variant=alt", "serve_echo_alt", `{"count":9,"ratio":1.25,"mode":"a"}`},
	} {
		code, body := post(t, s, "admin", c.target, "")
		id, _ := body["task_id"].(string)
		if code != http.StatusCreated || body["flow"] != c.flow || body["graph_url"] != "/tasks/"+id+"/graph" || body["max_attempts"] != float64(2) ||
			body["status_url"] != "/api/tasks/"+id || body["progress_url"] != "/api/workflows/"+id || body["state"] != "QUEUED" {
			t.Fatalf("POST %s: %d %v", c.target, code, body)
		}
		task, err := s.client.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Flow != c.flow || string(task.Input) != c.input || task.MaxAttempts != 2 || task.State != durable.StateQueued {
			t.Errorf("task %s: flow %s input %s max attempts %d state %s", id, task.Flow, task.Input, task.MaxAttempts, task.State)
		}
	}
	// a principal allowed serve_echo only cannot pick the variant
	tk, err := ParseTokens(strings.NewReader("echo echo-token-0123456789abc serve_echo\n"))
	if err != nil {
		t.Fatal(err)
	}
	tokensOf["echo"] = "echo-token-0123456789abc"
	t.Cleanup(func() { delete(tokensOf, "echo") })
	s2, err := New(s.pool, tk, s.keys, quiet, WithEnqueueRoutes(testRoutes...))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, s2, "echo", "/api/test/echo", ""); code != http.StatusCreated {
		t.Errorf("serve_echo as echo: %d %v", code, body)
	}
	if code, body := post(t, s2, "echo", "/api/test/echo?variant=alt", ""); code != http.StatusForbidden || body["code"] != "ACCESS_DENIED" {
		t.Errorf("serve_echo_alt as echo: %d %v", code, body)
	}
}

// TestOpenAPIDocumentsEnqueueRoutes: the served document holds each
// installed route with its parameters as the route checks them (types,
// ranges, defaults, enums) and the server's contract; a route that would
// shadow a core path is refused.
func TestOpenAPIDocumentsEnqueueRoutes(t *testing.T) {
	s := lazyServer(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
			Parameters  []struct {
				Name   string `json:"name"`
				In     string `json:"in"`
				Schema struct {
					Type    string   `json:"type"`
					Minimum *float64 `json:"minimum"`
					Maximum *float64 `json:"maximum"`
					Default any      `json:"default"`
					Enum    []string `json:"enum"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(s.openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, ex := range testRoutes {
		op := doc.Paths[ex.Path]["post"]
		if !strings.HasPrefix(op.Description, "One task (max_attempts 2) of the flow serve_echo: the test flow.") || !strings.HasSuffix(op.Description, enqueueContract) {
			t.Errorf("%s: description %q", ex.Path, op.Description)
		}
		if len(op.Parameters) != len(ex.Params) {
			t.Fatalf("%s: %d documented parameters, %d accepted", ex.Path, len(op.Parameters), len(ex.Params))
		}
		for i, p := range ex.Params {
			d := op.Parameters[i]
			ok := d.Name == p.Name && d.In == "query"
			switch {
			case p.Enum != nil:
				ok = ok && d.Schema.Type == "string" && slices.Equal(d.Schema.Enum, p.Enum)
			default:
				typ := "number"
				if p.Integer {
					typ = "integer"
				}
				ok = ok && d.Schema.Type == typ && d.Schema.Minimum != nil && *d.Schema.Minimum == p.Min &&
					d.Schema.Maximum != nil && *d.Schema.Maximum == p.Max && fmt.Sprint(d.Schema.Default) == p.Default
			}
			if !ok {
				t.Errorf("%s: documented parameter %d %+v differs from %+v", ex.Path, i, d, p)
			}
		}
	}
	shadow := testRoutes[0]
	shadow.Path = "/api/tasks"
	if _, err := New(s.pool, s.tokens, s.keys, quiet, WithEnqueueRoutes(shadow)); err == nil {
		t.Error("an enqueue route on a core path was accepted")
	}
}
