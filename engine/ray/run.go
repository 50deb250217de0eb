package ray

import (
	"context"

	"github.com/rayflow/rayflow/sdk"
)

// Run materializes f for Ray, runs it on e and decodes the result into
// Out. It is sdk.Run(ctx, f, in, sdk.WithEngine(e)) with the final value
// decoded from the codec's bytes (see sdk.DecodeResult).
func Run[In, Out any](ctx context.Context, e *Engine, f sdk.Flow[In, Out], in In, opts ...sdk.MaterializeOption) (Out, error) {
	// sdk.Run materializes for Ray, checks the plan against the engine and
	// gives a cancelled run the same *sdk.CanceledError as every engine.
	return sdk.Run(ctx, f, in, sdk.WithEngine(e), sdk.WithPlanOptions(opts...))
}
