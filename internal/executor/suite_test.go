package executor_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/internal/executor/executortest"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// fake is a deterministic in-process backend: Item runs the leaf on the
// worker goroutine, Batch runs a unit's items one after another and stops
// after an error or once cancelled.
type fake struct{}

func (fake) Item(ctx context.Context, _ int, j executortest.Job) (int, error) {
	return executortest.Leaf(ctx, j)
}

func (fake) Batch(ctx context.Context, _ int, items []executortest.Job, each func(int, int, error)) {
	for i, j := range items {
		if ctx.Err() != nil {
			return
		}
		v, err := executortest.Leaf(ctx, j)
		each(i, v, err)
		if err != nil {
			return
		}
	}
}

func (fake) Discard(int, int)                            {}
func (fake) Abort(context.Context, error, time.Duration) {}

// listSink collects results by input index.
type listSink struct{ results []int }

func (s *listSink) Add(_ context.Context, index int, v int) error {
	for len(s.results) <= index {
		s.results = append(s.results, 0)
	}
	s.results[index] = v
	return nil
}

func (s *listSink) Finish(_ context.Context, n int) (executortest.Result, error) {
	for len(s.results) < n {
		s.results = append(s.results, 0)
	}
	return executortest.Result{List: s.results[:n]}, nil
}

// foldSink folds results (in input order) with executortest.Combine.
type foldSink struct{ acc int }

func (s *foldSink) Add(ctx context.Context, _ int, v int) (err error) {
	s.acc, err = executortest.Combine(ctx, s.acc, v)
	return err
}

func (s *foldSink) Finish(context.Context, int) (executortest.Result, error) {
	return executortest.Result{Folded: s.acc}, nil
}

// fakeRunID is the fake runs' progress identity.
var fakeRunID = common.RunIdentity{SchemaVersion: 1, RunID: "6f1c0c52-3f0e-4a8e-9d55-0f4a2d6c1b10", TaskExecutionPK: 1, AttemptNumber: 1, ExecutionGeneration: 1}

// runFake runs a scenario through executor.Run (a lazy input) or
// executor.RunIndexed (a sized one) on the fake backend,
// reporting to a real progress.Run (full policy, no sink) whose final
// state is the result's Progress; every report is checked against the
// window.
func runFake(t *testing.T) executortest.Runner {
	return func(ctx context.Context, s executortest.Spec) (executortest.Result, error) {
		lim := executor.Limits{Node: "0", Window: s.Window, MaxItems: s.MaxItems, BatchSize: s.ItemsPerTask,
			CancelTimeout: s.CancelTimeout, Ordered: s.Fold, InOrder: s.Fold}
		if s.AutoBatching {
			lim.Auto = &executor.TaskCost{Overhead: 2 * time.Millisecond, CPUs: 2}
		}
		graph := &flowgraph.Node{Kind: flowgraph.KindMap, Map: &flowgraph.Map{Limits: &flowgraph.Limits{MaxConcurrency: s.Window, MaxItems: s.MaxItems}},
			Children: []*flowgraph.Node{{Kind: flowgraph.KindStep, Step: &flowgraph.Step{Callable: flowgraph.Callable{Name: "executortest.Leaf"}}}}}
		pr, err := progress.Start(ctx, progress.RunConfig{Identity: fakeRunID, Root: graph})
		if err != nil {
			t.Fatal(err)
		}
		final := func(res executortest.Result, err error) (executortest.Result, error) {
			p, perr := pr.Final(err)
			if perr != nil {
				t.Fatal(perr)
			}
			if res.Progress, perr = executortest.FinalMap(p); perr != nil {
				t.Fatal(perr)
			}
			return res, err
		}
		var seq iter.Seq2[executortest.Job, error] = func(yield func(executortest.Job, error) bool) {
			for _, j := range s.Jobs {
				if !yield(j, nil) {
					return
				}
			}
		}
		report := func(p progress.MapCounters) {
			if p.InFlight < 0 || p.InFlight > max(s.Window, 1) || p.Completed > p.Admitted {
				t.Errorf("progress %+v out of bounds (window %d)", p, s.Window)
			}
			pr.Map(p)
		}
		var sink executor.Sink[int, executortest.Result] = &listSink{}
		if s.Fold {
			sink = &foldSink{}
		}
		b := executor.Backend[executortest.Job, int](fake{})
		if !s.Lazy {
			// A sized input: read by index, refused over MaxItems by RunIndexed.
			return final(executor.RunIndexed(ctx, lim, len(s.Jobs), func(i int) executortest.Job { return s.Jobs[i] }, b, sink, report))
		}
		return final(executor.Run(ctx, lim, seq, b, sink, report))
	}
}

// The backend suite on the fake backend, in fake time: the bounds are
// exact (no slack).
func TestSuiteFake(t *testing.T) {
	executortest.Run(t, runFake(t), executortest.Options{Synctest: true})
}
