package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rayflow/rayflow/engine/durable"
	complexwf "github.com/rayflow/rayflow/examples/complex/workflow"
	fanoutwf "github.com/rayflow/rayflow/examples/fanout/workflow"
	orderwf "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	recoverywf "github.com/rayflow/rayflow/examples/recovery/workflow"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve/read"
)

// The example workflows this package registers as durable flows (so that
// `rayflow worker` runs them and the enqueue routes create them): the
// order-fulfillment and recovery showcases, the complex workflow (one name
// per reporting policy) and the fan-out benchmark.
func init() {
	durable.Register(orderwf.FlowName, orderwf.Workflow)
	durable.Register(recoverywf.FlowName, recoverywf.Workflow)
	durable.Register("fanout", fanoutwf.Workflow)
	// The full-policy name last: a typed durable.Enqueue of the flow value
	// resolves to it.
	for _, p := range []sdk.ReportingPolicy{sdk.ReportingPolicyTerminalOnly, sdk.ReportingPolicyDisabled} {
		durable.Register(complexwf.FlowNames[p], complexwf.Workflow, sdk.WithReportingPolicy(p))
	}
	durable.Register(complexwf.FlowName, complexwf.Workflow)
}

// ExampleFlows lists the durable flow names the enqueue routes create.
func ExampleFlows() []string {
	out := []string{orderwf.FlowName, recoverywf.FlowName, "fanout"}
	for _, n := range complexwf.FlowNames {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// InputError is the body of a 400 for an enqueue request the example
// cannot run as asked: INVALID_ARGUMENT and the query parameter at fault
// (empty when the request as a whole is wrong). Nothing is written.
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
}

// param is one query parameter of an enqueue route.
type param struct {
	name     string
	def      string
	min, max float64  // numbers: the closed range
	integer  bool     // numbers: an integer
	enum     []string // strings: the accepted values ("" always accepted when it is def)
}

// query holds the parsed parameters.
type query map[string]string

func (q query) int(name string) int { n, _ := strconv.Atoi(q[name]); return n }
func (q query) float(name string) float64 {
	f, _ := strconv.ParseFloat(q[name], 64)
	return f
}

// example is one enqueue route: its parameters and how they make the
// flow's input (the input's own validation runs before anything is
// written; its error names field).
type example struct {
	path, flow, summary string
	maxAttempts         int
	params              []param
	// input returns the flow name (a variant may pick another) and input.
	input func(q query) (flow string, in any, field string, err error)
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

var examples = []example{
	{
		path: "/api/examples/orderfulfillment", flow: orderwf.FlowName, maxAttempts: 1,
		summary: "enqueue the order-fulfillment showcase (21 topology nodes, 28 edges, 12 layers)",
		params: []param{
			{name: "item_count", def: "3", min: 1, max: orderwf.MaxItems, integer: true},
			{name: "work_seconds", def: "0.05", min: 0, max: orderwf.MaxWorkSeconds},
			{name: "failure_stage", enum: orderwf.Stages},
			{name: "failure_item", def: "0", min: 0, max: orderwf.MaxItems - 1, integer: true},
		},
		input: func(q query) (string, any, string, error) {
			r := orderwf.Request{ItemCount: q.int("item_count"), WorkSeconds: q.float("work_seconds"),
				FailureStage: q["failure_stage"], FailureItem: q.int("failure_item")}
			return orderwf.FlowName, r, "failure_item", r.Validate()
		},
	},
	{
		path: "/api/examples/recovery", flow: recoverywf.FlowName, maxAttempts: recoverywf.MaxAttempts,
		summary: "enqueue the three-attempt recovery showcase (fails at attempts 1 and 2, succeeds at 3)",
		params: []param{
			{name: "item_count", def: "1", min: 1, max: orderwf.MaxItems, integer: true},
			{name: "work_seconds", def: "0.01", min: 0, max: orderwf.MaxWorkSeconds},
		},
		input: func(q query) (string, any, string, error) {
			r := recoverywf.Request{ItemCount: q.int("item_count"), WorkSeconds: q.float("work_seconds")}
			return recoverywf.FlowName, r, "", r.Validate()
		},
	},
	{
		path: "/api/examples/complex", flow: complexwf.FlowName, maxAttempts: 1,
		summary: "enqueue the complex workflow (failure switches, reporting policies)",
		params: []param{
			{name: "fast_items", def: "4", min: 0, max: complexwf.MaxBranchItems, integer: true},
			{name: "slow_items", def: "2", min: 0, max: complexwf.MaxBranchItems, integer: true},
			{name: "fast_seconds", def: "0.01", min: 0, max: 60},
			{name: "slow_seconds", def: "0.02", min: 0, max: 60},
			{name: "failure_branch", enum: []string{complexwf.BranchFast, complexwf.BranchSlow}},
			{name: "failure_item", def: "0", min: 0, max: complexwf.MaxBranchItems - 1, integer: true},
			{name: "reporting_policy", def: string(sdk.ReportingPolicyFull), enum: []string{string(sdk.ReportingPolicyFull),
				string(sdk.ReportingPolicyTerminalOnly), string(sdk.ReportingPolicyDisabled)}},
		},
		input: func(q query) (string, any, string, error) {
			r := complexwf.Request{FastItems: q.int("fast_items"), SlowItems: q.int("slow_items"), FastWork: seconds(q.float("fast_seconds")),
				SlowWork: seconds(q.float("slow_seconds")), FailureBranch: q["failure_branch"], FailureItem: q.int("failure_item")}
			if r.FailureBranch == "" && r.FailureItem != 0 {
				return "", nil, "failure_item", errors.New("failure_item needs a failure_branch")
			}
			return complexwf.FlowNames[sdk.ReportingPolicy(q["reporting_policy"])], r, "failure_item", r.Validate()
		},
	},
	{
		path: "/api/examples/fanout", flow: "fanout", maxAttempts: 1,
		summary: "enqueue the fan-out benchmark: build_items -> map(calculate, window 16) -> summarize",
		params:  []param{{name: "count", def: "200", min: 0, max: 10_000, integer: true}},
		input: func(q query) (string, any, string, error) {
			return "fanout", q.int("count"), "", nil
		},
	},
}

// parse checks the request's query against ex's parameters: every
// parameter known, given at most once, of its type and in its range.
func (ex *example) parse(r *http.Request) (query, error) {
	if r.ContentLength > 0 {
		return nil, inputError("", "the parameters go in the query string; the body must be empty")
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, inputError("", "malformed query string")
	}
	q := query{}
	for name, vs := range vals {
		i := slices.IndexFunc(ex.params, func(p param) bool { return p.name == name })
		if i < 0 {
			known := make([]string, len(ex.params))
			for j, p := range ex.params {
				known[j] = p.name
			}
			return nil, inputError(name, "unknown parameter %q (known: %s)", truncate(name, 64), strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return nil, inputError(name, "%s is given %d times", name, len(vs))
		}
	}
	for _, p := range ex.params {
		v, ok := vals[p.name]
		s := p.def
		if ok {
			s = v[0]
		}
		switch {
		case p.enum != nil:
			if s != p.def && !slices.Contains(p.enum, s) {
				return nil, inputError(p.name, "%s must be one of %s, got %q", p.name, strings.Join(p.enum, ", "), truncate(s, 64))
			}
		case p.integer:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || float64(n) < p.min || float64(n) > p.max {
				return nil, inputError(p.name, "%s must be an integer from %g to %g, got %q", p.name, p.min, p.max, truncate(s, 64))
			}
		default:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || f < p.min || f > p.max {
				return nil, inputError(p.name, "%s must be a number from %g to %g, got %q", p.name, p.min, p.max, truncate(s, 64))
			}
		}
		q[p.name] = s
	}
	return q, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// exampleRoutes are the enqueue routes.
func (s *Server) exampleRoutes() []Route {
	out := make([]Route, len(examples))
	for i := range examples {
		ex := &examples[i]
		out[i] = Route{Method: "POST", Pattern: ex.path, Flow: ex.flow, h: func(w http.ResponseWriter, r *http.Request, principal string) {
			s.enqueue(w, r, principal, ex)
		}}
	}
	return out
}

// enqueue authorizes principal for the example's flow (before looking at
// the input, so a denied principal learns nothing), checks the input and
// creates the task.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request, principal string, ex *example) {
	if err := s.reads.AuthorizeFlow(r.Context(), principal, ex.flow, read.ActionEnqueue); err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := ex.parse(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, err)
		return
	}
	flow, in, field, err := ex.input(q)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, inputError(field, "%v", err))
		return
	}
	if flow != ex.flow {
		// a variant (the complex workflow's reporting policies) is a flow
		// of its own: the principal needs it too.
		if err := s.reads.AuthorizeFlow(r.Context(), principal, flow, read.ActionEnqueue); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: encoding the %s input: %w", flow, err))
		return
	}
	id, err := s.client.EnqueueJSON(r.Context(), flow, raw, durable.EnqueueOptions{MaxAttempts: ex.maxAttempts})
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: enqueueing %s: %w", flow, err))
		return
	}
	s.log.Info("enqueue", "task_id", id, "flow", flow, "principal", principal)
	w.Header().Set("Location", "/api/tasks/"+id)
	writeJSON(w, http.StatusCreated, Enqueued{TaskID: id, Flow: flow, State: string(durable.StateQueued), MaxAttempts: ex.maxAttempts,
		StatusURL: "/api/tasks/" + id, ProgressURL: "/api/workflows/" + id, GraphURL: "/tasks/" + id + "/graph"})
}
