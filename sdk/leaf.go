package sdk

import (
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk/flowgraph"

	"context"
)

// The engine side of sdk (internal/sdkrt): engines of this module look up
// registered leaves, reducers, previews and flows, run the bootstrap hook
// and reach a plan's runtime bindings through it, never through sdk's
// exported API.
func init() {
	sdkrt.LookupLeaf = lookupLeaf
	sdkrt.LookupReducer = lookupReducer
	sdkrt.LookupPreview = lookupPreview
	sdkrt.RunBootstrap = runBootstrap
	sdkrt.Validate = validateGraph
	sdkrt.LookupFlow = lookupFlow
	sdkrt.Graph = func(f any) *flowgraph.Node {
		if g, ok := f.(interface{ graph() *flowgraph.Node }); ok {
			return g.graph()
		}
		return nil
	}
	sdkrt.Flows = registeredFlows
	sdkrt.MaterializeFlow = func(name string, opts any) (any, error) {
		m, err := materializeRegistered(name, opts.([]MaterializeOption))
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	sdkrt.RunPlan = func(ctx context.Context, plan, input, opts any) (any, error) {
		m, _ := plan.(*Materialized)
		return runPlan(ctx, m, input, opts.([]RunOption))
	}
	sdkrt.PlanBindings = func(p any) *sdkrt.Bindings {
		if m, ok := p.(*Materialized); ok && m != nil {
			return m.bindings
		}
		return nil
	}
}
