package ray

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/sdk"
)

// The sentinel errors of the Ray engine, for errors.Is.
var (
	// ErrBridgeClosed is matched by every *BridgeError.
	ErrBridgeClosed = errors.New("rayflow: ray bridge is gone")
	// ErrClusterLost is matched by a *BridgeError whose cluster is lost
	// (Lost).
	ErrClusterLost = errors.New("rayflow: ray: the cluster is lost")
	// ErrBuildMismatch is matched by a *TaskError of kind "leaf_start"
	// whose leaf binary is a different build than the one that made the
	// plan (Reason "digest_mismatch").
	ErrBuildMismatch = errors.New("rayflow: ray: the leaf binary is a different build than the plan's")
	// ErrClosed is returned by Run on a closed engine and matched by the
	// error of a run that Close ended.
	ErrClosed = errors.New("rayflow: ray: the engine is closed")
	// ErrNodeLost is matched by a *TaskError of kind "node_died": the
	// Ray node the task ran on died (its raylet is gone) and Ray did not
	// retry the task elsewhere.
	ErrNodeLost = errors.New("rayflow: ray: a node of the cluster was lost")
)

// BridgeError reports that the bridge process ended or broke the
// protocol, or (Lost) that the Ray cluster's head went away; every call in
// flight and every later call fails with it. errors.Is(err,
// ErrBridgeClosed) always holds, errors.Is(err, ErrClusterLost) when Lost.
//
// A lost cluster is its head (its GCS, or the raylet the bridge drives)
// gone: the coordinator dials both every second and declares the cluster
// lost after three failed checks (about 3 s), or at once when a run fails
// while they do not answer; it fails every run in flight and every later
// call with this error, and ends the bridge.
type BridgeError struct {
	Err error  // the cause: the bridge's end, or the last check's error
	Log string // the tail of the bridge's stderr, if captured
	// Lost is true when the cluster is lost; Address is then its GCS
	// address and For how long it had been unreachable (0: unknown).
	Lost    bool
	Address string
	For     time.Duration
}

func (e *BridgeError) Error() string {
	var s string
	if e.Lost {
		s = fmt.Sprintf("rayflow: ray: lost the cluster at %s", e.Address)
		if e.For > 0 {
			s += fmt.Sprintf(" (unreachable for %v)", e.For)
		}
		if e.Err != nil {
			s += ": " + strings.TrimPrefix(e.Err.Error(), "rayflow: ")
		}
	} else {
		s = "rayflow: ray bridge: " + e.Err.Error()
	}
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

func (e *BridgeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBridgeClosed) true, and errors.Is(err,
// ErrClusterLost) when the cluster is lost.
func (e *BridgeError) Is(target error) bool {
	return target == ErrBridgeClosed || e.Lost && target == ErrClusterLost
}

// SetupError is a problem found before anything was submitted: Python
// without Ray, a Ray version mismatch, an unreachable cluster. Fix names
// the remedy.
type SetupError struct {
	Problem string
	Fix     string
}

func (e *SetupError) Error() string { return "rayflow: ray: " + e.Problem + "; " + e.Fix }

// LeafError is a link of a leaf's error chain whose Go type is not
// registered with sdk.RegisterErrorType (nor a sentinel registered with
// sdk.RegisterSentinel): its message, its Go type name and the links it
// wrapped (Unwrap), so errors.Is and errors.As reach the registered errors
// below it. Error() is the original link's message.
type LeafError = errwire.Remote

// Kinds of a *TaskError that are not Ray's own task failures.
const (
	kindLeafStart  = "leaf_start"
	kindSubmit     = "submit"
	kindActorLimit = "actor_limit"
	kindNodeDied   = "node_died"
)

// TaskError is a Ray-level failure of a node (not its step's own error,
// which is a *sdk.StepError). Kind says which:
//
//   - Ray's task failures: "cancelled", "worker_crashed", "owner_died",
//     "object_lost", "timeout", "actor_protocol", "ray" (another Ray
//     exception, Type its Python type);
//   - "node_died": the Ray node the task ran on died (its raylet is gone:
//     a lost machine) and the task had no retry left; LostNode is that
//     node's Ray node ID (hex, empty when Ray did not name it).
//     errors.Is(err, ErrNodeLost) holds;
//   - "submit": Ray refused to create the node's task or actor (its
//     .options() or .remote() raised, typically on an option value only
//     Ray checks: a custom resource's precision, an accelerator's
//     supported quantities); Type is the Python exception's type. Nothing
//     ran; the run fails with it as it would with the node's own error;
//   - "leaf_start": a leaf process could not start or refused its
//     handshake. Reason is "start" (not a rayflow leaf binary),
//     "protocol" (another leaf protocol), "digest" or "digest_mismatch"
//     (a binary whose digest is not the plan's: errors.Is(err,
//     ErrBuildMismatch)); Want and Got are the plan's and the leaf
//     binary's digests (or protocol versions);
//   - "actor_limit": a result-buffer or fold actor (Actor) refused a
//     transition that would exceed one of its limits; the actor's state
//     was not changed. Type is what: "items" or "retained" (result
//     buffer), "initial", "item", "accumulator" or "state" (fold: the
//     accumulator plus the retained out-of-order items); Bytes, the
//     prospective encoded (codec) size, and Limit.
type TaskError struct {
	Node    string
	Kind    string
	Type    string
	Message string
	// Reason, Want and Got: kind "leaf_start".
	Reason, Want, Got string
	// Actor ("result buffer" or "fold"), Bytes and Limit: kind
	// "actor_limit".
	Actor        string
	Bytes, Limit int64
	// LostNode: kind "node_died".
	LostNode string
}

func (e *TaskError) Error() string {
	switch e.Kind {
	case kindLeafStart:
		return fmt.Sprintf("rayflow: ray: node %s: leaf process: %s", e.Node, e.Message)
	case kindSubmit:
		return fmt.Sprintf("rayflow: node %s: Ray refused the submission: %s: %s", e.Node, e.Type, e.Message)
	case kindActorLimit:
		return fmt.Sprintf("rayflow: map %s: %s", e.Node, e.Message)
	case kindNodeDied:
		return fmt.Sprintf("rayflow: ray task %s: node_died: lost Ray node %s: %s", e.Node, e.LostNode, e.Message)
	}
	return fmt.Sprintf("rayflow: ray task %s: %s: %s", e.Node, e.Kind, e.Message)
}

// Is makes errors.Is(err, ErrBuildMismatch) true for a leaf binary of
// another build, and errors.Is(err, ErrNodeLost) for a lost node.
func (e *TaskError) Is(target error) bool {
	switch target {
	case ErrBuildMismatch:
		return e.Kind == kindLeafStart && e.Reason == "digest_mismatch"
	case ErrNodeLost:
		return e.Kind == kindNodeDied
	}
	return false
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
	Typed    bool   `json:"typed"` // value is the codec's encoding of a registered type (leaf protocol 1)
	Chain    bool   `json:"chain"` // value is the error chain (internal/errwire)
	// A value the codec refused in the leaf (leaf protocol 3): which one
	// ("output") and its type; value is then the codec's error chain.
	Refused     string `json:"refused,omitempty"`
	RefusedType string `json:"refused_type,omitempty"`
	Reason      string `json:"reason"`             // leaf_start
	Want        string `json:"want"`               // leaf_start
	Got         string `json:"got"`                // leaf_start
	Bytes       int64  `json:"bytes"`              // actor_limit: the prospective size
	Limit       int64  `json:"limit"`              // actor_limit: the limit
	RayNode     string `json:"ray_node,omitempty"` // node_died: the lost node's Ray node ID
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
		case i.Chain:
			if e, derr := errwire.Unmarshal(codec, value); derr == nil {
				err = e
			}
		}
		if err == nil {
			err = &LeafError{Type: i.Type, Message: i.Message}
		}
		if i.Refused != "" {
			// As the local engine reports it: the node's value, not the step's error.
			return &sdk.ValueError{Node: i.Node, Value: i.Refused, Type: i.RefusedType, Err: err}
		}
		return &sdk.StepError{Node: i.Node, Callable: i.Callable, Err: err}
	}
	switch i.Kind {
	case kindLeafStart:
		return &TaskError{Node: i.Node, Kind: i.Kind, Reason: i.Reason, Want: i.Want, Got: i.Got, Message: i.Message}
	case kindActorLimit:
		return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Bytes: i.Bytes, Limit: i.Limit, Message: i.Message}
	case kindSubmit:
		return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Message: i.Message}
	case kindNodeDied:
		return &TaskError{Node: node, Kind: i.Kind, LostNode: i.RayNode, Message: i.Message}
	}
	if i.Kind == "bridge" {
		return &BridgeError{Err: fmt.Errorf("%s: %s", i.Type, i.Message)}
	}
	return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Message: i.Message}
}
