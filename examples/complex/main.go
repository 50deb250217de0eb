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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/examples/complex/workflow"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// MaxBranchItems is complexflow.MaxBranchItems: the workflow lives in
// examples/complex/workflow (importable by rayflow worker and rayflow
// serve), and these names keep this command's API.
const MaxBranchItems = complexflow.MaxBranchItems

const (
	BranchFast = complexflow.BranchFast
	BranchSlow = complexflow.BranchSlow
)

type (
	Request       = complexflow.Request
	Item          = complexflow.Item
	LeafResult    = complexflow.LeafResult
	BranchSummary = complexflow.BranchSummary
	Result        = complexflow.Result
	LeafFailure   = complexflow.LeafFailure
)

var (
	BuildConfig = complexflow.BuildConfig
	Workflow    = complexflow.Workflow
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
