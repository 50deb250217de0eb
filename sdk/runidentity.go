package sdk

import (
	"fmt"
	"regexp"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/sdkrt"
)

// RunIdentity is the 4-field identity of one run (the run identity of the
// summary schema): the durable task execution it belongs to, its attempt,
// the execution generation that fences its writes, and a fresh run id.
// Every progress event of the run carries it. The durable runtime makes one
// per attempt; sdk.Run makes a fresh one (NewRunIdentity) when none is given.
type RunIdentity struct {
	TaskExecutionPK     int64
	AttemptNumber       int64
	ExecutionGeneration int64
	// RunID is a canonical lowercase hyphenated UUID.
	RunID string
}

var runIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// NewRunIdentity returns the identity of a run outside the durable runtime:
// task execution 1, attempt 1, generation 0 and a random (version 4) run id.
func NewRunIdentity() RunIdentity {
	return RunIdentity{TaskExecutionPK: 1, AttemptNumber: 1, ExecutionGeneration: 0, RunID: sdkrt.NewRunID()}
}

// Validate checks the bounds of the summary schema's run identity: a
// positive task execution pk and attempt, a non-negative generation and a
// canonical lowercase UUID run id.
func (id RunIdentity) Validate() error {
	switch {
	case id.TaskExecutionPK < 1:
		return fmt.Errorf("%w: task_execution_pk %d < 1", ErrInvalidRunIdentity, id.TaskExecutionPK)
	case id.AttemptNumber < 1:
		return fmt.Errorf("%w: attempt_number %d < 1", ErrInvalidRunIdentity, id.AttemptNumber)
	case id.ExecutionGeneration < 0:
		return fmt.Errorf("%w: execution_generation %d < 0", ErrInvalidRunIdentity, id.ExecutionGeneration)
	case !runIDPattern.MatchString(id.RunID):
		return fmt.Errorf("%w: run_id %q is not a canonical lowercase UUID", ErrInvalidRunIdentity, id.RunID)
	}
	return nil
}

// WithRunIdentity runs the flow under id (the durable runtime passes each
// attempt's identity). An invalid identity fails Run before any leaf runs.
func WithRunIdentity(id RunIdentity) RunOption {
	return func(c *runConfig) { c.identity = &id }
}

// record is id as the summary schema's run_identity record.
func (id RunIdentity) record() common.RunIdentity {
	return common.RunIdentity{SchemaVersion: 1, TaskExecutionPK: id.TaskExecutionPK, AttemptNumber: id.AttemptNumber,
		ExecutionGeneration: id.ExecutionGeneration, RunID: id.RunID}
}
