package serve

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes: the served document (the checked-in core
// and the installed enqueue routes) describes exactly
// the JSON routes (every route but the browser pages and their assets),
// and /api/openapi.json serves it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	s := lazyServer(t)
	if err := json.Unmarshal(s.openAPI, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi.json: %v %q", err, doc.OpenAPI)
	}
	var inDoc, inRoutes []string
	for p, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				inDoc = append(inDoc, strings.ToUpper(m)+" "+p)
			}
		}
	}
	for _, rt := range s.Routes() {
		if rt.HTML || strings.HasPrefix(rt.Pattern, "/assets/") {
			continue
		}
		inRoutes = append(inRoutes, rt.Method+" "+rt.Pattern)
	}
	slices.Sort(inDoc)
	slices.Sort(inRoutes)
	if !slices.Equal(inDoc, inRoutes) {
		t.Errorf("openapi.json paths differ from the routes:\ndocument %v\nroutes   %v", inDoc, inRoutes)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/api/openapi.json", nil))
	if w.Code != 200 || w.Body.String() != string(s.openAPI) {
		t.Errorf("GET /api/openapi.json: %d", w.Code)
	}
}

// TestMetrics: task counts by state of the principal's flows (all eight
// states, one series each) and the read latency by read kind.
func TestMetrics(t *testing.T) {
	e := newEnv(t, 4)
	e.do(t, "chain", "GET", "/api/workflows/"+e.taskID)
	e.get(t, "chain", "/tasks/"+e.taskID+"/graph")
	scrape := func(principal string) string {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tokensOf[principal])
		w := httptest.NewRecorder()
		e.s.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("/metrics as %s: %d %s", principal, w.Code, w.Body)
		}
		return w.Body.String()
	}
	body := scrape("chain")
	for _, want := range []string{`rayflow_tasks{queue="default",state="RUNNING"} 1`, `rayflow_tasks{queue="default",state="QUEUED"} 0`,
		`rayflow_read_duration_seconds_count{read="summary"} 1`, `rayflow_read_duration_seconds_count{read="graph_page"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if n := strings.Count(body, "\nrayflow_tasks{"); n != len(allStates) {
		t.Errorf("%d task series, want %d", n, len(allStates))
	}
	if body := scrape("other"); !strings.Contains(body, `rayflow_tasks{queue="default",state="RUNNING"} 0`) {
		t.Error("a principal of another flow counts the chain task")
	}
}

// TestOpenAPIUnavailable: every operation that reads the database (all
// but the probes and this document) documents its 503 as the Unavailable
// response, with Retry-After, and the Error codes include UNAVAILABLE.
func TestOpenAPIUnavailable(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"components"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	s := lazyServer(t)
	if err := json.Unmarshal(s.openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Components.Schemas.Error.Properties.Code.Enum, CodeUnavailable) {
		t.Errorf("the Error codes %v lack %s", doc.Components.Schemas.Error.Properties.Code.Enum, CodeUnavailable)
	}
	if _, ok := doc.Components.Responses["Unavailable"].Headers["Retry-After"]; !ok {
		t.Error("the Unavailable response has no Retry-After header")
	}
	for p, ops := range doc.Paths {
		for m, raw := range ops {
			if m == "parameters" || p == "/livez" || p == "/readyz" || p == "/api/openapi.json" {
				continue
			}
			var op struct {
				Responses map[string]struct {
					Ref string `json:"$ref"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			if got := op.Responses["503"].Ref; got != "#/components/responses/Unavailable" {
				t.Errorf("%s %s: 503 is %q", strings.ToUpper(m), p, got)
			}
		}
	}
}

// TestJSONHeaders: JSON answers (success and error alike) carry nosniff
// and no-store; an authorized /metrics scrape is no-store.
func TestJSONHeaders(t *testing.T) {
	e := newEnv(t, 1)
	for _, tc := range []struct{ principal, target, cacheControl string }{
		{"chain", "/api/tasks/" + e.taskID, "no-store"},
		{"chain", "/api/workflows/" + e.taskID, "no-store"},
		{"other", "/api/tasks/" + e.taskID, "no-store"}, // 403
		{"", "/api/tasks", "no-store"},                  // 401
		{"", "/livez", "no-store"},
		{"chain", "/metrics", "no-store"},
	} {
		req := httptest.NewRequest("GET", tc.target, nil)
		if tc.principal != "" {
			req.Header.Set("Authorization", "Bearer "+tokensOf[tc.principal])
		}
		w := httptest.NewRecorder()
		e.s.ServeHTTP(w, req)
		h := w.Header()
		if h.Get("Cache-Control") != tc.cacheControl {
			t.Errorf("%s as %q: %d Cache-Control %q", tc.target, tc.principal, w.Code, h.Get("Cache-Control"))
		}
		if strings.HasPrefix(h.Get("Content-Type"), "application/json") && h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s as %q: %d JSON without nosniff", tc.target, tc.principal, w.Code)
		}
	}
}
