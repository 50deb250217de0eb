package flowgraph

import (
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
