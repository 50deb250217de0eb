package ray

import (
	"context"

	"github.com/rayflow/rayflow/sdk"
)

// Run runs f on e and returns its typed result: sdk.Run(ctx, f, in,
// sdk.WithEngine(e), sdk.WithPlanOptions(opts...)). For a sink, a run
// identity or other run options, call sdk.Run with sdk.WithEngine(e).
func Run[In, Out any](ctx context.Context, e *Engine, f sdk.Flow[In, Out], in In, opts ...sdk.MaterializeOption) (Out, error) {
	// sdk.Run materializes for Ray, checks the plan against the engine and
	// gives a cancelled run the same *sdk.CanceledError as every engine.
	return sdk.Run(ctx, f, in, sdk.WithEngine(e), sdk.WithPlanOptions(opts...))
}
