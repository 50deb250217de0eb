package serve

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes: the checked-in document describes exactly
// the JSON routes (every route but the browser pages and their assets),
// and /api/openapi.json serves it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
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
	s := lazyServer(t)
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
	if w.Code != 200 || w.Body.String() != string(openAPI) {
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

// TestOpenAPIExampleParameters: each enqueue route documents exactly the
// query parameters it accepts, with their defaults and bounds.
func TestOpenAPIExampleParameters(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
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
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		ps := doc.Paths[ex.path]["post"].Parameters
		if len(ps) != len(ex.params) {
			t.Errorf("%s: %d documented parameters, %d accepted", ex.path, len(ps), len(ex.params))
			continue
		}
		for i, p := range ex.params {
			d := ps[i]
			ok := d.Name == p.name && d.In == "query"
			switch {
			case p.enum != nil:
				ok = ok && d.Schema.Type == "string" && slices.Equal(d.Schema.Enum, p.enum)
			default:
				typ := "number"
				if p.integer {
					typ = "integer"
				}
				ok = ok && d.Schema.Type == typ && d.Schema.Minimum != nil && *d.Schema.Minimum == p.min &&
					d.Schema.Maximum != nil && *d.Schema.Maximum == p.max && fmt.Sprint(d.Schema.Default) == p.def
			}
			if !ok {
				t.Errorf("%s: documented parameter %d %+v differs from %+v", ex.path, i, d, p)
			}
		}
	}
}
