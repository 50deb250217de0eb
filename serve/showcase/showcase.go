package showcase

import (
	"errors"
	"slices"
	"time"

	"github.com/rayflow/rayflow/durable"
	complexwf "github.com/rayflow/rayflow/examples/complex/workflow"
	fanoutwf "github.com/rayflow/rayflow/examples/fanout/workflow"
	orderwf "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	recoverywf "github.com/rayflow/rayflow/examples/recovery/workflow"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve"
)

// Fanout is the fan-out benchmark's durable flow name.
const Fanout = "fanout"

// Register registers the example flows with durable.Register: the
// order-fulfillment and recovery showcases, the complex workflow (one name
// per reporting policy) and the fan-out benchmark. Call it from an init
// function, like any registration: the binary's Ray Job coordinator
// processes look the flows up before main runs.
func Register() {
	durable.Register(orderwf.FlowName, orderwf.Workflow)
	durable.Register(recoverywf.FlowName, recoverywf.Workflow)
	durable.Register(Fanout, fanoutwf.Workflow)
	// The full-policy name last: a typed durable.Enqueue of the flow value
	// resolves to it.
	for _, p := range []sdk.ReportingPolicy{sdk.ReportingPolicyTerminalOnly, sdk.ReportingPolicyDisabled} {
		durable.Register(complexwf.FlowNames[p], complexwf.Workflow, sdk.WithReportingPolicy(p))
	}
	durable.Register(complexwf.FlowName, complexwf.Workflow)
}

// Flows lists the durable flow names the routes create.
func Flows() []string {
	out := []string{orderwf.FlowName, recoverywf.FlowName, Fanout}
	for _, n := range complexwf.FlowNames {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// Routes are the examples' enqueue routes, POST /api/examples/{name}.
func Routes() []serve.EnqueueRoute {
	return []serve.EnqueueRoute{
		{
			Path: "/api/examples/orderfulfillment", Flow: orderwf.FlowName, MaxAttempts: 1,
			Summary: "enqueue the order-fulfillment showcase",
			Description: "21 topology nodes, 28 edges, 12 longest-path layers whatever item_count (the seed counts " +
				"21+2(n-1) nodes and 28+4(n-1) edges, items expanded). failure_stage makes that step fail; failure_item " +
				"picks the item of validate_item and reserve_inventory.",
			Params: []serve.Param{
				{Name: "item_count", Default: "3", Min: 1, Max: orderwf.MaxItems, Integer: true},
				{Name: "work_seconds", Default: "0.05", Min: 0, Max: orderwf.MaxWorkSeconds},
				{Name: "failure_stage", Enum: orderwf.Stages},
				{Name: "failure_item", Default: "0", Min: 0, Max: orderwf.MaxItems - 1, Integer: true},
			},
			Input: func(q serve.Query) (string, any, string, error) {
				r := orderwf.Request{ItemCount: q.Int("item_count"), WorkSeconds: q.Float("work_seconds"),
					FailureStage: q["failure_stage"], FailureItem: q.Int("failure_item")}
				return orderwf.FlowName, r, "failure_item", r.Validate()
			},
		},
		{
			Path: "/api/examples/recovery", Flow: recoverywf.FlowName, MaxAttempts: recoverywf.MaxAttempts,
			Summary: "enqueue the three-attempt recovery showcase",
			Description: "attempt 1 fails at build_order_batch, attempt 2 at join_order_inputs, attempt 3 succeeds. " +
				"The failure sequence is server-owned.",
			Params: []serve.Param{
				{Name: "item_count", Default: "1", Min: 1, Max: orderwf.MaxItems, Integer: true},
				{Name: "work_seconds", Default: "0.01", Min: 0, Max: orderwf.MaxWorkSeconds},
			},
			Input: func(q serve.Query) (string, any, string, error) {
				r := recoverywf.Request{ItemCount: q.Int("item_count"), WorkSeconds: q.Float("work_seconds")}
				return recoverywf.FlowName, r, "", r.Validate()
			},
		},
		{
			Path: "/api/examples/complex", Flow: complexwf.FlowName, MaxAttempts: 1,
			Summary: "enqueue the complex workflow",
			Description: "the flow complex (reporting_policy full), complex_terminal_only or complex_disabled. " +
				"failure_branch with failure_item makes that leaf fail.",
			Params: []serve.Param{
				{Name: "fast_items", Default: "4", Min: 0, Max: complexwf.MaxBranchItems, Integer: true},
				{Name: "slow_items", Default: "2", Min: 0, Max: complexwf.MaxBranchItems, Integer: true},
				{Name: "fast_seconds", Default: "0.01", Min: 0, Max: 60},
				{Name: "slow_seconds", Default: "0.02", Min: 0, Max: 60},
				{Name: "failure_branch", Enum: []string{complexwf.BranchFast, complexwf.BranchSlow}},
				{Name: "failure_item", Default: "0", Min: 0, Max: complexwf.MaxBranchItems - 1, Integer: true},
				{Name: "reporting_policy", Default: string(sdk.ReportingPolicyFull), Enum: []string{string(sdk.ReportingPolicyFull),
					string(sdk.ReportingPolicyTerminalOnly), string(sdk.ReportingPolicyDisabled)}},
			},
			Input: func(q serve.Query) (string, any, string, error) {
				r := complexwf.Request{FastItems: q.Int("fast_items"), SlowItems: q.Int("slow_items"), FastWork: seconds(q.Float("fast_seconds")),
					SlowWork: seconds(q.Float("slow_seconds")), FailureBranch: q["failure_branch"], FailureItem: q.Int("failure_item")}
				if r.FailureBranch == "" && r.FailureItem != 0 {
					return "", nil, "failure_item", errors.New("failure_item needs a failure_branch")
				}
				return complexwf.FlowNames[sdk.ReportingPolicy(q["reporting_policy"])], r, "failure_item", r.Validate()
			},
		},
		{
			Path: "/api/examples/fanout", Flow: Fanout, MaxAttempts: 1,
			Summary:     "enqueue the fan-out benchmark",
			Description: "build_items -> map(calculate, window 16, max 10,000) -> summarize.",
			Params:      []serve.Param{{Name: "count", Default: "200", Min: 0, Max: 10_000, Integer: true}},
			Input: func(q serve.Query) (string, any, string, error) {
				return Fanout, q.Int("count"), "", nil
			},
		},
	}
}
