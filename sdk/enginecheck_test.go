package sdk

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
)

// fakeRay is a Ray-like engine: it records the plans it is given and runs
// nothing.
type fakeRay struct {
	ray   bool
	plans []sdkrt.RunSpec
}

func (e *fakeRay) Name() string {
	if e.ray {
		return "fake-ray"
	}
	return "fake-other"
}
func (e *fakeRay) Runs(s Strategy) bool {
	if e.ray {
		return s == StrategyDynamicTasks
	}
	return s == StrategyLocal
}
func (e *fakeRay) Run(_ context.Context, spec sdkrt.RunSpec) (any, error) {
	e.plans = append(e.plans, spec)
	return 7, nil
}

var mismatchLeafRuns atomic.Int64

func MismatchLeaf(_ context.Context, v int) (int, error) {
	mismatchLeafRuns.Add(1)
	return v + 1, nil
}

var mismatchFlow = Step(MismatchLeaf)

// TestPlanEngineMismatchIsRefused: a plan runs only where its selected
// strategy says; before, a plan materialized without ForRay given to a Ray
// engine with RequireRay ran in this process.
func TestPlanEngineMismatchIsRefused(t *testing.T) {
	localPlan, err := Materialize(mismatchFlow)
	if err != nil {
		t.Fatal(err)
	}
	rayPlan, err := Materialize(mismatchFlow, ForRay())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		engine      *fakeRay
		opts        []RunOption
		rayRequired bool // errors.Is(err, ErrRayRequired) too
	}{
		{"local plan, Ray engine, RequireRay", &fakeRay{ray: true}, []RunOption{WithPlan(localPlan), RequireRay()}, true},
		{"local plan, Ray engine", &fakeRay{ray: true}, []RunOption{WithPlan(localPlan)}, false},
		{"local strategy requested, Ray engine", &fakeRay{ray: true}, []RunOption{WithPlanOptions(WithStrategy(StrategyLocal))}, false},
		{"Ray plan, no engine", nil, []RunOption{WithPlan(rayPlan)}, true},
		{"Ray plan, non-Ray engine", &fakeRay{}, []RunOption{WithPlan(rayPlan)}, true},
		{"dynamic_tasks requested, no engine", nil, []RunOption{WithPlanOptions(WithStrategy(StrategyDynamicTasks))}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := mismatchLeafRuns.Load()
			opts := c.opts
			if c.engine != nil {
				opts = append(opts, WithEngine(c.engine))
			}
			out, err := Run(context.Background(), mismatchFlow, 1, opts...)
			var me *StrategyMismatchError
			if !errors.As(err, &me) || !errors.Is(err, ErrStrategyMismatch) {
				t.Fatalf("want a *StrategyMismatchError, got %v (result %v)", err, out)
			}
			if errors.Is(err, ErrRayRequired) != c.rayRequired {
				t.Errorf("errors.Is(err, ErrRayRequired) = %v, want %v: %v", !c.rayRequired, c.rayRequired, err)
			}
			if n := mismatchLeafRuns.Load() - before; n != 0 {
				t.Errorf("%d leaves ran before the mismatch was reported", n)
			}
			if c.engine != nil && len(c.engine.plans) != 0 {
				t.Errorf("the engine was given the plan")
			}
			t.Log(err)
		})
	}
	// What matches runs where it was selected for.
	e := &fakeRay{ray: true}
	if got, err := Run(context.Background(), mismatchFlow, 1, WithPlan(rayPlan), WithEngine(e), RequireRay()); err != nil || got != 7 || len(e.plans) != 1 || e.plans[0].Plan != rayPlan.Plan {
		t.Fatalf("Ray plan on a Ray engine: %v, %v (%d plans)", got, err, len(e.plans))
	}
	if got, err := Run(context.Background(), mismatchFlow, 1, WithEngine(e)); err != nil || got != 7 || e.plans[1].Selection.SelectedStrategy != string(StrategyDynamicTasks) {
		t.Fatalf("Run materializing for a Ray engine: %v, %v", got, err)
	}
	if got, err := Run(context.Background(), mismatchFlow, 1, WithPlan(localPlan)); err != nil || got != 2 {
		t.Fatalf("local plan in process: %v, %v", got, err)
	}
}

// TestEngineCapabilities: what an engine runs decides where a plan goes
// (Engine.Runs, no engine type switch), and a run without WithEngine
// reaches the built-in in-process engine through the same Engine
// interface.
func TestEngineCapabilities(t *testing.T) {
	var builtin Engine = inProcess{}
	for _, c := range []struct {
		engine Engine
		runs   []Strategy
		ray    bool
	}{
		{builtin, []Strategy{StrategyLocal}, false},
		{&fakeRay{ray: true}, []Strategy{StrategyDynamicTasks}, true},
		{&fakeRay{}, []Strategy{StrategyLocal}, false},
		{nil, nil, false},
	} {
		var runs []Strategy
		for _, s := range []Strategy{StrategyLocal, StrategyDynamicTasks, StrategyCompiledGraph, StrategyStaticActors} {
			if c.engine != nil && c.engine.Runs(s) {
				runs = append(runs, s)
			}
		}
		if !slices.Equal(runs, c.runs) || onRay(c.engine) != c.ray {
			t.Errorf("%T: runs %v (ray %v), want %v (ray %v)", c.engine, runs, onRay(c.engine), c.runs, c.ray)
		}
	}
	if got := builtin.Name(); got != "local" {
		t.Errorf("the built-in engine is %q, want local", got)
	}
}
