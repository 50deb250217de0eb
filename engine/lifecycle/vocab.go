package lifecycle

import schema "github.com/rayflow/rayflow/gen/lifecycle"

// Protocol constants (docs/lifecycle.md).
const (
	// ProtocolVersion is COMPILED_GRAPH_LIFECYCLE_PROTOCOL_VERSION, the value
	// fingerprinted at strategy_requirements.compiled_graph.lifecycle_protocol_version.
	// It is defined below both this package and sdk (gen/lifecycle, from
	// schema/lifecycle.cue), so sdk binds it into plans without importing an
	// engine package.
	ProtocolVersion = schema.ProtocolVersion
	// SnapshotSchemaVersion is the version of the snapshot record.
	SnapshotSchemaVersion = 1
	// MaxOutputs bounds the declared outputs of one invocation.
	MaxOutputs = 64
	// MaxDiagnostics bounds the cleanup diagnostics kept in the state.
	MaxDiagnostics = 8
	// MaxSnapshotBytes bounds a snapshot measured as sorted, compact,
	// ASCII-escaped JSON (Python's json.dumps(v, sort_keys=True,
	// separators=(",", ":"))).
	MaxSnapshotBytes = 16384
	// MaxIdentifierRunes bounds run_id, invocation_id and action tokens.
	MaxIdentifierRunes = 128
	// MaxRejectionMessageRunes is where rejection messages are truncated.
	MaxRejectionMessageRunes = 256
	// MaxActionSequence is the largest value next_action_sequence can hold;
	// a state whose next_action_sequence has reached it issues no further
	// action (ACTION_SEQUENCE_EXHAUSTED), so the counter always fits the
	// snapshot's int64.
	MaxActionSequence = 1<<63 - 1
	// TokenPrefix starts every action token: cg-lifecycle-v1:<sequence>:<ACTION>.
	TokenPrefix = "cg-lifecycle-v1"
)

// SessionState is the state of the compiled-graph session.
type SessionState string

// Session states.
const (
	SessionNew         SessionState = "NEW"
	SessionValidating  SessionState = "VALIDATING"
	SessionValidated   SessionState = "VALIDATED"
	SessionPreparing   SessionState = "PREPARING"
	SessionReady       SessionState = "READY"
	SessionDraining    SessionState = "DRAINING"
	SessionQuarantined SessionState = "QUARANTINED"
	SessionRejected    SessionState = "REJECTED"
	SessionTornDown    SessionState = "TORN_DOWN"
)

// Valid reports whether s is one of the session states.
func (s SessionState) Valid() bool {
	switch s {
	case SessionNew, SessionValidating, SessionValidated, SessionPreparing, SessionReady,
		SessionDraining, SessionQuarantined, SessionRejected, SessionTornDown:
		return true
	}
	return false
}

// InvocationState is the state of the session's single invocation.
type InvocationState string

// Invocation states.
const (
	InvocationNone           InvocationState = "NONE"
	InvocationAdmitting      InvocationState = "ADMITTING"
	InvocationAdmitted       InvocationState = "ADMITTED"
	InvocationSubmitting     InvocationState = "SUBMITTING"
	InvocationRunning        InvocationState = "RUNNING"
	InvocationConsuming      InvocationState = "CONSUMING"
	InvocationCancelling     InvocationState = "CANCELLING"
	InvocationDraining       InvocationState = "DRAINING"
	InvocationCheckingHealth InvocationState = "CHECKING_HEALTH"
	InvocationTerminal       InvocationState = "TERMINAL"
)

// Valid reports whether s is one of the invocation states.
func (s InvocationState) Valid() bool {
	switch s {
	case InvocationNone, InvocationAdmitting, InvocationAdmitted, InvocationSubmitting,
		InvocationRunning, InvocationConsuming, InvocationCancelling, InvocationDraining,
		InvocationCheckingHealth, InvocationTerminal:
		return true
	}
	return false
}

// active reports whether an invocation is in flight (neither NONE nor TERMINAL).
func (s InvocationState) active() bool { return s != InvocationNone && s != InvocationTerminal }

// ActionKind names one of the eleven adapter actions.
type ActionKind string

// Adapter actions.
const (
	ActionValidate        ActionKind = "VALIDATE"
	ActionPrepare         ActionKind = "PREPARE"
	ActionAdmit           ActionKind = "ADMIT"
	ActionSubmit          ActionKind = "SUBMIT"
	ActionConsumeOutput   ActionKind = "CONSUME_OUTPUT"
	ActionReleaseCapacity ActionKind = "RELEASE_CAPACITY"
	ActionCancel          ActionKind = "CANCEL"
	ActionDrainInvocation ActionKind = "DRAIN_INVOCATION"
	ActionDrainSession    ActionKind = "DRAIN_SESSION"
	ActionCheckHealth     ActionKind = "CHECK_HEALTH"
	ActionTeardown        ActionKind = "TEARDOWN"
)

// ActionKinds lists the adapter actions in protocol order.
var ActionKinds = []ActionKind{
	ActionValidate, ActionPrepare, ActionAdmit, ActionSubmit, ActionConsumeOutput,
	ActionReleaseCapacity, ActionCancel, ActionDrainInvocation, ActionDrainSession,
	ActionCheckHealth, ActionTeardown,
}

// Valid reports whether k is one of the eleven actions.
func (k ActionKind) Valid() bool {
	_, ok := allowedCallbacks[k]
	return ok
}

// InvocationScoped reports whether the action carries the five-field
// invocation identity (ADMIT, SUBMIT, CONSUME_OUTPUT, RELEASE_CAPACITY,
// CANCEL, DRAIN_INVOCATION, CHECK_HEALTH); the others carry only the run
// identity.
func (k ActionKind) InvocationScoped() bool {
	switch k {
	case ActionAdmit, ActionSubmit, ActionConsumeOutput, ActionReleaseCapacity, ActionCancel,
		ActionDrainInvocation, ActionCheckHealth:
		return true
	}
	return false
}

// Allows reports whether callback kind e may answer an action of kind k.
func (k ActionKind) Allows(e EventKind) bool {
	return allowedCallbacks[k]&e.bit() != 0
}

// EventKind names a command or a callback.
type EventKind string

// Commands: issued by the controller, never carry an action token.
const (
	EventValidationRequested   EventKind = "VALIDATION_REQUESTED"
	EventPreparationRequested  EventKind = "PREPARATION_REQUESTED"
	EventAdmissionRequested    EventKind = "ADMISSION_REQUESTED"
	EventSubmissionRequested   EventKind = "SUBMISSION_REQUESTED"
	EventConsumptionRequested  EventKind = "CONSUMPTION_REQUESTED"
	EventCancellationRequested EventKind = "CANCELLATION_REQUESTED"
	EventDrainRequested        EventKind = "DRAIN_REQUESTED"
	EventTeardownRequested     EventKind = "TEARDOWN_REQUESTED"
	EventOwnerLost             EventKind = "OWNER_LOST"
	EventOuterDeadlineExpired  EventKind = "OUTER_DEADLINE_EXPIRED"
)

// Callbacks: answers to the pending action, carrying its token.
const (
	EventValidated             EventKind = "VALIDATED"
	EventValidationRejected    EventKind = "VALIDATION_REJECTED"
	EventPrepared              EventKind = "PREPARED"
	EventPreparationFailed     EventKind = "PREPARATION_FAILED"
	EventAdmitted              EventKind = "ADMITTED"
	EventCapacityRejected      EventKind = "CAPACITY_REJECTED"
	EventAdmissionTimedOut     EventKind = "ADMISSION_TIMED_OUT"
	EventSubmitted             EventKind = "SUBMITTED"
	EventSubmissionTimedOut    EventKind = "SUBMISSION_TIMED_OUT"
	EventOutputConsumed        EventKind = "OUTPUT_CONSUMED"
	EventResultTimedOut        EventKind = "RESULT_TIMED_OUT"
	EventApplicationError      EventKind = "APPLICATION_ERROR"
	EventActorDied             EventKind = "ACTOR_DIED"
	EventChannelError          EventKind = "CHANNEL_ERROR"
	EventCapacityReleased      EventKind = "CAPACITY_RELEASED"
	EventCapacityReleaseFailed EventKind = "CAPACITY_RELEASE_FAILED"
	EventCancelled             EventKind = "CANCELLED"
	EventCancellationFailed    EventKind = "CANCELLATION_FAILED"
	EventDrained               EventKind = "DRAINED"
	EventDrainFailed           EventKind = "DRAIN_FAILED"
	EventHealthy               EventKind = "HEALTHY"
	EventUnhealthy             EventKind = "UNHEALTHY"
	EventTornDown              EventKind = "TORN_DOWN"
	EventTeardownFailed        EventKind = "TEARDOWN_FAILED"
	EventDeadlineExpired       EventKind = "DEADLINE_EXPIRED"
)

// Commands lists the command kinds in protocol order.
var Commands = []EventKind{
	EventValidationRequested, EventPreparationRequested, EventAdmissionRequested,
	EventSubmissionRequested, EventConsumptionRequested, EventCancellationRequested,
	EventDrainRequested, EventTeardownRequested, EventOwnerLost, EventOuterDeadlineExpired,
}

// Callbacks lists the callback kinds in protocol order.
var Callbacks = []EventKind{
	EventValidated, EventValidationRejected, EventPrepared, EventPreparationFailed,
	EventAdmitted, EventCapacityRejected, EventAdmissionTimedOut, EventSubmitted,
	EventSubmissionTimedOut, EventOutputConsumed, EventResultTimedOut, EventApplicationError,
	EventActorDied, EventChannelError, EventCapacityReleased, EventCapacityReleaseFailed,
	EventCancelled, EventCancellationFailed, EventDrained, EventDrainFailed, EventHealthy,
	EventUnhealthy, EventTornDown, EventTeardownFailed, EventDeadlineExpired,
}

var eventBits = func() map[EventKind]uint64 {
	m := make(map[EventKind]uint64, len(Commands)+len(Callbacks))
	for i, k := range append(append([]EventKind{}, Commands...), Callbacks...) {
		m[k] = 1 << i
	}
	return m
}()

const callbackMask = ((1 << 25) - 1) << 10

func (k EventKind) bit() uint64 { return eventBits[k] }

// Valid reports whether k is a command or a callback.
func (k EventKind) Valid() bool { return k.bit() != 0 }

// IsCallback reports whether k answers a pending action (and so needs its token).
func (k EventKind) IsCallback() bool { return k.bit()&callbackMask != 0 }

// IsCommand reports whether k is a command.
func (k EventKind) IsCommand() bool { return k.Valid() && !k.IsCallback() }

// explicitTimeout reports whether k asserts that the action deadline passed.
func (k EventKind) explicitTimeout() bool {
	switch k {
	case EventAdmissionTimedOut, EventSubmissionTimedOut, EventResultTimedOut, EventDeadlineExpired:
		return true
	}
	return false
}

func bits(ks ...EventKind) uint64 {
	var b uint64
	for _, k := range ks {
		b |= k.bit()
	}
	return b
}

var allowedCallbacks = map[ActionKind]uint64{
	ActionValidate:        bits(EventValidated, EventValidationRejected, EventDeadlineExpired),
	ActionPrepare:         bits(EventPrepared, EventPreparationFailed, EventDeadlineExpired),
	ActionAdmit:           bits(EventAdmitted, EventCapacityRejected, EventAdmissionTimedOut, EventDeadlineExpired),
	ActionSubmit:          bits(EventSubmitted, EventSubmissionTimedOut, EventApplicationError, EventActorDied, EventChannelError, EventDeadlineExpired),
	ActionConsumeOutput:   bits(EventOutputConsumed, EventResultTimedOut, EventApplicationError, EventActorDied, EventChannelError, EventDeadlineExpired),
	ActionReleaseCapacity: bits(EventCapacityReleased, EventCapacityReleaseFailed, EventDeadlineExpired),
	ActionCancel:          bits(EventCancelled, EventCancellationFailed, EventDeadlineExpired),
	ActionDrainInvocation: bits(EventDrained, EventDrainFailed, EventDeadlineExpired),
	ActionDrainSession:    bits(EventDrained, EventDrainFailed, EventDeadlineExpired),
	ActionCheckHealth:     bits(EventHealthy, EventUnhealthy, EventDeadlineExpired),
	ActionTeardown:        bits(EventTornDown, EventTeardownFailed, EventDeadlineExpired),
}

// Outcome is the primary outcome of a session's invocation (or of the
// session, before any invocation).
type Outcome string

// Primary outcomes.
const (
	OutcomeSucceeded                Outcome = "SUCCEEDED"
	OutcomeValidationRejected       Outcome = "VALIDATION_REJECTED"
	OutcomePreparationFailed        Outcome = "PREPARATION_FAILED"
	OutcomeAdmissionTimeout         Outcome = "ADMISSION_TIMEOUT"
	OutcomeCapacityRejected         Outcome = "CAPACITY_REJECTED"
	OutcomeSubmitTimeout            Outcome = "SUBMIT_TIMEOUT"
	OutcomeGetTimeout               Outcome = "GET_TIMEOUT"
	OutcomeCancelledPreSubmission   Outcome = "CANCELLED_PRE_SUBMISSION"
	OutcomeCancelledAfterSubmission Outcome = "CANCELLED_AFTER_SUBMISSION"
	OutcomeApplicationError         Outcome = "APPLICATION_ERROR"
	OutcomeActorDied                Outcome = "ACTOR_DIED"
	OutcomeChannelError             Outcome = "CHANNEL_ERROR"
	OutcomeOwnerLost                Outcome = "OWNER_LOST"
	OutcomeOuterDeadline            Outcome = "OUTER_DEADLINE"
	OutcomeDrainFailure             Outcome = "DRAIN_FAILURE"
	OutcomeDrainTimeout             Outcome = "DRAIN_TIMEOUT"
	OutcomeTeardownFailure          Outcome = "TEARDOWN_FAILURE"
)

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeSucceeded, OutcomeValidationRejected, OutcomePreparationFailed,
		OutcomeAdmissionTimeout, OutcomeCapacityRejected, OutcomeSubmitTimeout, OutcomeGetTimeout,
		OutcomeCancelledPreSubmission, OutcomeCancelledAfterSubmission, OutcomeApplicationError,
		OutcomeActorDied, OutcomeChannelError, OutcomeOwnerLost, OutcomeOuterDeadline,
		OutcomeDrainFailure, OutcomeDrainTimeout, OutcomeTeardownFailure:
		return true
	}
	return false
}

// EffectState says whether application effects may have started.
type EffectState string

// Effect states.
const (
	EffectNotStarted     EffectState = "NOT_STARTED"
	EffectMayHaveStarted EffectState = "MAY_HAVE_STARTED"
)

// Valid reports whether e is one of the effect states.
func (e EffectState) Valid() bool { return e == EffectNotStarted || e == EffectMayHaveStarted }

// GraphDisposition says whether the prepared graph may take another invocation.
type GraphDisposition string

// Graph dispositions.
const (
	GraphUnprepared      GraphDisposition = "UNPREPARED"
	GraphPrepared        GraphDisposition = "PREPARED"
	GraphDrainRequired   GraphDisposition = "DRAIN_REQUIRED"
	GraphReusable        GraphDisposition = "REUSABLE"
	GraphRebuildRequired GraphDisposition = "REBUILD_REQUIRED"
	GraphTornDown        GraphDisposition = "TORN_DOWN"
)

// Valid reports whether g is one of the graph dispositions.
func (g GraphDisposition) Valid() bool {
	switch g {
	case GraphUnprepared, GraphPrepared, GraphDrainRequired, GraphReusable, GraphRebuildRequired, GraphTornDown:
		return true
	}
	return false
}

// RetryDisposition says how a later durable attempt may retry the invocation.
type RetryDisposition string

// Retry dispositions.
const (
	// RetryAutomaticAllowed: submission is proven not to have started.
	RetryAutomaticAllowed RetryDisposition = "AUTOMATIC_ALLOWED"
	// RetryApplicationPolicyRequired: effects may have started.
	RetryApplicationPolicyRequired RetryDisposition = "APPLICATION_POLICY_REQUIRED"
	// RetryOperatorReconciliationRequired: owner loss left the invocation indeterminate.
	RetryOperatorReconciliationRequired RetryDisposition = "OPERATOR_RECONCILIATION_REQUIRED"
	// RetryProhibited: success, a chosen cancellation or the outer deadline.
	RetryProhibited RetryDisposition = "PROHIBITED"
)

// Valid reports whether r is one of the retry dispositions.
func (r RetryDisposition) Valid() bool {
	switch r {
	case RetryAutomaticAllowed, RetryApplicationPolicyRequired, RetryOperatorReconciliationRequired, RetryProhibited:
		return true
	}
	return false
}

// OutputState is the one-shot ownership state of a declared output slot.
type OutputState string

// Output slot states.
const (
	OutputDeclared                 OutputState = "DECLARED"
	OutputNotCreated               OutputState = "NOT_CREATED"
	OutputAvailable                OutputState = "AVAILABLE"
	OutputConsuming                OutputState = "CONSUMING"
	OutputReleasePending           OutputState = "RELEASE_PENDING"
	OutputConsumed                 OutputState = "CONSUMED"
	OutputAdapterReleased          OutputState = "ADAPTER_RELEASED"
	OutputLostWithOwner            OutputState = "LOST_WITH_OWNER"
	OutputCleanupUnconfirmed       OutputState = "CLEANUP_UNCONFIRMED"
	OutputUnavailableAfterTeardown OutputState = "UNAVAILABLE_AFTER_TEARDOWN"
)

// Valid reports whether o is one of the output states.
func (o OutputState) Valid() bool {
	switch o {
	case OutputDeclared, OutputNotCreated, OutputAvailable, OutputConsuming, OutputReleasePending,
		OutputConsumed, OutputAdapterReleased, OutputLostWithOwner, OutputCleanupUnconfirmed,
		OutputUnavailableAfterTeardown:
		return true
	}
	return false
}

// Terminal reports whether the slot's accounting is finished.
func (o OutputState) Terminal() bool {
	switch o {
	case OutputNotCreated, OutputConsumed, OutputAdapterReleased, OutputLostWithOwner,
		OutputCleanupUnconfirmed, OutputUnavailableAfterTeardown:
		return true
	}
	return false
}

// ReuseSafe reports whether the slot permits graph reuse.
func (o OutputState) ReuseSafe() bool {
	return o == OutputNotCreated || o == OutputConsumed || o == OutputAdapterReleased
}

// Diagnostic is a cleanup diagnostic code; it never replaces the primary outcome.
type Diagnostic string

// Cleanup diagnostics.
const (
	DiagCapacityReleaseFailed  Diagnostic = "CAPACITY_RELEASE_FAILED"
	DiagCapacityReleaseTimeout Diagnostic = "CAPACITY_RELEASE_TIMEOUT"
	DiagCancellationFailed     Diagnostic = "CANCELLATION_FAILED"
	DiagCancellationTimeout    Diagnostic = "CANCELLATION_TIMEOUT"
	DiagDrainFailed            Diagnostic = "DRAIN_FAILED"
	DiagDrainTimeout           Diagnostic = "DRAIN_TIMEOUT"
	DiagHealthCheckFailed      Diagnostic = "HEALTH_CHECK_FAILED"
	DiagTeardownFailed         Diagnostic = "TEARDOWN_FAILED"
	DiagTeardownTimeout        Diagnostic = "TEARDOWN_TIMEOUT"
	DiagDiagnosticsTruncated   Diagnostic = "DIAGNOSTICS_TRUNCATED"
)

// Valid reports whether d is one of the diagnostic codes.
func (d Diagnostic) Valid() bool {
	switch d {
	case DiagCapacityReleaseFailed, DiagCapacityReleaseTimeout, DiagCancellationFailed,
		DiagCancellationTimeout, DiagDrainFailed, DiagDrainTimeout, DiagHealthCheckFailed,
		DiagTeardownFailed, DiagTeardownTimeout, DiagDiagnosticsTruncated:
		return true
	}
	return false
}
