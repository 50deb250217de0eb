// Command complex runs the seed's nested workflow: a configuration step,
// then two branches that each build items, map a leaf over them in a
// bounded window and summarize, then one summary of both branches.
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
// -failure-branch fast|slow with -failure-item N makes exactly that leaf
// fail with a *LeafFailure, deterministically; the run then fails with
// that error, naming the leaf's node path (for example 0.1.g1.1.m0), and
// the command exits 1. On success the result JSON is the last line on
// stdout.
//
//	go run ./examples/complex
//	go run ./examples/complex -failure-branch slow -failure-item 0
//	go run ./examples/complex -ray local   # or -ray ADDRESS (make ray-up)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/progress"
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

// run is main without the process: it returns the exit status (0 ok,
// 1 the workflow failed, 2 usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("complex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r Request
	fs.IntVar(&r.FastItems, "fast-items", 4, "items in the fast branch")
	fs.IntVar(&r.SlowItems, "slow-items", 2, "items in the slow branch")
	fs.DurationVar(&r.FastWork, "fast-work", 10*time.Millisecond, "simulated work of each fast leaf")
	fs.DurationVar(&r.SlowWork, "slow-work", 20*time.Millisecond, "simulated work of each slow leaf")
	fs.StringVar(&r.FailureBranch, "failure-branch", "", "make one leaf of this branch (fast or slow) fail")
	fs.IntVar(&r.FailureItem, "failure-item", 0, "the index of the failing item in -failure-branch")
	sequential := fs.Bool("sequential", false, "run one leaf at a time, in order (debugging)")
	rayAddr := fs.String("ray", "", `run on Ray: "local" (a private local cluster) or a cluster address`)
	progressFile := fs.String("progress", "", "write the run's final progress publication (summary v3, topology, node detail) to this JSON file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "complex: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := r.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var opts []sdk.RunOption
	if *sequential {
		opts = append(opts, sdk.Sequential())
	}
	final := &progress.Latest{}
	if *progressFile != "" {
		opts = append(opts, sdk.WithProgress(final))
	}
	var (
		res Result
		err error
	)
	if *rayAddr != "" {
		res, err = runOnRay(ctx, *rayAddr, r, stderr, final, opts...)
	} else {
		res, err = sdk.Run(ctx, Workflow, r, opts...)
	}
	if *progressFile != "" {
		if werr := writeProgress(*progressFile, final); werr != nil {
			fmt.Fprintf(stderr, "complex: %v\n", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "complex: workflow failed: %v\n", err)
		return 1
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "complex: encoding the result: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

// runOnRay runs the workflow on a Ray cluster ("local": a private one),
// printing its live progress (full policy) to stderr.
func runOnRay(ctx context.Context, addr string, r Request, stderr io.Writer, final *progress.Latest, opts ...sdk.RunOption) (Result, error) {
	e, err := rayengine.New(ctx, rayengine.Options{Address: addr, NumCPUs: 2, Stderr: stderr})
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	return sdk.Run(ctx, Workflow, r, append(opts, sdk.WithEngine(e), sdk.WithProgress(liveProgress(stderr, final)),
		sdk.WithProgressInterval(200*time.Millisecond))...)
}

// liveProgress is a progress sink printing one line per publication: the
// run's summary v3 counters (and the terminal state at the end); it also
// hands every publication to keep.
func liveProgress(w io.Writer, keep progress.Sink) progress.Sink {
	return progress.SinkFunc(func(ctx context.Context, p *progress.Publication) error {
		_ = keep.Publish(ctx, p)
		s := p.Summary
		fmt.Fprintf(w, "progress: run %s %s: %d/%d nodes done, %d running, %.0f%%\n",
			p.Identity.RunID, s.State, s.NodeCounts.Succeeded, s.NodeCounts.Discovered, s.NodeCounts.Running, s.ProgressPercent)
		return nil
	})
}

// writeProgress writes the final publication's summary, topology and node
// detail as JSON.
func writeProgress(path string, l *progress.Latest) error {
	p, _ := l.Last()
	if p == nil || !p.Final {
		return fmt.Errorf("no final progress publication")
	}
	b, err := json.MarshalIndent(struct {
		Summary any `json:"summary"`
		Nodes   any `json:"nodes"`
		Edges   any `json:"edges"`
		Details any `json:"details"`
	}{p.Summary, p.Nodes, p.Edges, p.Details}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func main() {
	rayengine.ServeLeafIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
