package ray

import (
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/sdk"
)

// ErrBridgeClosed is matched by every *BridgeError.
var ErrBridgeClosed = errors.New("rayflow: ray bridge is gone")

// BridgeError reports that the bridge process ended or broke the protocol;
// every call in flight and every later call fails with it.
type BridgeError struct {
	Err error
	Log string // the tail of the bridge's stderr, if captured
}

func (e *BridgeError) Error() string {
	s := "rayflow: ray bridge: " + e.Err.Error()
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

func (e *BridgeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBridgeClosed) true.
func (e *BridgeError) Is(target error) bool { return target == ErrBridgeClosed }

// SetupError is a problem found before anything was submitted: Python
// without Ray, a Ray version mismatch, an unreachable cluster. Fix names
// the remedy.
type SetupError struct {
	Problem string
	Fix     string
}

func (e *SetupError) Error() string { return "rayflow: ray: " + e.Problem + "; " + e.Fix }

// LeafError is a leaf's error whose Go type is not registered with
// sdk.RegisterErrorType: its message and type name.
type LeafError struct {
	Type    string
	Message string
}

func (e *LeafError) Error() string { return e.Message }

// TaskError is a Ray-level failure of a node: a cancelled task, a crashed
// worker, a lost object or owner, or another Ray exception.
type TaskError struct {
	Node    string
	Kind    string // "cancelled", "worker_crashed", "owner_died", "object_lost", "ray", ...
	Type    string
	Message string
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("rayflow: ray task %s: %s: %s", e.Node, e.Kind, e.Message)
}

// errorInfo is how the bridge reports a failure.
type errorInfo struct {
	Kind     string `json:"kind"`
	Node     string `json:"node"`
	Callable string `json:"callable"`
	Type     string `json:"type"`
	Message  string `json:"message"`
	Panic    bool   `json:"panic"`
	Stack    string `json:"stack"`
	Typed    bool   `json:"typed"` // value is the codec's encoding of a registered type
}

// toError maps a failure to the error the local engine would return; node
// names the node whose result was awaited (used when the failure is not a
// leaf's own).
func (i *errorInfo) toError(codec sdk.Codec, node string, value []byte) error {
	if i.Kind == "leaf" {
		var err error
		switch {
		case i.Panic:
			err = &sdk.PanicError{Value: i.Message, Stack: i.Stack}
		case i.Typed:
			if e, ok := sdk.DecodeError(codec, i.Type, value); ok {
				err = e
			}
		}
		if err == nil {
			err = &LeafError{Type: i.Type, Message: i.Message}
		}
		return &sdk.StepError{Node: i.Node, Callable: i.Callable, Err: err}
	}
	if i.Kind == "bridge" {
		return &BridgeError{Err: fmt.Errorf("%s: %s", i.Type, i.Message)}
	}
	return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Message: i.Message}
}
