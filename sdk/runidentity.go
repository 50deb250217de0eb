package sdk

import (
	"context"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/sdkrt"
)

// RunIdentity is the identity of one run: the run identity record of the
// summary schema (gen/common), the one definition every progress event,
// summary and engine carries. Its fields are the durable task execution
// the run belongs to, its attempt, the execution generation that fences
// its writes and a fresh run id (a canonical lowercase hyphenated UUID),
// with the record's schema version (1; left at zero, Run sets it). The
// durable runtime makes one per attempt; Run makes a fresh one
// (NewRunIdentity) when none is given.
type RunIdentity = common.RunIdentity

// NewRunIdentity returns the identity of a run outside the durable runtime:
// task execution 1, attempt 1, generation 0 and a random (version 4) run id.
func NewRunIdentity() RunIdentity {
	return RunIdentity{SchemaVersion: 1, TaskExecutionPK: 1, AttemptNumber: 1, ExecutionGeneration: 0, RunID: sdkrt.NewRunID()}
}

// WithRunIdentity runs the flow under id (the durable runtime passes each
// attempt's identity). An invalid identity fails Run before any leaf runs
// with an error wrapping ErrInvalidRunIdentity.
func WithRunIdentity(id RunIdentity) RunOption {
	return func(c *runConfig) { c.identity = &id }
}

// AttemptFrom returns the identity of the run that a step's context
// belongs to: its durable task execution, attempt number (1 for the first
// attempt), execution generation and run id, as the durable runtime gave
// them (WithRunIdentity), else the run's own (NewRunIdentity). ok is false
// for a context outside a run. It holds on every runner: in process, in
// the job driver of the Ray Job runner, and in every leaf on Ray (steps,
// map items, batched or not, and a fold's reducer, under every reporting
// policy).
func AttemptFrom(ctx context.Context) (id RunIdentity, ok bool) {
	return sdkrt.IdentityFrom(ctx)
}
