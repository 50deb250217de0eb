package sdk

import (
	"fmt"
)

// StrategyMismatchError is a plan whose selected strategy the run's engine
// cannot honour: a plan materialized for "local" given to a Ray engine or
// to a run with RequireRay, or a "dynamic_tasks" plan without a Ray
// engine. Run returns it before any leaf runs; a plan is never quietly
// run somewhere other than where it was selected for. Materialize with
// ForRay (or let Run materialize) for a Ray engine.
type StrategyMismatchError struct {
	// Selected is the plan's selected strategy.
	Selected Strategy
	// Engine names the configured engine ("" when none: the built-in
	// local engine).
	Engine string
	// RequireRay is true when the run asked for Ray (RequireRay).
	RequireRay bool
}

func (e *StrategyMismatchError) Error() string {
	engine := e.Engine
	if engine == "" {
		engine = "the built-in local engine"
	} else {
		engine = "engine " + fmt.Sprintf("%q", engine)
	}
	switch {
	case e.Selected == StrategyLocal && e.RequireRay && e.Engine == "":
		return fmt.Sprintf("rayflow: the plan selected strategy %q but the run requires Ray (sdk.RequireRay)", e.Selected)
	case e.Selected == StrategyLocal:
		return fmt.Sprintf("rayflow: the plan selected strategy %q but the run uses Ray %s; materialize it with sdk.ForRay()", e.Selected, engine)
	}
	return fmt.Sprintf("rayflow: the plan selected strategy %q, which %s cannot run; pass a Ray engine with sdk.WithEngine", e.Selected, engine)
}

// Is makes errors.Is(err, ErrStrategyMismatch) true, and
// errors.Is(err, ErrRayRequired) when Ray was required or the plan needs
// Ray but no Ray engine is configured.
func (e *StrategyMismatchError) Is(target error) bool {
	switch target {
	case ErrStrategyMismatch:
		return true
	case ErrRayRequired:
		return e.RequireRay || e.Selected != StrategyLocal
	}
	return false
}

// checkEngine refuses a plan whose selected strategy the configured engine
// cannot honour (see StrategyMismatchError).
func checkEngine(m *Materialized, engine Engine, requireRay bool) error {
	selected := Strategy(m.Selection.SelectedStrategy)
	name := ""
	runs := inProcess{}.Runs(selected)
	if engine != nil {
		name, runs = engine.Name(), engine.Runs(selected)
	}
	if !runs || requireRay && !onRay(engine) {
		return &StrategyMismatchError{Selected: selected, Engine: name, RequireRay: requireRay}
	}
	return nil
}
