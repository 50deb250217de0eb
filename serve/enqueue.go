package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

// EnqueueRoute is a POST route that creates one durable task of a
// registered flow from query parameters (serve.WithEnqueueRoutes installs
// it; package serve/showcase has the examples' routes). The server checks
// the principal's allowlist first, then every parameter against Params,
// then Input's own validation; a refused request writes nothing. The route
// is also described in /api/openapi.json.
type EnqueueRoute struct {
	// Path is the route, e.g. /api/examples/fanout.
	Path string
	// Flow is the durable flow the route creates (Input may pick a
	// variant: a flow the principal must also be allowed).
	Flow string
	// Summary and Description document the route in the OpenAPI document.
	Summary, Description string
	// MaxAttempts of the task (0: the durable default).
	MaxAttempts int
	// Params are the accepted query parameters, in documentation order.
	Params []Param
	// Input makes the flow name and its input from the parsed parameters;
	// an error is a 400 naming field (empty: the request as a whole).
	Input func(q Query) (flow string, in any, field string, err error)
}

// Param is one query parameter of an EnqueueRoute: a string from Enum
// (Default always accepted) when Enum is set, else a number in the closed
// range [Min, Max], an integer when Integer.
type Param struct {
	Name, Default string
	Min, Max      float64
	Integer       bool
	Enum          []string
}

// Query holds an enqueue request's parameters after Param checking, with
// the defaults filled in.
type Query map[string]string

// Int is an integer parameter's value.
func (q Query) Int(name string) int { n, _ := strconv.Atoi(q[name]); return n }

// Float is a number parameter's value.
func (q Query) Float(name string) float64 {
	f, _ := strconv.ParseFloat(q[name], 64)
	return f
}

// Option configures a Server.
type Option func(*Server)

// WithEnqueueRoutes installs enqueue routes (their flows must be
// registered with the durable registry the workers use).
func WithEnqueueRoutes(routes ...EnqueueRoute) Option {
	return func(s *Server) { s.enqueueRoutes = append(s.enqueueRoutes, routes...) }
}

// InputError is the body of a 400 for an enqueue request the flow cannot
// run as asked: INVALID_ARGUMENT and the query parameter at fault (empty
// when the request as a whole is wrong). Nothing is written.
type InputError struct {
	Code    gread.ErrorCode `json:"code"`
	Message string          `json:"message"`
	Field   string          `json:"field"`
}

func (e *InputError) Error() string { return e.Message }

func inputError(field, format string, args ...any) *InputError {
	return &InputError{Code: gread.ErrorCodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Enqueued is the body of a 201 from an enqueue route.
type Enqueued struct {
	TaskID      string `json:"task_id"`
	Flow        string `json:"flow"`
	State       string `json:"state"`
	MaxAttempts int    `json:"max_attempts"`
	StatusURL   string `json:"status_url"`
	ProgressURL string `json:"progress_url"`
	GraphURL    string `json:"graph_url"`
	// Duplicate says the enqueue's unique key was held: the task is the
	// existing holder (its flow, state and attempts), and nothing was
	// created (POST /api/tasks answers 200 rather than 201).
	Duplicate bool `json:"duplicate,omitempty"`
}

// parse checks the request's query against ex's parameters: every
// parameter known, given at most once, of its type and in its range.
func (ex *EnqueueRoute) parse(r *http.Request) (Query, error) {
	if r.ContentLength > 0 {
		return nil, inputError("", "the parameters go in the query string; the body must be empty")
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, inputError("", "malformed query string")
	}
	for name, vs := range vals {
		if !slices.ContainsFunc(ex.Params, func(p Param) bool { return p.Name == name }) {
			known := make([]string, len(ex.Params))
			for j, p := range ex.Params {
				known[j] = p.Name
			}
			return nil, inputError(name, "unknown parameter %q (known: %s)", truncate(name, 64), strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return nil, inputError(name, "%s is given %d times", name, len(vs))
		}
	}
	q := Query{}
	for _, p := range ex.Params {
		s := p.Default
		if v, ok := vals[p.Name]; ok {
			s = v[0]
		}
		switch {
		case p.Enum != nil:
			if s != p.Default && !slices.Contains(p.Enum, s) {
				return nil, inputError(p.Name, "%s must be one of %s, got %q", p.Name, strings.Join(p.Enum, ", "), truncate(s, 64))
			}
		case p.Integer:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || float64(n) < p.Min || float64(n) > p.Max {
				return nil, inputError(p.Name, "%s must be an integer from %g to %g, got %q", p.Name, p.Min, p.Max, truncate(s, 64))
			}
		default:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || f < p.Min || f > p.Max {
				return nil, inputError(p.Name, "%s must be a number from %g to %g, got %q", p.Name, p.Min, p.Max, truncate(s, 64))
			}
		}
		q[p.Name] = s
	}
	return q, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// routesOfEnqueue are the installed enqueue routes as API routes.
func (s *Server) routesOfEnqueue() []Route {
	out := make([]Route, len(s.enqueueRoutes))
	for i := range s.enqueueRoutes {
		ex := &s.enqueueRoutes[i]
		out[i] = Route{Method: "POST", Pattern: ex.Path, Flow: ex.Flow, h: func(w http.ResponseWriter, r *http.Request, principal string) {
			s.enqueue(w, r, principal, ex)
		}}
	}
	return out
}

// enqueue authorizes principal for the route's flow (before looking at
// the input, so a denied principal learns nothing), checks the input and
// creates the task.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request, principal string, ex *EnqueueRoute) {
	if err := s.reads.AuthorizeFlow(r.Context(), principal, ex.Flow, reader.ActionEnqueue); err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := ex.parse(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, err)
		return
	}
	flow, in, field, err := ex.Input(q)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, inputError(field, "%v", err))
		return
	}
	if flow != ex.Flow {
		// a variant (e.g. the complex workflow's reporting policies) is a
		// flow of its own: the principal needs it too.
		if err := s.reads.AuthorizeFlow(r.Context(), principal, flow, reader.ActionEnqueue); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: encoding the %s input: %w", flow, err))
		return
	}
	id, err := s.client.EnqueueJSON(r.Context(), flow, raw, durable.EnqueueOptions{MaxAttempts: ex.MaxAttempts})
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: enqueueing %s: %w", flow, err))
		return
	}
	s.log.Info("enqueue", "task_id", id, "flow", flow, "principal", principal)
	w.Header().Set("Location", "/api/tasks/"+id)
	writeJSON(w, http.StatusCreated, Enqueued{TaskID: id, Flow: flow, State: string(durable.StateQueued), MaxAttempts: ex.MaxAttempts,
		StatusURL: "/api/tasks/" + id, ProgressURL: "/api/workflows/" + id, GraphURL: "/tasks/" + id + "/graph"})
}

// enqueueContract is the part of every enqueue route's description that
// the server, not the route, guarantees.
const enqueueContract = "Parameters go in the query string (the body must be empty); an unknown, repeated, mistyped or " +
	"out-of-range parameter is a 400 InputError naming it, and nothing is written. The principal needs the flow on its " +
	"allowlist (403 otherwise, before the input is looked at)."

// openAPIDocument is the checked-in document (the core API) with a path
// item for each installed enqueue route, made from its Params so that the
// documentation cannot drift from what the route accepts.
func openAPIDocument(core []byte, routes []EnqueueRoute) ([]byte, error) {
	if len(routes) == 0 {
		return core, nil
	}
	dec := json.NewDecoder(bytes.NewReader(core))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("serve: openapi.json: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	if paths == nil {
		return nil, fmt.Errorf("serve: openapi.json has no paths")
	}
	body := func(desc, schema string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"$ref": "#/components/schemas/" + schema}}}}
	}
	errRef := map[string]any{"$ref": "#/components/responses/Error"}
	unavailableRef := map[string]any{"$ref": "#/components/responses/Unavailable"}
	for _, ex := range routes {
		if _, dup := paths[ex.Path]; dup {
			return nil, fmt.Errorf("serve: enqueue route %s is already a path of the API", ex.Path)
		}
		params := make([]any, len(ex.Params))
		for i, p := range ex.Params {
			schema := map[string]any{}
			switch {
			case p.Enum != nil:
				schema["type"], schema["enum"] = "string", p.Enum
			default:
				schema["type"] = "number"
				if p.Integer {
					schema["type"] = "integer"
				}
				schema["minimum"], schema["maximum"], schema["default"] = p.Min, p.Max, json.Number(p.Default)
			}
			params[i] = map[string]any{"name": p.Name, "in": "query", "schema": schema}
		}
		desc := fmt.Sprintf("One task (max_attempts %d) of the flow %s", ex.MaxAttempts, ex.Flow)
		if ex.Description != "" {
			desc += ": " + ex.Description
		} else {
			desc += "."
		}
		paths[ex.Path] = map[string]any{"post": map[string]any{
			"summary": ex.Summary, "description": desc + " " + enqueueContract, "parameters": params,
			"responses": map[string]any{"201": body("the task is queued", "Enqueued"), "400": body("invalid input", "InputError"),
				"401": errRef, "403": errRef, "503": unavailableRef},
		}}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
