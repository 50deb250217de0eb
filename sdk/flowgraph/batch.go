package flowgraph

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrNotRun is the error of a batched item that RunBatch did not run: an
// item after a failed one in its batch, or one reached once the context
// was done. The map has already failed or been cancelled by then, so no
// engine reports it as the map's error.
var ErrNotRun = errors.New("rayflow: batched item not run")

// Outcome is one item's outcome in a batch.
type Outcome[T any] struct {
	// Value is the item's result (the zero value unless Err is nil).
	Value T
	// Err is the item's own error, exactly as an unbatched call returns
	// it, or, for an item not run, an error wrapping ErrNotRun (and the
	// context's cause when the context was done).
	Err error
	// Ran is false for an item that was not run.
	Ran bool
}

// RunBatch runs one batch of a map: call(ctx, i) for i = 0 … n-1, one at
// a time, in input order, on the calling goroutine, turning a panic into a
// *PanicError. Once an item fails, or when ctx is done before an item
// starts, the remaining items are not run (Ran false, Err wrapping
// ErrNotRun). each, when not nil, is called for every i in order as soon
// as its outcome is known, so an engine can count progress per item.
// RunBatch returns the n outcomes.
//
// Every engine runs a batch with it (the local engine on Go values, a Ray
// leaf process on encoded values), so a batch stops at the same item on
// each of them. The caller turns an item's error into the error an
// unbatched run of that item gives, naming the item (ItemID).
func RunBatch[T any](ctx context.Context, n int, call func(ctx context.Context, i int) (T, error), each func(i int, o Outcome[T])) []Outcome[T] {
	outs := make([]Outcome[T], n)
	var stop error
	for i := range outs {
		o := &outs[i]
		if stop == nil && ctx.Err() != nil {
			stop = fmt.Errorf("%w: %w", ErrNotRun, context.Cause(ctx))
		}
		if stop != nil {
			o.Err = stop
		} else {
			o.Ran = true
			o.Value, o.Err = protectBatchItem(ctx, i, call)
			if o.Err != nil {
				var zero T
				o.Value = zero
				stop = fmt.Errorf("%w: item %d of its batch failed", ErrNotRun, i)
			}
		}
		if each != nil {
			each(i, *o)
		}
	}
	return outs
}

func protectBatchItem[T any](ctx context.Context, i int, call func(ctx context.Context, i int) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, &PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	return call(ctx, i)
}
