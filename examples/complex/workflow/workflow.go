// Package complexflow is the seed's nested workflow of examples/complex,
// importable so that `rayflow worker` and `rayflow serve` run and enqueue
// it by name (FlowName, and one name per reporting policy: FlowNames).
//
//	chain(
//	    build_config,
//	    group(
//	        chain(build_fast_items, map(fast_leaf), summarize_fast),
//	        chain(build_slow_items, map(slow_leaf), summarize_slow),
//	    ),
//	    summarize_workflow,
//	)
//
// Request.FailureBranch fast|slow with FailureItem N makes exactly that
// leaf fail with a *LeafFailure, deterministically.
package complexflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// MaxBranchItems caps each branch's map (its MaxItems limit).
const MaxBranchItems = 1000

// Branch names.
const (
	BranchFast = "fast"
	BranchSlow = "slow"
)

// Request is the workflow's input: the seed's fast_items, slow_items,
// fast_seconds, slow_seconds, failure_branch and failure_item.
type Request struct {
	FastItems     int           `json:"fast_items"`
	SlowItems     int           `json:"slow_items"`
	FastWork      time.Duration `json:"fast_work"`      // each fast leaf's simulated work
	SlowWork      time.Duration `json:"slow_work"`      // each slow leaf's simulated work
	FailureBranch string        `json:"failure_branch"` // "", "fast" or "slow"
	FailureItem   int           `json:"failure_item"`   // the failing item's index in FailureBranch
}

// Validate reports a request the workflow cannot run as asked.
func (r Request) Validate() error {
	for _, c := range []struct {
		name string
		n    int
	}{{"fast items", r.FastItems}, {"slow items", r.SlowItems}} {
		if c.n < 0 || c.n > MaxBranchItems {
			return fmt.Errorf("complex: %s must be between 0 and %d, got %d", c.name, MaxBranchItems, c.n)
		}
	}
	if r.FastWork < 0 || r.SlowWork < 0 {
		return errors.New("complex: work durations must not be negative")
	}
	n := 0
	switch r.FailureBranch {
	case "":
		return nil
	case BranchFast:
		n = r.FastItems
	case BranchSlow:
		n = r.SlowItems
	default:
		return fmt.Errorf("complex: failure branch must be %q or %q, got %q", BranchFast, BranchSlow, r.FailureBranch)
	}
	if r.FailureItem < 0 || r.FailureItem >= n {
		return fmt.Errorf("complex: failure item %d is not an item of the %s branch (it has %d)", r.FailureItem, r.FailureBranch, n)
	}
	return nil
}

// Item is one map item of a branch.
type Item struct {
	Branch string        `json:"branch"`
	Index  int           `json:"index"`
	Work   time.Duration `json:"work"`
	Fail   bool          `json:"fail"` // the deterministic failure
}

// LeafResult is one leaf's result.
type LeafResult struct {
	Index int `json:"index"`
	Value int `json:"value"`
}

// BranchSummary summarizes one branch's ordered leaf results.
type BranchSummary struct {
	Branch string `json:"branch"`
	Items  int    `json:"items"`
	Total  int    `json:"total"`
}

// Result is the workflow's result: both branch summaries, in branch order,
// and their totals.
type Result struct {
	Branches []BranchSummary `json:"branches"`
	Items    int             `json:"items"`
	Total    int             `json:"total"`
}

// LeafFailure is the deterministic failure of one leaf.
type LeafFailure struct {
	Branch string
	Item   int
}

func (e *LeafFailure) Error() string {
	return fmt.Sprintf("complex: %s item %d failed (deterministic failure)", e.Branch, e.Item)
}

// LeafFailure crosses the Ray leaf boundary with its value, so errors.As
// finds it on a Ray run too.
func init() { sdk.RegisterErrorType[*LeafFailure]() }

// BuildConfig checks the request; every later step reads only its result.
func BuildConfig(_ context.Context, r Request) (Request, error) {
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

func buildItems(branch string, n int, work time.Duration, r Request) []Item {
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{Branch: branch, Index: i, Work: work, Fail: r.FailureBranch == branch && r.FailureItem == i}
	}
	return items
}

// BuildFastItems makes the fast branch's items.
func BuildFastItems(_ context.Context, r Request) ([]Item, error) {
	return buildItems(BranchFast, r.FastItems, r.FastWork, r), nil
}

// BuildSlowItems makes the slow branch's items.
func BuildSlowItems(_ context.Context, r Request) ([]Item, error) {
	return buildItems(BranchSlow, r.SlowItems, r.SlowWork, r), nil
}

// work simulates it.Work of effort, stopping early when ctx is cancelled,
// then fails if the item is the deterministic failure.
func work(ctx context.Context, it Item) error {
	if it.Work > 0 {
		t := time.NewTimer(it.Work)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if it.Fail {
		return &LeafFailure{Branch: it.Branch, Item: it.Index}
	}
	return nil
}

// FastLeaf squares the item's index.
func FastLeaf(ctx context.Context, it Item) (LeafResult, error) {
	if err := work(ctx, it); err != nil {
		return LeafResult{}, err
	}
	return LeafResult{Index: it.Index, Value: it.Index * it.Index}, nil
}

// SlowLeaf cubes the item's index.
func SlowLeaf(ctx context.Context, it Item) (LeafResult, error) {
	if err := work(ctx, it); err != nil {
		return LeafResult{}, err
	}
	return LeafResult{Index: it.Index, Value: it.Index * it.Index * it.Index}, nil
}

func summarize(branch string, rs []LeafResult) BranchSummary {
	s := BranchSummary{Branch: branch, Items: len(rs)}
	for _, r := range rs {
		s.Total += r.Value
	}
	return s
}

// SummarizeFast summarizes the fast branch.
func SummarizeFast(_ context.Context, rs []LeafResult) (BranchSummary, error) {
	return summarize(BranchFast, rs), nil
}

// SummarizeSlow summarizes the slow branch.
func SummarizeSlow(_ context.Context, rs []LeafResult) (BranchSummary, error) {
	return summarize(BranchSlow, rs), nil
}

// SummarizeWorkflow joins the branch summaries.
func SummarizeWorkflow(_ context.Context, bs []BranchSummary) (Result, error) {
	res := Result{Branches: bs}
	for _, b := range bs {
		res.Items += b.Items
		res.Total += b.Total
	}
	return res, nil
}

// Workflow is the nested shape. Node paths: build_config 0.0, the group
// 0.1, the fast branch 0.1.g0 (its map 0.1.g0.1, leaf n 0.1.g0.1.m<n>),
// the slow branch 0.1.g1 (leaf n 0.1.g1.1.m<n>), summarize_workflow 0.2.
var Workflow = sdk.Chain3(
	sdk.Step(BuildConfig),
	sdk.Group(
		sdk.Chain3(
			sdk.Step(BuildFastItems),
			sdk.Map(sdk.Step(FastLeaf)).
				WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: MaxBranchItems}),
			sdk.Step(SummarizeFast),
		).Named(BranchFast),
		sdk.Chain3(
			sdk.Step(BuildSlowItems),
			sdk.Map(sdk.Step(SlowLeaf, sdk.WithResources(sdk.Resources{NumCPUs: 0.5}))).
				WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: MaxBranchItems}),
			sdk.Step(SummarizeSlow),
		).Named(BranchSlow),
	),
	sdk.Step(SummarizeWorkflow),
)

// FlowName is the durable flow name of Workflow under the default (full)
// reporting policy; FlowNames maps each reporting policy to the name
// Workflow is registered under with that policy.
const FlowName = "complex"

// FlowNames are the durable names of Workflow per reporting policy.
var FlowNames = map[sdk.ReportingPolicy]string{
	sdk.ReportingPolicyFull:         FlowName,
	sdk.ReportingPolicyTerminalOnly: FlowName + "_terminal_only",
	sdk.ReportingPolicyDisabled:     FlowName + "_disabled",
}

func init() { sdk.RegisterFlow(FlowName, Workflow) }
