package sdkrt

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/progress"
)

// RunSpec is one run as an engine receives it (the argument of
// sdk.Engine's Run): a run is (plan, input, identity, progress).
type RunSpec struct {
	// Plan is the materialized effective plan; the engine executes
	// Bindings' program under Selection's strategy.
	Plan *plan.Plan
	// Selection is the plan's strategy selection.
	Selection *plan.Selection
	// Bindings are the plan's runtime bindings (its compiled program).
	Bindings *Bindings
	// Input is the flow's input value.
	Input any
	// Identity is the run's identity (valid).
	Identity common.RunIdentity
	// Progress is the run's progress handle, under the plan's reporting
	// policy: the engine registers nothing itself (sdk already registered
	// the plan's graph), hands every leaf event to it (Ingest, or Producer
	// for in-process leaves) and reports map fan-out with Map. sdk
	// finishes it after the engine returns. Never nil.
	Progress *progress.Run
}

// Set by sdk at initialization: what a process that holds plans by name
// or as values, not typed flows, calls (the durable worker, a Ray job's
// coordinator, the rayflow command). sdkhost wraps them with sdk's types.
var (
	// RunPlan runs plan (an *sdk.Materialized) on input with opts (a
	// []sdk.RunOption) as sdk.Run does, returning the engine's raw result.
	RunPlan func(ctx context.Context, plan, input, opts any) (any, error)
	// MaterializeFlow materializes the flow registered under name with
	// opts (a []sdk.MaterializeOption), returning an *sdk.Materialized.
	MaterializeFlow func(name string, opts any) (any, error)
	// Flows lists the registered flow names, sorted.
	Flows func() []string
)

// ErrNotMaterialized is a RunPlan of something that is not a materialized
// plan (nil, or a Materialized that sdk did not make).
var ErrNotMaterialized = errors.New("rayflow: RunPlan: not a materialized plan")

// DecodeResult converts an engine's result (what RunPlan returns) to Out:
// a Go value as it is, a still encoded result (*EncodedResult, the Ray
// engine's) with the codec it was encoded with.
func DecodeResult[Out any](v any) (Out, error) {
	var out Out
	switch r := v.(type) {
	case nil:
		return out, nil
	case *EncodedResult:
		if err := r.Codec.Unmarshal(r.Bytes, &out); err != nil {
			return out, fmt.Errorf("rayflow: decoding the result (%T): %w", out, err)
		}
		return out, nil
	case Out:
		return r, nil
	}
	return out, fmt.Errorf("rayflow: internal type mismatch: have %T, step wants %T", v, out)
}

// ErrInvalidRunIdentity is wrapped by RunIdentity's errors (it is
// sdk.ErrInvalidRunIdentity).
var ErrInvalidRunIdentity = errors.New("rayflow: invalid run identity")

// RunIdentity returns id checked against the generated record's
// constraints (schema version 1, a positive task execution pk and attempt,
// a non-negative generation, a canonical lowercase UUID run id), with a
// schema version left at zero set to 1 (the only one), so that an identity
// written as a literal of its four fields is valid. Its error wraps
// ErrInvalidRunIdentity and the record's validation error.
func RunIdentity(id common.RunIdentity) (common.RunIdentity, error) {
	if id.SchemaVersion == 0 {
		id.SchemaVersion = 1
	}
	if err := id.Validate(); err != nil {
		return id, fmt.Errorf("%w: %w", ErrInvalidRunIdentity, err)
	}
	return id, nil
}

// NewRunID returns a random version-4 UUID in canonical lowercase form.
func NewRunID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// identityKey is the context key of a run's identity.
type identityKey struct{}

// WithIdentity returns ctx carrying the identity of the run its steps
// belong to (what sdk.AttemptFrom reads): sdk sets it for a run's engine,
// a Ray leaf process for the leaf it runs.
func WithIdentity(ctx context.Context, id common.RunIdentity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the run identity ctx carries (WithIdentity).
func IdentityFrom(ctx context.Context) (common.RunIdentity, bool) {
	id, ok := ctx.Value(identityKey{}).(common.RunIdentity)
	return id, ok
}
