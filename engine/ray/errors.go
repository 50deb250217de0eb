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
	Bytes    int64  `json:"bytes"` // actor_limit: the prospective size
	Limit    int64  `json:"limit"` // actor_limit: the limit
}

// ActorLimitError reports that a result-buffer or fold actor refused a
// transition that would exceed one of its limits; the actor's state was
// not changed and the run fails with this error. What is "items" or
// "retained" (result buffer), or "initial", "item", "accumulator" or
// "state" (fold: the accumulator plus the retained out-of-order items).
// Bytes are encoded (codec) bytes.
type ActorLimitError struct {
	Node    string
	Actor   string // "result buffer" or "fold"
	What    string
	Bytes   int64
	Limit   int64
	Message string
}

func (e *ActorLimitError) Error() string {
	return fmt.Sprintf("rayflow: map %s: %s", e.Node, e.Message)
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
	if i.Kind == "actor_limit" {
		return &ActorLimitError{Node: node, What: i.Type, Bytes: i.Bytes, Limit: i.Limit, Message: i.Message}
	}
	if i.Kind == "bridge" {
		return &BridgeError{Err: fmt.Errorf("%s: %s", i.Type, i.Message)}
	}
	return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Message: i.Message}
}
