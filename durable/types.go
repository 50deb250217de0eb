package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// State is a task's state (docs/durable.md).
type State string

// Task states.
const (
	StateQueued     State = "QUEUED"
	StateRunning    State = "RUNNING"
	StateCancelling State = "CANCELLING"
	StateCancelled  State = "CANCELLED"
	StateSucceeded  State = "SUCCEEDED"
	StateFailed     State = "FAILED"
	StateLost       State = "LOST"
	StateExpired    State = "EXPIRED"
)

// States lists every state.
var States = []State{StateQueued, StateRunning, StateCancelling, StateCancelled, StateSucceeded, StateFailed, StateLost, StateExpired}

// Terminal reports whether s is final unless retried.
func (s State) Terminal() bool {
	switch s {
	case StateCancelled, StateSucceeded, StateFailed, StateLost, StateExpired:
		return true
	}
	return false
}

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// RetryOutcome is the result of Client.Retry (request_task_retry).
type RetryOutcome string

// Retry outcomes.
const (
	RetryAccepted              RetryOutcome = "ACCEPTED"
	RetryNotRetryable          RetryOutcome = "NOT_RETRYABLE"
	RetryNotFound              RetryOutcome = "NOT_FOUND"
	RetryStaleAttempt          RetryOutcome = "STALE_ATTEMPT"
	RetryStaleGeneration       RetryOutcome = "STALE_GENERATION"
	RetryStaleWorkflowIdentity RetryOutcome = "STALE_WORKFLOW_IDENTITY"
)

// CancelOutcome is the result of Client.Cancel (request_task_cancellation).
type CancelOutcome string

// Cancel outcomes. CancelCompletionPending is part of the vocabulary but
// never returned: a result and its terminal state are one statement.
const (
	CancelAccepted          CancelOutcome = "ACCEPTED"
	CancelAlreadyRequested  CancelOutcome = "ALREADY_REQUESTED"
	CancelAlreadyTerminal   CancelOutcome = "ALREADY_TERMINAL"
	CancelCompletionPending CancelOutcome = "COMPLETION_PENDING"
	CancelNotFound          CancelOutcome = "NOT_FOUND"
	CancelStaleAttempt      CancelOutcome = "STALE_ATTEMPT"
	CancelStaleGeneration   CancelOutcome = "STALE_GENERATION"
	CancelInvalidState      CancelOutcome = "INVALID_STATE"
)

// Cancellation statuses recorded on the task row.
const (
	CancellationRequested     = "REQUESTED"
	CancellationFailed        = "FAILED"
	CancellationIndeterminate = "INDETERMINATE"
	CancellationNotApplicable = "NOT_APPLICABLE"
)

// Bounds (docs/durable.md); each is also a CHECK constraint of the schema.
const (
	MinPriority          = -100
	MaxPriority          = 100
	MaxInputBytes        = 1 << 20 // input JSON
	MaxResultBytes       = 1 << 20 // MAX_RESULT_SIZE_BYTES
	MaxAttemptsLimit     = 100
	MaxQueueNameLen      = 128
	MaxFlowNameLen       = 256
	MaxTimeoutSeconds    = 2147483647
	MaxErrorMessageBytes = 65536
	MaxUniqueKeyBytes    = 200 // EnqueueOptions.Unique.Key
	DefaultMaxAttempts   = 3
	DefaultQueue         = "default"
	DefaultQueueTimeout  = 86400 * time.Second
)

// Errors of the client. Enqueue refuses bad input with these (wrapped) and
// writes nothing.
var (
	ErrUnknownFlow   = errors.New("durable: unknown flow")
	ErrInvalidInput  = errors.New("durable: the input does not decode into the flow's input type")
	ErrInputTooLarge = errors.New("durable: the input is over 1 MiB")
	ErrInvalidOption = errors.New("durable: invalid option")
	ErrNotFound      = errors.New("durable: no such task")
	ErrBadCursor     = errors.New("durable: invalid list cursor")
	// ErrNotRepairable is returned by Repair for a task that is not
	// FAILED, CANCELLED or LOST (a *NotRepairableError says its state).
	ErrNotRepairable = errors.New("durable: only a FAILED, CANCELLED or LOST task can be repaired")
	// ErrUnserved refuses a flow that live workers publish, but none on
	// the task's queue (EnqueueOptions.AllowUnserved enqueues it anyway).
	ErrUnserved = errors.New("durable: no live worker serves the flow on this queue")
)

// ErrUniqueHeld refuses a retry of a task whose unique key another live
// task holds now (a *UniqueHeldError names both); nothing is written.
var ErrUniqueHeld = errors.New("durable: the task's unique key is held by another task")

// UniqueHeldError is Retry's refusal of a task whose unique key Holder
// (a task id; "" when it could not be read) holds; it matches
// ErrUniqueHeld.
type UniqueHeldError struct {
	TaskID string
	Key    string
	Holder string
}

func (e *UniqueHeldError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("%v: retry of task %s (unique key %q)", ErrUniqueHeld, e.TaskID, e.Key)
	}
	return fmt.Sprintf("%v: retry of task %s: unique key %q is held by task %s", ErrUniqueHeld, e.TaskID, e.Key, e.Holder)
}

// Is reports target == ErrUniqueHeld.
func (e *UniqueHeldError) Is(target error) bool { return target == ErrUniqueHeld }

// NotRepairableError is Repair's refusal of a task in another state; it
// matches ErrNotRepairable.
type NotRepairableError struct {
	TaskID string
	State  State
}

func (e *NotRepairableError) Error() string {
	return fmt.Sprintf("%v: task %s is %s", ErrNotRepairable, e.TaskID, e.State)
}

// Is reports target == ErrNotRepairable.
func (e *NotRepairableError) Is(target error) bool { return target == ErrNotRepairable }

// Errors recorded by workers (their text is the task's error message).
var (
	ErrResultTooLarge = errors.New("durable: the result is over 1 MiB")
	ErrTimedOut       = errors.New("durable: the task timed out")
	ErrPlanChanged    = errors.New("durable: the retry does not reproduce the pinned plan")
	ErrCancelled      = errors.New("durable: the task was cancelled")
	ErrJobUnknown     = errors.New("durable: the Ray job's status is unknown")
)

// Task is one row of rayflow_tasks (Attempts only from Client.Get).
type Task struct {
	PK                 int64           `json:"pk"`
	ID                 string          `json:"task_id"`
	Flow               string          `json:"flow"`
	Queue              string          `json:"queue"`
	Priority           int             `json:"priority"`
	State              State           `json:"state"`
	Attempt            int             `json:"attempt_number"`
	MaxAttempts        int             `json:"max_attempts"`
	Generation         int64           `json:"execution_generation"`
	RunID              string          `json:"workflow_run_id,omitempty"`
	PlanFingerprint    string          `json:"workflow_plan_fingerprint,omitempty"`
	PinnedAttempt      int             `json:"workflow_plan_pinned_attempt,omitempty"`
	Input              json.RawMessage `json:"input"`
	Result             json.RawMessage `json:"result,omitempty"`
	Runner             string          `json:"runner,omitempty"`
	RayAddress         string          `json:"ray_address,omitempty"`
	RayJobID           string          `json:"ray_job_id,omitempty"`
	CreatedAt          time.Time       `json:"created_at"`
	EnqueuedAt         time.Time       `json:"enqueued_at"`
	StartedAt          *time.Time      `json:"started_at,omitempty"`
	FinishedAt         *time.Time      `json:"finished_at,omitempty"`
	LastHeartbeatAt    *time.Time      `json:"last_heartbeat_at,omitempty"`
	RunAfter           time.Time       `json:"run_after"`
	TimeoutSeconds     int             `json:"timeout_seconds,omitempty"`
	QueueTimeout       int             `json:"queue_timeout_seconds,omitempty"`
	QueueDeadline      *time.Time      `json:"queue_deadline_at,omitempty"`
	ClaimedBy          string          `json:"claimed_by,omitempty"`
	CancellationStatus string          `json:"cancellation_status,omitempty"`
	CancellationError  string          `json:"cancellation_error,omitempty"`
	ErrorType          string          `json:"error_type,omitempty"`
	ErrorMessage       string          `json:"error_message,omitempty"`
	ErrorTraceback     string          `json:"error_traceback,omitempty"`
	Attempts           []Attempt       `json:"attempts,omitempty"`
	// RepairOf is the task id of the task this one repairs (Client.Repair).
	RepairOf string `json:"repair_of,omitempty"`
	// UniqueKey is the task's unique key (EnqueueOptions.Unique; "" for
	// none), UniqueGlobal whether it is unique across flows, UniqueUntil
	// the end of its hold for a period (nil: while not terminal) and
	// UniqueReleased whether an enqueue released it after that period.
	UniqueKey      string     `json:"unique_key,omitempty"`
	UniqueGlobal   bool       `json:"unique_global,omitempty"`
	UniqueUntil    *time.Time `json:"unique_until,omitempty"`
	UniqueReleased bool       `json:"unique_released,omitempty"`
	// ConcurrencyKey is the task's concurrency key (EnqueueOptions).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

// Attempt is one archived terminal attempt (rayflow_task_attempts).
type Attempt struct {
	Attempt         int             `json:"attempt_number"`
	Generation      int64           `json:"execution_generation"`
	RunID           string          `json:"workflow_run_id,omitempty"`
	State           State           `json:"state"`
	ClaimedBy       string          `json:"claimed_by,omitempty"`
	PlanFingerprint string          `json:"workflow_plan_fingerprint,omitempty"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	FinishedAt      time.Time       `json:"finished_at"`
	ErrorType       string          `json:"error_type,omitempty"`
	ErrorMessage    string          `json:"error_message,omitempty"`
	ErrorTraceback  string          `json:"error_traceback,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
}
