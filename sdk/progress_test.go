package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// Halves reports its progress and returns n items.
func Halves(ctx context.Context, n int) ([]int, error) {
	sdk.ReportProgress(ctx, 1, 2, "half way", map[string]any{"items": n})
	return make([]int, n), nil
}

// CountItems sums the items it is given.
func CountItems(_ context.Context, xs []int) (int, error) { return len(xs), nil }

// ProjectCount is the output preview of CountItems.
func ProjectCount(n int) (any, error) { return map[string]any{"n": n}, nil }

var progressFlow = sdk.Chain3(sdk.Step(Halves), sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), sdk.Step(CountItems).WithOutputPreview(ProjectCount))

// A local run reports what a Ray run reports: the registered graph, the
// leaves' lifecycle, application progress, the map's fan-out and the
// output preview, every event fenced to the run's identity.
func TestLocalProgressFull(t *testing.T) {
	t.Parallel()
	id := sdk.NewRunIdentity()
	id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration = 41, 3, 2
	sink := &progress.Latest{}
	var started sdk.RunIdentity
	got, err := sdk.Run(context.Background(), progressFlow, 3, sdk.WithRunIdentity(id), sdk.WithProgress(sink),
		sdk.OnRunStart(func(x sdk.RunIdentity) { started = x }))
	if err != nil || got != 3 {
		t.Fatalf("got %d, %v", got, err)
	}
	if started != id {
		t.Fatalf("OnRunStart saw %+v, want %+v", started, id)
	}
	p, n := sink.Last()
	if p == nil || !p.Final || n < 1 {
		t.Fatalf("no final publication (%d)", n)
	}
	want := fmt.Sprintf("%d/%d/%d/%s", id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID)
	if r := p.Summary.RunIdentity; fmt.Sprintf("%d/%d/%d/%s", r.TaskExecutionPK, r.AttemptNumber, r.ExecutionGeneration, r.RunID) != want || p.Identity != r {
		t.Fatalf("summary identity %+v, want %s", r, want)
	}
	s := p.Summary
	if s.State != summary.StateSucceeded || s.Detail.Availability != summary.DetailAvailabilityAvailable || s.NodeCounts.Succeeded != 3 ||
		s.EdgeCounts.Discovered != 2 || *s.SelectedStrategy != "local" || s.ReportingPolicy != "full" {
		t.Fatalf("summary %+v", s)
	}
	if in := p.Snapshot.Ingress; in.Rejected != 0 || in.RejectedByReason.FenceMismatch != 0 || in.AcceptedByKind[progress.KindStarted] != 2 ||
		in.AcceptedByKind[progress.KindApplicationProgress] != 1 || in.AcceptedByKind[progress.KindOutputPreview] != 2 {
		t.Fatalf("ingress %+v", in)
	}
	step, m, last := p.Details[0], p.Details[1], p.Details[2]
	if step.Progress == nil || *step.Progress.Message != "half way" || step.Progress.Percent != 100 {
		t.Errorf("step detail %+v", step)
	}
	if f := m.Fanout; f == nil || f.SubmittedItems != 3 || f.CompletedItems != 3 || !f.InputExhausted || m.State != detail.NodeStateSucceeded {
		t.Errorf("map detail %+v", m)
	}
	if pv := last.OutputPreview; pv.Availability != detail.PreviewAvailabilityAvailable || string(pv.Value) != `{"n":3}` {
		t.Errorf("preview %s %s", pv.Availability, pv.Value)
	}
}

// terminal_only and disabled publish one summary at the end and nothing
// else, locally as on Ray.
func TestLocalProgressSummaryOnly(t *testing.T) {
	t.Parallel()
	for _, pol := range []string{"terminal_only", "disabled"} {
		sink := &progress.Latest{}
		if _, err := sdk.Run(context.Background(), progressFlow, 2, sdk.WithProgress(sink),
			sdk.WithPlanOptions(sdk.WithReportingPolicy(sdk.ReportingPolicy(pol)))); err != nil {
			t.Fatal(err)
		}
		p, n := sink.Last()
		if n != 1 || !p.Final || p.Nodes != nil || string(p.Summary.ReportingPolicy) != pol || p.Summary.State != summary.StateSucceeded {
			t.Fatalf("%s: %d publications, last %+v", pol, n, p)
		}
	}
}

// FailStep always fails.
func FailStep(context.Context, int) (int, error) { return 0, errors.New("boom") }

// A failed local run publishes FAILED with the failed node.
func TestLocalProgressFailure(t *testing.T) {
	t.Parallel()
	sink := &progress.Latest{}
	if _, err := sdk.Run(context.Background(), sdk.Then(sdk.Step(Inc), sdk.Step(FailStep)), 1, sdk.WithProgress(sink)); err == nil {
		t.Fatal("the failing flow succeeded")
	}
	p, _ := sink.Last()
	if p.Summary.State != summary.StateFailed || p.Summary.NodeCounts.Failed != 1 || p.Details[1].Error == nil {
		t.Fatalf("summary %+v, details %+v", p.Summary, p.Details)
	}
}

// WaitForCancel returns when its context ends.
func WaitForCancel(ctx context.Context, n int) (int, error) {
	<-ctx.Done()
	return n, context.Cause(ctx)
}

// A sink that reports a stale fence cancels the run: Run returns an error
// wrapping progress.ErrStaleFence.
func TestStaleFenceCancelsTheRun(t *testing.T) {
	t.Parallel()
	sink := progress.SinkFunc(func(context.Context, *progress.Publication) error {
		return fmt.Errorf("task 1 is attempt 2 now: %w", progress.ErrStaleFence)
	})
	done := make(chan error, 1)
	go func() {
		_, err := sdk.Run(context.Background(), sdk.Step(WaitForCancel), 1, sdk.WithProgress(sink), sdk.WithProgressInterval(time.Millisecond))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, progress.ErrStaleFence) {
			t.Fatalf("want a stale fence error, got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after its fence went stale")
	}
}

// Without WithRunIdentity a run gets a fresh, valid identity, which the
// engine receives.
func TestFreshRunIdentity(t *testing.T) {
	t.Parallel()
	var a, b sdk.RunIdentity
	if _, err := sdk.Run(context.Background(), sdk.Step(Inc), 1, sdk.OnRunStart(func(x sdk.RunIdentity) { a = x })); err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.Run(context.Background(), sdk.Step(Inc), 1, sdk.OnRunStart(func(x sdk.RunIdentity) { b = x })); err != nil {
		t.Fatal(err)
	}
	if a.Validate() != nil || a.TaskExecutionPK != 1 || a.AttemptNumber != 1 || a.ExecutionGeneration != 0 || a.RunID == b.RunID {
		t.Fatalf("fresh identities %+v, %+v", a, b)
	}
}
