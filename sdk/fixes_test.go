package sdk

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
)

func TestResolvableName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"example.com/app/steps.Resize":         true,
		"example.com/app/steps.globCount":      true,
		"example.com/app/steps.func1":          true,
		"main.Square":                          true,
		"example.com/app/steps.Resize.func1":   false,
		"example.com/app/steps.init.func2":     false,
		"example.com/app/steps.glob..func1":    false,
		"example.com/app/steps.(*T).Run-fm":    false,
		"example.com/app/steps.Map[...]":       false,
		"example.com/app/steps":                false,
		"example.com/app/steps.T.Method.func3": false,
	} {
		if got := resolvableName(name); got != want {
			t.Errorf("resolvableName(%q) = %v, want %v", name, got, want)
		}
	}
}

func PanickyReducer(_ context.Context, acc int, v int) (int, error) {
	if v == 9 { // the square of the third item
		panic("reducer exploded")
	}
	return acc + v, nil
}

func TestPanicsInReducersAndIteratorsFailTheRun(t *testing.T) {
	t.Parallel()
	fold := Reduce(Map(Step(PlanSquare)).WithLimits(Limits{MaxConcurrency: 2, MaxItems: 10}), PanickyReducer, 0,
		FoldOptions{MaxSerializedBytes: 64, Actor: ActorOptions{NumCPUs: 1, Memory: 64}})
	_, err := Run(context.Background(), Group(fold, fold), []int{1, 2, 3})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "reducer exploded" {
		t.Fatalf("reducer panic: %v", err)
	}
	bad := iter.Seq[int](func(yield func(int) bool) {
		yield(1)
		panic("iterator exploded")
	})
	_, err = Run(context.Background(), MapSeq(Step(PlanSquare)), bad)
	if !errors.As(err, &pe) || pe.Value != "iterator exploded" {
		t.Fatalf("iterator panic: %v", err)
	}
}

type recordingEngine struct {
	called bool
	spec   sdkrt.RunSpec
}

func (*recordingEngine) Name() string         { return "recording" }
func (*recordingEngine) Runs(s Strategy) bool { return s == StrategyLocal }
func (e *recordingEngine) Run(_ context.Context, spec sdkrt.RunSpec) (any, error) {
	e.called, e.spec = true, spec
	return 42, nil
}

func TestCustomEngineIsUsed(t *testing.T) {
	t.Parallel()
	e := &recordingEngine{}
	got, err := Run(context.Background(), Step(PlanSquare), 3, WithEngine(e))
	if err != nil || !e.called || got != 42 {
		t.Fatalf("engine called %v, result %v, %v", e.called, got, err)
	}
	if _, err := Run(context.Background(), Step(PlanSquare), 3, WithEngine(e), RequireRay()); !errors.Is(err, ErrRayRequired) {
		t.Fatalf("a non-Ray engine does not satisfy RequireRay: %v", err)
	}
}

type alwaysReporter struct{}

func (alwaysReporter) Report(float64, float64, string, map[string]any) bool { return true }

func ReportsProgress(ctx context.Context, v int) (bool, error) {
	return ReportProgress(ctx, 1, 2, "half", nil), nil
}

// A reporter in the caller's context never reaches the run's leaves: they
// report to the run's own progress only.
func TestLocalRunsIgnoreTheCallersReporter(t *testing.T) {
	t.Parallel()
	ctx := progress.WithReporter(context.Background(), alwaysReporter{})
	got, err := Run(ctx, Step(ReportsProgress), 1, WithPlanOptions(WithReportingPolicy("disabled")))
	if err != nil || got {
		t.Fatalf("ReportProgress in a local run under disabled = %v, %v", got, err)
	}
}

func TestZeroFlowIsADefinitionError(t *testing.T) {
	t.Parallel()
	var zero Flow[int, int]
	for name, f := range map[string]Flow[int, int]{
		"then":        Then(zero, Step(PlanSquare)),
		"named":       zero.Named("x"),
		"with limits": zero.WithLimits(Limits{MaxConcurrency: 1}),
	} {
		if _, err := Run(context.Background(), f, 1); !errors.Is(err, ErrInvalidDefinition) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var zeroMap Flow[[]int, []int]
	if _, err := Run(context.Background(), Reduce(zeroMap, PlanAdd, 0, FoldOptions{}), []int{1}); !errors.Is(err, ErrInvalidDefinition) {
		t.Errorf("reduce of a zero flow: %v", err)
	}
}
