package reducer

import "github.com/rayflow/rayflow/gen/lifecycle"

// The vocabularies (session and invocation states, actions, commands,
// callbacks, outcomes, dispositions, output slot states, cleanup diagnostics
// and rejection codes), the protocol version and the bounds are the types
// and constants of package gen/lifecycle, generated from
// schema/lifecycle.cue. This file holds only what the schema does not: the
// union of commands and callbacks an Event carries, and the rules that
// relate the vocabularies to each other.

// MaxActionSequence is the largest value next_action_sequence can hold; a
// state whose next_action_sequence has reached it issues no further action
// (ACTION_SEQUENCE_EXHAUSTED), so the counter always fits the snapshot's
// int64.
const MaxActionSequence = 1<<63 - 1

// EventKind is the kind of an Event: a lifecycle.Command or a
// lifecycle.Callback (the two vocabularies share no value).
type EventKind string

// EventKinds lists every event kind: the commands, then the callbacks, each
// in schema order.
var EventKinds = func() []EventKind {
	ks := make([]EventKind, 0, len(lifecycle.CommandValues)+len(lifecycle.CallbackValues))
	for _, c := range lifecycle.CommandValues {
		ks = append(ks, EventKind(c))
	}
	for _, c := range lifecycle.CallbackValues {
		ks = append(ks, EventKind(c))
	}
	return ks
}()

// Valid reports whether k is a command or a callback.
func (k EventKind) Valid() bool { return k.IsCommand() || k.IsCallback() }

// IsCallback reports whether k answers a pending action (and so needs its token).
func (k EventKind) IsCallback() bool { return lifecycle.Callback(k).Valid() }

// IsCommand reports whether k is a command.
func (k EventKind) IsCommand() bool { return lifecycle.Command(k).Valid() }

// explicitTimeout reports whether k asserts that the action deadline passed.
func (k EventKind) explicitTimeout() bool {
	switch lifecycle.Callback(k) {
	case lifecycle.CallbackAdmissionTimedOut, lifecycle.CallbackSubmissionTimedOut,
		lifecycle.CallbackResultTimedOut, lifecycle.CallbackDeadlineExpired:
		return true
	}
	return false
}

// invocationActive reports whether an invocation is in flight (neither NONE
// nor TERMINAL).
func invocationActive(s lifecycle.InvocationState) bool {
	return s != lifecycle.InvocationStateNone && s != lifecycle.InvocationStateTerminal
}

// InvocationScoped reports whether action k carries the five-field
// invocation identity (ADMIT, SUBMIT, CONSUME_OUTPUT, RELEASE_CAPACITY,
// CANCEL, DRAIN_INVOCATION, CHECK_HEALTH); the others carry only the run
// identity.
func InvocationScoped(k lifecycle.Action) bool {
	switch k {
	case lifecycle.ActionAdmit, lifecycle.ActionSubmit, lifecycle.ActionConsumeOutput,
		lifecycle.ActionReleaseCapacity, lifecycle.ActionCancel, lifecycle.ActionDrainInvocation,
		lifecycle.ActionCheckHealth:
		return true
	}
	return false
}

// allowedCallbacks lists, per action, the callbacks that may answer it.
var allowedCallbacks = map[lifecycle.Action][]lifecycle.Callback{
	lifecycle.ActionValidate: {lifecycle.CallbackValidated, lifecycle.CallbackValidationRejected, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionPrepare:  {lifecycle.CallbackPrepared, lifecycle.CallbackPreparationFailed, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionAdmit: {lifecycle.CallbackAdmitted, lifecycle.CallbackCapacityRejected, lifecycle.CallbackAdmissionTimedOut,
		lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionSubmit: {lifecycle.CallbackSubmitted, lifecycle.CallbackSubmissionTimedOut, lifecycle.CallbackApplicationError,
		lifecycle.CallbackActorDied, lifecycle.CallbackChannelError, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionConsumeOutput: {lifecycle.CallbackOutputConsumed, lifecycle.CallbackResultTimedOut, lifecycle.CallbackApplicationError,
		lifecycle.CallbackActorDied, lifecycle.CallbackChannelError, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionReleaseCapacity: {lifecycle.CallbackCapacityReleased, lifecycle.CallbackCapacityReleaseFailed, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionCancel:          {lifecycle.CallbackCancelled, lifecycle.CallbackCancellationFailed, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionDrainInvocation: {lifecycle.CallbackDrained, lifecycle.CallbackDrainFailed, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionDrainSession:    {lifecycle.CallbackDrained, lifecycle.CallbackDrainFailed, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionCheckHealth:     {lifecycle.CallbackHealthy, lifecycle.CallbackUnhealthy, lifecycle.CallbackDeadlineExpired},
	lifecycle.ActionTeardown:        {lifecycle.CallbackTornDown, lifecycle.CallbackTeardownFailed, lifecycle.CallbackDeadlineExpired},
}

// Allows reports whether an event of kind e may answer an action of kind k:
// e is one of the callbacks docs/lifecycle.md#callbacks lists for k.
func Allows(k lifecycle.Action, e EventKind) bool {
	for _, c := range allowedCallbacks[k] {
		if EventKind(c) == e {
			return true
		}
	}
	return false
}

// outputTerminal reports whether a slot's accounting is finished.
func outputTerminal(o lifecycle.OutputState) bool {
	switch o {
	case lifecycle.OutputStateNotCreated, lifecycle.OutputStateConsumed, lifecycle.OutputStateAdapterReleased,
		lifecycle.OutputStateLostWithOwner, lifecycle.OutputStateCleanupUnconfirmed,
		lifecycle.OutputStateUnavailableAfterTeardown:
		return true
	}
	return false
}

// outputReuseSafe reports whether a slot permits graph reuse.
func outputReuseSafe(o lifecycle.OutputState) bool {
	return o == lifecycle.OutputStateNotCreated || o == lifecycle.OutputStateConsumed ||
		o == lifecycle.OutputStateAdapterReleased
}
