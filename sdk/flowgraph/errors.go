package flowgraph

import (
	"context"
	"fmt"
	"strings"
)

// StepError wraps an error returned by application code with the node it
// came from. errors.Is and errors.As see the original error.
type StepError struct {
	Node     string // runtime node id, e.g. "0.1.m17"
	Callable string // Go symbol of the step
	Err      error
}

// Error is "rayflow: step <node> (<callable>): <the error>", with the
// error's own "rayflow: " prefix (a panic, a decoding failure) dropped so
// the message has one prefix.
func (e *StepError) Error() string {
	return fmt.Sprintf("rayflow: step %s (%s): %s", e.Node, e.Callable, strings.TrimPrefix(e.Err.Error(), "rayflow: "))
}

func (e *StepError) Unwrap() error { return e.Err }

// MaxItemsError reports a map input over its MaxItems limit. For a sized
// input it is returned before any leaf runs; for a sequence, when item
// MaxItems+1 is read.
type MaxItemsError struct {
	Node     string
	MaxItems int
	Items    int // the size of a sized input, or MaxItems+1 for a sequence
}

func (e *MaxItemsError) Error() string {
	return fmt.Sprintf("rayflow: map %s: %d items exceed max items %d", e.Node, e.Items, e.MaxItems)
}

// PanicError is a leaf that panicked; Stack is the goroutine's stack.
type PanicError struct {
	Value string
	Stack string
}

func (e *PanicError) Error() string { return "rayflow: leaf panicked: " + e.Value }

// CanceledError is a run stopped by its context: cancelled, or past its
// deadline. Every engine returns this shape within the cancel timeout of
// the cancellation, whatever its leaves do, and never blames one item for
// it. errors.Is(err, context.Canceled) or errors.Is(err,
// context.DeadlineExceeded) holds (the context's Err), and so does
// errors.Is for a cause given to context.WithCancelCause.
type CanceledError struct {
	// Err is the context's Err: context.Canceled or
	// context.DeadlineExceeded.
	Err error
	// Cause is context.Cause of the context (Err unless a cause was set).
	Cause error
}

func (e *CanceledError) Error() string {
	if e.Cause != nil && e.Cause != e.Err {
		return "rayflow: run stopped: " + e.Err.Error() + ": " + e.Cause.Error()
	}
	return "rayflow: run stopped: " + e.Err.Error()
}

// Unwrap returns the context's Err and its cause.
func (e *CanceledError) Unwrap() []error {
	if e.Cause != nil && e.Cause != e.Err {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// Canceled returns the *CanceledError of a context that is done (nil
// while it is not).
func Canceled(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	return &CanceledError{Err: err, Cause: context.Cause(ctx)}
}

// ValueError is a value that cannot cross a process boundary through the
// value codec: a non-finite float, or a func or channel behind an
// interface. The local engine passes every value through the codec (as Ray
// does), so it fails locally as it would on Ray, naming the node.
type ValueError struct {
	Node  string // the node whose value it is
	Value string // "input", "output", "bound value" or "accumulator"
	Type  string // the Go type the value was encoded as
	Err   error  // the codec's error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("rayflow: node %s: the %s (%s) cannot cross a process boundary: %v", e.Node, e.Value, e.Type, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }
