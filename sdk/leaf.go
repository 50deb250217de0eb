package sdk

import (
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk/flowgraph"
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
	sdkrt.PlanBindings = func(p any) *sdkrt.Bindings {
		if m, ok := p.(*Materialized); ok && m != nil {
			return m.bindings
		}
		return nil
	}
}
