package sdk

import (
	"context"
	"errors"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// CanceledError is a run stopped by its context (cancelled, or past its
// deadline). Run returns it, on every engine, within the cancel timeout of
// the cancellation whatever the leaves do: the largest CancelTimeout of
// the maps running at that moment, or CancelTimeoutDefault for steps and
// groups outside any map. errors.Is(err, context.Canceled) or
// errors.Is(err, context.DeadlineExceeded) holds, as does errors.Is for a
// cause given to context.WithCancelCause. A cancelled run is never blamed
// on one item (it is not a *StepError), and Run never returns a nil error
// once the context is done.
//
// A local leaf still running when Run returns is abandoned, not awaited:
// its goroutine ends whenever the leaf returns, and its result is
// discarded. Leaves should watch ctx.Done() to stop early.
type CanceledError = flowgraph.CanceledError

// canceledShape gives an engine's error the shape of a cancelled run when
// ctx is done: a *CanceledError, whatever the engine returned (a bare
// context error, an item's error caused by the cancellation, or a result
// that came too late).
func canceledShape(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	var ce *CanceledError
	if errors.As(err, &ce) {
		return err
	}
	return flowgraph.Canceled(ctx)
}
