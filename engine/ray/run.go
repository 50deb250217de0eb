package ray

import (
	"context"

	"github.com/rayflow/rayflow/sdk"
)

// Run materializes f for Ray, runs it on e and decodes the result into
// Out. It is sdk.Run(ctx, f, in, sdk.WithEngine(e)) with the final value
// decoded from the codec's bytes (see sdk.DecodeResult).
func Run[In, Out any](ctx context.Context, e *Engine, f sdk.Flow[In, Out], in In, opts ...sdk.MaterializeOption) (Out, error) {
	var zero Out
	m, err := sdk.Materialize(f, append([]sdk.MaterializeOption{sdk.ForRay()}, opts...)...)
	if err != nil {
		return zero, err
	}
	out, err := e.Run(ctx, m, in)
	if err != nil {
		return zero, err
	}
	return sdk.DecodeResult[Out](out)
}
