package reducer

import (
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/lifecycle"
)

// Check reports whether s satisfies every state invariant of docs/lifecycle.md#state-invariants
// (as amended by docs/lifecycle.md#rayflows-decisions). A state that fails it rejects every event with
// INVALID_STATE.
func (s State) Check() error {
	if m := s.invariantError(); m != "" {
		return reject(lifecycle.RejectionCodeInvalidState, m)
	}
	return nil
}

// allowedPending lists, per invocation state, the pending action kinds it
// admits ("" is none).
var allowedPending = map[lifecycle.InvocationState][]lifecycle.Action{
	lifecycle.InvocationStateNone:           {"", lifecycle.ActionValidate, lifecycle.ActionPrepare, lifecycle.ActionDrainSession, lifecycle.ActionTeardown},
	lifecycle.InvocationStateAdmitting:      {lifecycle.ActionAdmit},
	lifecycle.InvocationStateAdmitted:       {""},
	lifecycle.InvocationStateSubmitting:     {lifecycle.ActionSubmit},
	lifecycle.InvocationStateRunning:        {""},
	lifecycle.InvocationStateConsuming:      {lifecycle.ActionConsumeOutput},
	lifecycle.InvocationStateCancelling:     {lifecycle.ActionReleaseCapacity, lifecycle.ActionCancel},
	lifecycle.InvocationStateDraining:       {lifecycle.ActionDrainInvocation, lifecycle.ActionTeardown},
	lifecycle.InvocationStateCheckingHealth: {lifecycle.ActionCheckHealth},
	lifecycle.InvocationStateTerminal:       {"", lifecycle.ActionDrainSession, lifecycle.ActionTeardown},
}

// invariantError returns the first violated invariant, or "".
func (s *State) invariantError() string {
	// Structure: versions, identity, deadlines, capacity, vocabularies, bounds.
	switch {
	case s.protocol != lifecycle.ProtocolVersion:
		return "state protocol version is unsupported"
	case s.session.check() != "":
		return s.session.check()
	case s.deadlines.check() != "":
		return s.deadlines.check()
	case s.capacity != DefaultCapacity:
		return "lifecycle protocol v1 requires exact single-owner capacity 1/1/1/1/1/0"
	case !s.sess.Valid():
		return "session state is unsupported"
	case !s.invState.Valid():
		return "invocation state is unsupported"
	case !s.effect.Valid():
		return "effect state is unsupported"
	case !s.graph.Valid():
		return "graph disposition is unsupported"
	case !s.retry.Valid():
		return "retry disposition is unsupported"
	case s.primary != "" && !s.primary.Valid():
		return "primary outcome is unsupported"
	case s.nOut < 0 || s.nOut > lifecycle.MaxDeclaredOutputs:
		return "output cardinality exceeds the protocol bound"
	case !s.outputsAll(lifecycle.OutputState.Valid):
		return "output state is unsupported"
	case s.nDiag < 0 || s.nDiag > lifecycle.MaxCleanupDiagnostics:
		return "cleanup diagnostics exceed the protocol bound"
	case s.hasObserved && !validTime(s.observed):
		return "last observed timestamp is invalid"
	case s.nextSeq < 1 || s.nextSeq > MaxActionSequence:
		return "next action sequence is outside its bounded range"
	}
	for i, d := range s.diags[:s.nDiag] {
		if !d.Valid() {
			return "cleanup diagnostics contain an unsupported code"
		}
		if d == lifecycle.CleanupDiagnosticDiagnosticsTruncated && i != lifecycle.MaxCleanupDiagnostics-1 {
			return "DIAGNOSTICS_TRUNCATED may only fill the last of eight diagnostics"
		}
		for _, e := range s.diags[:i] {
			if e == d {
				return "cleanup diagnostics must be distinct"
			}
		}
	}
	if s.lastDone != "" && (!utf8.ValidString(s.lastDone) || utf8.RuneCountInString(s.lastDone) > lifecycle.MaxIdentifierRunes) {
		return "last completed action token is invalid"
	}

	// Invocation identity and output slots.
	if s.inv == nil {
		if s.invState != lifecycle.InvocationStateNone {
			return "invocation state requires an invocation identity"
		}
		if s.nOut != 0 {
			return "output slots require an invocation identity"
		}
	} else {
		if m := s.inv.check(); m != "" {
			return m
		}
		if s.inv.RunIdentity != s.session {
			return "invocation identity belongs to another session"
		}
		if s.invState == lifecycle.InvocationStateNone {
			return "invocation identity requires an invocation state"
		}
	}
	if s.graph == lifecycle.GraphDispositionReusable {
		if s.sess != lifecycle.SessionStateReady {
			return "a reusable graph must be ready"
		}
		if !s.outputsAll(outputReuseSafe) {
			return "a reusable graph requires reuse-safe output ownership"
		}
	}
	if s.outputsAny(lifecycle.OutputStateNotCreated) && s.effect != lifecycle.EffectStateNotStarted {
		return "NOT_CREATED is legal only before submission may have started"
	}
	if s.outputsAny(lifecycle.OutputStateUnavailableAfterTeardown) && s.graph != lifecycle.GraphDispositionTornDown {
		return "UNAVAILABLE_AFTER_TEARDOWN requires confirmed teardown"
	}
	if s.outputsAny(lifecycle.OutputStateLostWithOwner) &&
		((s.graph != lifecycle.GraphDispositionRebuildRequired && s.graph != lifecycle.GraphDispositionTornDown) || s.retry != lifecycle.RetryDispositionOperatorReconciliationRequired) {
		return "LOST_WITH_OWNER requires a rebuilt or torn-down graph and operator reconciliation"
	}
	switch s.sess {
	case lifecycle.SessionStatePreparing, lifecycle.SessionStateReady, lifecycle.SessionStateDraining, lifecycle.SessionStateQuarantined, lifecycle.SessionStateTornDown:
		if s.fallback {
			return "strategy fallback cannot reopen after preparation starts"
		}
	}
	if s.effect == lifecycle.EffectStateMayHaveStarted && s.retry == lifecycle.RetryDispositionAutomaticAllowed {
		return "automatic invocation retry is forbidden after submission starts"
	}
	if s.invState == lifecycle.InvocationStateTerminal && !s.outputsAll(outputTerminal) {
		return "terminal invocation phases require terminal output ownership"
	}
	if s.invState == lifecycle.InvocationStateCheckingHealth && !s.outputsAll(outputReuseSafe) {
		return "health classification requires reuse-safe output ownership"
	}

	// The pending action.
	var pk lifecycle.Action
	if s.hasPending {
		p := &s.pending
		pk = p.kind
		seq, tk, ok := ParseToken(p.token)
		switch {
		case !p.kind.Valid():
			return "pending action kind is unsupported"
		case !ok || tk != p.kind || seq != p.seq || utf8.RuneCountInString(p.token) > lifecycle.MaxIdentifierRunes:
			return "pending action token is invalid"
		case p.seq >= s.nextSeq:
			return "pending action sequence was never issued"
		case !validTime(p.deadline):
			return "pending action deadline is invalid"
		case InvocationScoped(p.kind) && s.inv == nil:
			return "pending invocation action has no invocation identity"
		case p.kind == lifecycle.ActionConsumeOutput && (p.outputIndex < 0 || p.outputIndex >= s.nOut):
			return "consume action output index is invalid"
		case p.kind != lifecycle.ActionConsumeOutput && p.outputIndex != -1:
			return "non-consume action carries an output index"
		case p.kind == lifecycle.ActionAdmit && p.declared != s.nOut:
			return "admit action cardinality does not match output slots"
		case p.kind != lifecycle.ActionAdmit && p.declared != 0:
			return "non-admit action carries output cardinality"
		case p.token == s.lastDone:
			return "pending and completed action tokens cannot match"
		case p.deadline > s.deadlines.Outer:
			return "pending action exceeds the outer deadline"
		case p.deadline != s.deadlines.ActionDeadline(p.kind):
			return "pending action deadline does not match its absolute phase budget"
		}
	}
	switch s.sess {
	case lifecycle.SessionStateValidating:
		if pk != lifecycle.ActionValidate {
			return "session phase does not match its pending action"
		}
	case lifecycle.SessionStatePreparing:
		if pk != lifecycle.ActionPrepare {
			return "session phase does not match its pending action"
		}
	case lifecycle.SessionStateNew, lifecycle.SessionStateValidated, lifecycle.SessionStateRejected, lifecycle.SessionStateQuarantined, lifecycle.SessionStateTornDown:
		if s.hasPending {
			return "terminal or idle session phase cannot retain an action"
		}
	case lifecycle.SessionStateDraining:
		if !s.hasPending {
			return "draining session requires a bounded pending action"
		}
	}
	switch s.sess {
	case lifecycle.SessionStateNew, lifecycle.SessionStateValidating, lifecycle.SessionStateValidated, lifecycle.SessionStatePreparing, lifecycle.SessionStateRejected:
		if s.graph != lifecycle.GraphDispositionUnprepared {
			return "unprepared session phase has an incompatible graph disposition"
		}
	case lifecycle.SessionStateReady:
		if s.graph != lifecycle.GraphDispositionPrepared && s.graph != lifecycle.GraphDispositionReusable {
			return "ready session has an incompatible graph disposition"
		}
	case lifecycle.SessionStateQuarantined:
		if s.graph != lifecycle.GraphDispositionRebuildRequired {
			return "quarantined session must require a graph rebuild"
		}
	case lifecycle.SessionStateTornDown:
		if s.graph != lifecycle.GraphDispositionTornDown {
			return "torn-down session must have a torn-down graph"
		}
	}
	for _, k := range allowedPending[s.invState] {
		if k == pk {
			return ""
		}
	}
	return "invocation phase does not match its pending action"
}
