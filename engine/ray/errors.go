package ray

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rayflow/rayflow/internal/errwire"
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

// ErrClusterLost is matched by every *ClusterLostError.
var ErrClusterLost = errors.New("rayflow: ray: the cluster is lost")

// ClusterLostError reports that the Ray cluster's head (its GCS, or the
// raylet the bridge drives) went away: the coordinator dials both every
// second and declares the cluster lost after three failed checks (about
// 3 s), or at once when a run fails while they do not answer; it fails every run in flight and every later call with this
// error, and ends the bridge. errors.Is(err, ErrClusterLost) and
// errors.Is(err, ErrBridgeClosed) hold.
type ClusterLostError struct {
	Address string        // the GCS address
	For     time.Duration // how long the GCS had been unreachable
	Err     error         // the last check's error, or the bridge's end
	Log     string        // the tail of the bridge's stderr, if relevant
}

func (e *ClusterLostError) Error() string {
	s := fmt.Sprintf("rayflow: ray: lost the cluster at %s", e.Address)
	if e.For > 0 {
		s += fmt.Sprintf(" (unreachable for %v)", e.For)
	}
	if e.Err != nil {
		s += ": " + strings.TrimPrefix(e.Err.Error(), "rayflow: ")
	}
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

func (e *ClusterLostError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrClusterLost) and errors.Is(err,
// ErrBridgeClosed) true.
func (e *ClusterLostError) Is(target error) bool {
	return target == ErrClusterLost || target == ErrBridgeClosed
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

// ErrBuildMismatch is matched by a *LeafStartError whose leaf binary is a
// different build than the one that made the plan.
var ErrBuildMismatch = errors.New("rayflow: ray: the leaf binary is a different build than the plan's")

// LeafStartError reports that a leaf process could not start or refused
// its handshake: a binary that is not a rayflow leaf, a different leaf
// protocol, or (Reason "digest_mismatch", errors.Is(err,
// ErrBuildMismatch)) a binary whose digest is not the plan's. Want and Got
// are the plan's and the leaf binary's digests (or protocol versions).
type LeafStartError struct {
	Node    string
	Reason  string // "start", "protocol", "digest", "digest_mismatch"
	Want    string
	Got     string
	Message string
}

func (e *LeafStartError) Error() string {
	return fmt.Sprintf("rayflow: ray: node %s: leaf process: %s", e.Node, e.Message)
}

// Is makes errors.Is(err, ErrBuildMismatch) true for a digest mismatch.
func (e *LeafStartError) Is(target error) bool {
	return target == ErrBuildMismatch && e.Reason == "digest_mismatch"
}

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

// SubmitError reports that Ray refused to create a node's task or actor:
// its .options() or .remote() raised, typically on an option value only
// Ray checks (a custom resource's precision, an accelerator's supported
// quantities). Nothing ran; the run fails with it as it would with the
// node's own error.
type SubmitError struct {
	Node    string
	Type    string // the Python exception's type, such as "ValueError"
	Message string
}

func (e *SubmitError) Error() string {
	return fmt.Sprintf("rayflow: node %s: Ray refused the submission: %s: %s", e.Node, e.Type, e.Message)
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
	Reason      string `json:"reason"` // leaf_start
	Want        string `json:"want"`   // leaf_start
	Got         string `json:"got"`    // leaf_start
	Bytes       int64  `json:"bytes"`  // actor_limit: the prospective size
	Limit       int64  `json:"limit"`  // actor_limit: the limit
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
	if i.Kind == "leaf_start" {
		return &LeafStartError{Node: i.Node, Reason: i.Reason, Want: i.Want, Got: i.Got, Message: i.Message}
	}
	if i.Kind == "actor_limit" {
		return &ActorLimitError{Node: node, What: i.Type, Bytes: i.Bytes, Limit: i.Limit, Message: i.Message}
	}
	if i.Kind == "submit" {
		return &SubmitError{Node: node, Type: i.Type, Message: i.Message}
	}
	if i.Kind == "bridge" {
		return &BridgeError{Err: fmt.Errorf("%s: %s", i.Type, i.Message)}
	}
	return &TaskError{Node: node, Kind: i.Kind, Type: i.Type, Message: i.Message}
}
