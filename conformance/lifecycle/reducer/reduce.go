package reducer

import "github.com/rayflow/rayflow/gen/lifecycle"

// Apply reduces one event. It returns the next state and the action to
// dispatch (nil when the transition issues none), or the unchanged
// receiver and a rejection. It never blocks, reads a clock or performs
// I/O.
//
// Checks run in the order of docs/lifecycle.md#validation-order: state invariants, event kind
// and protocol version, run identity, clock, invocation identity, payload,
// identity scope; then the command or callback rules of docs/lifecycle.md#commands, docs/lifecycle.md#callbacks, docs/lifecycle.md#action-expiry; finally
// the invariants of docs/lifecycle.md#state-invariants again on the result.
func (s State) Apply(ev Event) (State, *Action, *Rejection) {
	if !s.verified {
		if m := s.invariantError(); m != "" {
			return s, nil, reject(lifecycle.RejectionCodeInvalidState, m)
		}
	}
	if r := s.validate(&ev); r != nil {
		return s, nil, r
	}
	w := s
	w.observed, w.hasObserved = ev.ObservedAt, true
	var r *Rejection
	if ev.Kind.IsCallback() {
		r = w.callback(&ev)
	} else {
		r = w.command(&ev)
	}
	if r != nil {
		return s, nil, r
	}
	if m := w.invariantError(); m != "" {
		return s, nil, reject(lifecycle.RejectionCodeInvalidState, m)
	}
	w.verified = true
	if w.hasPending && (!s.hasPending || w.pending.seq != s.pending.seq) {
		a := w.action()
		return w, &a, nil
	}
	return w, nil, nil
}

// validate applies the event checks of docs/lifecycle.md#validation-order that precede the
// transition rules.
func (s *State) validate(ev *Event) *Rejection {
	if !ev.Kind.Valid() {
		return reject(lifecycle.RejectionCodeInvalidEvent, "event kind is unsupported")
	}
	if ev.ProtocolVersion != lifecycle.ProtocolVersion {
		return reject(lifecycle.RejectionCodeInvalidEvent, "event lifecycle protocol version is unsupported")
	}
	if m := ev.Session.check(); m != "" {
		return reject(lifecycle.RejectionCodeInvalidIdentity, m)
	}
	if ev.Session != s.session {
		return reject(lifecycle.RejectionCodeStaleSessionIdentity, "event run identity does not own this session")
	}
	if !validTime(ev.ObservedAt) {
		return reject(lifecycle.RejectionCodeInvalidClock, "observed_at must be a finite non-negative absolute timestamp")
	}
	if s.hasObserved && ev.ObservedAt < s.observed {
		return reject(lifecycle.RejectionCodeClockRegression, "observed_at cannot move backwards")
	}
	inv := ev.Invocation
	if inv != nil {
		if m := inv.check(); m != "" {
			return reject(lifecycle.RejectionCodeInvalidIdentity, m)
		}
		if inv.RunIdentity != s.session {
			return reject(lifecycle.RejectionCodeStaleSessionIdentity, "invocation identity belongs to another workflow run")
		}
	}

	// Payload: only ADMISSION_REQUESTED declares outputs, only
	// CONSUMPTION_REQUESTED names an output, and only callbacks answering a
	// pending CONSUME_OUTPUT echo its index (rayflow decision 3, docs/lifecycle.md#rayflows-decisions).
	switch {
	case ev.Kind == EventKind(lifecycle.CommandAdmissionRequested):
		if ev.OutputIndex != nil {
			return reject(lifecycle.RejectionCodeActionPayloadMismatch, "admission does not carry an output index")
		}
	case ev.Kind == EventKind(lifecycle.CommandConsumptionRequested):
		if ev.DeclaredOutputs != nil {
			return reject(lifecycle.RejectionCodeActionPayloadMismatch, "consumption does not redeclare output cardinality")
		}
	case ev.Kind.IsCallback() && s.hasPending && s.pending.kind == lifecycle.ActionConsumeOutput:
		if ev.OutputIndex == nil || *ev.OutputIndex != s.pending.outputIndex || ev.DeclaredOutputs != nil {
			return reject(lifecycle.RejectionCodeActionPayloadMismatch, "callback output index does not match its one-shot action")
		}
	default:
		if ev.OutputIndex != nil || ev.DeclaredOutputs != nil {
			return reject(lifecycle.RejectionCodeActionPayloadMismatch, "event carries fields that do not belong to its operation")
		}
	}

	// Identity scope.
	switch lifecycle.Command(ev.Kind) {
	case lifecycle.CommandValidationRequested, lifecycle.CommandPreparationRequested, lifecycle.CommandTeardownRequested:
		if inv != nil {
			return reject(lifecycle.RejectionCodeInvalidEvent, "session lifecycle commands use only the four-field run identity")
		}
	}
	pendingInvocation := s.hasPending && InvocationScoped(s.pending.kind)
	if s.hasPending && !pendingInvocation && inv != nil {
		return reject(lifecycle.RejectionCodeInvalidEvent, "session lifecycle callbacks use only the four-field run identity")
	}
	active := s.inv != nil && s.invState != lifecycle.InvocationStateTerminal
	needs := false
	switch lifecycle.Command(ev.Kind) {
	case lifecycle.CommandAdmissionRequested, lifecycle.CommandSubmissionRequested, lifecycle.CommandConsumptionRequested,
		lifecycle.CommandCancellationRequested, lifecycle.CommandOwnerLost:
		needs = true
	case lifecycle.CommandOuterDeadlineExpired:
		needs = active
	}
	if pendingInvocation {
		needs = true
	}
	if ev.Kind == EventKind(lifecycle.CommandDrainRequested) {
		needs = active
		if !needs && inv != nil {
			return reject(lifecycle.RejectionCodeInvalidEvent, "idle session drain uses only the four-field run identity")
		}
	}
	if needs && inv == nil {
		return reject(lifecycle.RejectionCodeMissingInvocationIdentity, "event requires the complete five-field invocation identity")
	}
	if pendingInvocation && (s.inv == nil || *inv != *s.inv) {
		return reject(lifecycle.RejectionCodeStaleInvocationIdentity, "callback invocation identity does not match its action")
	}
	if inv != nil && ev.Kind != EventKind(lifecycle.CommandAdmissionRequested) && s.inv != nil && *inv != *s.inv {
		return reject(lifecycle.RejectionCodeStaleInvocationIdentity, "event invocation identity is stale")
	}
	return nil
}

func invalidTransition(s *State, ev *Event) *Rejection {
	return reject(lifecycle.RejectionCodeInvalidTransition, string(ev.Kind)+" is invalid for "+string(s.sess)+"/"+string(s.invState))
}

// command applies a command (docs/lifecycle.md#commands).
func (s *State) command(ev *Event) *Rejection {
	if ev.ActionToken != "" {
		return reject(lifecycle.RejectionCodeUnexpectedActionToken, "command events must not carry an action token")
	}
	switch lifecycle.Command(ev.Kind) {
	case lifecycle.CommandOuterDeadlineExpired:
		return s.outerDeadline(ev)
	case lifecycle.CommandCancellationRequested:
		return s.cancel(ev)
	case lifecycle.CommandOwnerLost:
		return s.ownerLost(ev)
	}
	if s.hasPending {
		return reject(lifecycle.RejectionCodeActionInProgress, "another adapter action is still pending")
	}
	switch lifecycle.Command(ev.Kind) {
	case lifecycle.CommandValidationRequested:
		if s.sess != lifecycle.SessionStateNew {
			return invalidTransition(s, ev)
		}
		s.sess = lifecycle.SessionStateValidating
		return s.issue(lifecycle.ActionValidate, -1, 0)
	case lifecycle.CommandPreparationRequested:
		if s.sess != lifecycle.SessionStateValidated {
			return invalidTransition(s, ev)
		}
		// First irreversible cutoff: strategy fallback closes before the
		// adapter may allocate anything.
		s.sess = lifecycle.SessionStatePreparing
		s.fallback = false
		return s.issue(lifecycle.ActionPrepare, -1, 0)
	case lifecycle.CommandAdmissionRequested:
		return s.admit(ev)
	case lifecycle.CommandSubmissionRequested:
		if s.invState != lifecycle.InvocationStateAdmitted {
			return invalidTransition(s, ev)
		}
		// Second irreversible cutoff: no replay once submission is issued.
		s.invState = lifecycle.InvocationStateSubmitting
		s.effect = lifecycle.EffectStateMayHaveStarted
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		return s.issue(lifecycle.ActionSubmit, -1, 0)
	case lifecycle.CommandConsumptionRequested:
		if s.invState != lifecycle.InvocationStateRunning {
			return invalidTransition(s, ev)
		}
		i := ev.OutputIndex
		if i == nil || *i < 0 || *i >= s.nOut {
			return reject(lifecycle.RejectionCodeOutputIndexInvalid, "output_index does not identify a declared output")
		}
		if s.outputs[*i] != lifecycle.OutputStateAvailable {
			return reject(lifecycle.RejectionCodeOutputAlreadyClaimed, "a one-shot output may begin consumption only once")
		}
		s.outputs[*i] = lifecycle.OutputStateConsuming
		s.invState = lifecycle.InvocationStateConsuming
		return s.issue(lifecycle.ActionConsumeOutput, *i, 0)
	case lifecycle.CommandDrainRequested:
		if s.sess != lifecycle.SessionStateReady {
			return invalidTransition(s, ev)
		}
		switch {
		case s.inv == nil:
			s.sess = lifecycle.SessionStateDraining
			return s.issue(lifecycle.ActionDrainSession, -1, 0)
		case s.invState == lifecycle.InvocationStateTerminal:
			s.sess = lifecycle.SessionStateDraining
			s.graph = lifecycle.GraphDispositionDrainRequired
			return s.issue(lifecycle.ActionDrainSession, -1, 0)
		}
		return s.beginInvocationDrain()
	case lifecycle.CommandTeardownRequested:
		if s.sess != lifecycle.SessionStateReady && s.sess != lifecycle.SessionStateQuarantined {
			return invalidTransition(s, ev)
		}
		return s.beginTeardown()
	}
	return reject(lifecycle.RejectionCodeInvalidEvent, "event kind is unsupported")
}

func (s *State) admit(ev *Event) *Rejection {
	if s.sess != lifecycle.SessionStateReady ||
		(s.graph != lifecycle.GraphDispositionPrepared && s.graph != lifecycle.GraphDispositionReusable) ||
		(s.invState != lifecycle.InvocationStateNone && s.invState != lifecycle.InvocationStateTerminal) ||
		!s.outputsAll(outputReuseSafe) {
		return invalidTransition(s, ev)
	}
	if s.inv != nil && *s.inv == *ev.Invocation {
		return reject(lifecycle.RejectionCodeDuplicateInvocation, "the invocation identity has already been used by this session")
	}
	n := ev.DeclaredOutputs
	if n == nil || *n < 1 || *n > lifecycle.MaxDeclaredOutputs {
		return reject(lifecycle.RejectionCodeOutputCardinalityInvalid, "declared_outputs must be between 1 and 64")
	}
	inv := *ev.Invocation
	s.inv = &inv
	s.invState = lifecycle.InvocationStateAdmitting
	s.effect = lifecycle.EffectStateNotStarted
	s.setRetry(lifecycle.RetryDispositionAutomaticAllowed)
	s.nOut = *n
	for i := range s.outputs {
		if i < *n {
			s.outputs[i] = lifecycle.OutputStateDeclared
		} else {
			s.outputs[i] = ""
		}
	}
	s.primary = ""
	s.clearDiagnostics()
	// rayflow decision 1, docs/lifecycle.md#rayflows-decisions: a REUSABLE graph takes the new
	// invocation and becomes PREPARED; REUSABLE describes a graph between
	// invocations.
	s.graph = lifecycle.GraphDispositionPrepared
	return s.issue(lifecycle.ActionAdmit, -1, *n)
}

func (s *State) cancel(ev *Event) *Rejection {
	if ev.ObservedAt >= s.deadlines.Outer {
		return s.outerDeadline(ev)
	}
	switch s.invState {
	case lifecycle.InvocationStateAdmitting, lifecycle.InvocationStateAdmitted:
		s.invState = lifecycle.InvocationStateCancelling
		s.primary = lifecycle.OutcomeCancelledPreSubmission
		s.setRetry(lifecycle.RetryDispositionProhibited)
		s.terminalizeOutputs(lifecycle.OutputStateNotCreated)
		s.hasPending = false // superseded, not completed: its callback is stale
		return s.issue(lifecycle.ActionReleaseCapacity, -1, 0)
	case lifecycle.InvocationStateSubmitting, lifecycle.InvocationStateRunning, lifecycle.InvocationStateConsuming:
		s.sess = lifecycle.SessionStateDraining
		s.invState = lifecycle.InvocationStateCancelling
		s.effect = lifecycle.EffectStateMayHaveStarted
		s.graph = lifecycle.GraphDispositionDrainRequired
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		s.setPrimary(lifecycle.OutcomeCancelledAfterSubmission)
		s.hasPending = false
		return s.issue(lifecycle.ActionCancel, -1, 0)
	}
	return invalidTransition(s, ev)
}

// ownerLost applies OWNER_LOST as amended by rayflow decisions 2
// and 4 (docs/lifecycle.md#rayflows-decisions): classified at the
// submission cutoff by the effect state.
func (s *State) ownerLost(ev *Event) *Rejection {
	if ev.ObservedAt >= s.deadlines.Outer {
		return s.outerDeadline(ev)
	}
	if s.inv == nil || !invocationActive(s.invState) {
		return invalidTransition(s, ev)
	}
	s.hasPending = false
	hadPrimary := s.primary != ""
	s.setPrimary(lifecycle.OutcomeOwnerLost)
	s.sess = lifecycle.SessionStateQuarantined
	s.invState = lifecycle.InvocationStateTerminal
	s.graph = lifecycle.GraphDispositionRebuildRequired
	if s.effect == lifecycle.EffectStateNotStarted {
		s.terminalizeOutputs(lifecycle.OutputStateNotCreated)
		if !hadPrimary {
			s.setRetry(lifecycle.RetryDispositionAutomaticAllowed)
		}
	} else {
		s.terminalizeOutputs(lifecycle.OutputStateLostWithOwner)
		s.setRetry(lifecycle.RetryDispositionOperatorReconciliationRequired)
	}
	return nil
}

func (s *State) outerDeadline(ev *Event) *Rejection {
	if s.sess == lifecycle.SessionStateRejected || s.sess == lifecycle.SessionStateTornDown {
		return invalidTransition(s, ev)
	}
	if ev.ObservedAt < s.deadlines.Outer {
		return reject(lifecycle.RejectionCodeDeadlineNotExpired, "the outer deadline has not expired")
	}
	if s.hasPending {
		return s.expire()
	}
	if s.inv == nil {
		switch s.sess {
		case lifecycle.SessionStateNew, lifecycle.SessionStateValidating, lifecycle.SessionStateValidated:
			s.sess = lifecycle.SessionStateRejected
			s.graph = lifecycle.GraphDispositionUnprepared
		default:
			s.sess = lifecycle.SessionStateQuarantined
			s.graph = lifecycle.GraphDispositionRebuildRequired
		}
		s.primary = lifecycle.OutcomeOuterDeadline
		s.fallback = false
		s.setRetry(lifecycle.RetryDispositionProhibited)
		return nil
	}
	switch s.invState {
	case lifecycle.InvocationStateAdmitting, lifecycle.InvocationStateAdmitted:
		s.invState = lifecycle.InvocationStateCancelling
		s.primary = lifecycle.OutcomeOuterDeadline
		s.setRetry(lifecycle.RetryDispositionProhibited)
		s.terminalizeOutputs(lifecycle.OutputStateNotCreated)
		return s.issue(lifecycle.ActionReleaseCapacity, -1, 0)
	case lifecycle.InvocationStateTerminal:
		s.sess = lifecycle.SessionStateQuarantined
		s.graph = lifecycle.GraphDispositionRebuildRequired
		s.setRetry(lifecycle.RetryDispositionProhibited)
		return nil
	}
	// SUBMITTING … CHECKING_HEALTH with nothing pending.
	s.setPrimary(lifecycle.OutcomeOuterDeadline)
	s.sess = lifecycle.SessionStateDraining
	s.graph = lifecycle.GraphDispositionRebuildRequired
	s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
	return s.beginInvocationDrain()
}

// callback applies an adapter callback (docs/lifecycle.md#callbacks).
func (s *State) callback(ev *Event) *Rejection {
	tok := ev.ActionToken
	if !s.hasPending || tok != s.pending.token {
		switch {
		case tok == "":
			return reject(lifecycle.RejectionCodeActionTokenRequired, "adapter callbacks require an action token")
		case s.completed(tok):
			return reject(lifecycle.RejectionCodeDuplicateAction, "the action callback was already applied")
		}
		return reject(lifecycle.RejectionCodeStaleActionToken, "the action token is not pending")
	}
	p := s.pending
	if !Allows(p.kind, ev.Kind) {
		return invalidTransition(s, ev)
	}
	if ev.Kind.explicitTimeout() && ev.ObservedAt < p.deadline {
		return reject(lifecycle.RejectionCodeDeadlineNotExpired, "the action deadline has not expired")
	}
	if ev.ObservedAt >= p.deadline {
		// Any callback at or after the action deadline is expiry, even a success.
		return s.expire()
	}
	s.complete()
	switch lifecycle.Callback(ev.Kind) {
	case lifecycle.CallbackValidated:
		s.sess = lifecycle.SessionStateValidated
	case lifecycle.CallbackValidationRejected:
		s.sess = lifecycle.SessionStateRejected
		s.primary = lifecycle.OutcomeValidationRejected
	case lifecycle.CallbackPrepared:
		s.sess = lifecycle.SessionStateReady
		s.graph = lifecycle.GraphDispositionPrepared
	case lifecycle.CallbackPreparationFailed:
		s.primary = lifecycle.OutcomePreparationFailed
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.CallbackAdmitted:
		s.invState = lifecycle.InvocationStateAdmitted
	case lifecycle.CallbackCapacityRejected:
		s.sess = lifecycle.SessionStateReady
		s.invState = lifecycle.InvocationStateTerminal
		s.graph = lifecycle.GraphDispositionPrepared
		s.effect = lifecycle.EffectStateNotStarted
		s.setRetry(lifecycle.RetryDispositionAutomaticAllowed)
		s.terminalizeOutputs(lifecycle.OutputStateNotCreated)
		s.primary = lifecycle.OutcomeCapacityRejected
	case lifecycle.CallbackSubmitted:
		s.invState = lifecycle.InvocationStateRunning
		for i := range s.outputs[:s.nOut] {
			s.outputs[i] = lifecycle.OutputStateAvailable
		}
	case lifecycle.CallbackOutputConsumed:
		s.outputs[p.outputIndex] = lifecycle.OutputStateConsumed
		if !s.outputsAll(outputTerminal) {
			s.invState = lifecycle.InvocationStateRunning
			return nil
		}
		s.setPrimary(lifecycle.OutcomeSucceeded)
		s.sess = lifecycle.SessionStateDraining
		s.invState = lifecycle.InvocationStateCheckingHealth
		s.setRetry(lifecycle.RetryDispositionProhibited)
		return s.issue(lifecycle.ActionCheckHealth, -1, 0)
	case lifecycle.CallbackApplicationError:
		if p.kind == lifecycle.ActionConsumeOutput {
			s.outputs[p.outputIndex] = lifecycle.OutputStateConsumed
		}
		s.setPrimary(lifecycle.OutcomeApplicationError)
		s.graph = lifecycle.GraphDispositionDrainRequired
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case lifecycle.CallbackActorDied, lifecycle.CallbackChannelError:
		s.setPrimary(lifecycle.Outcome(ev.Kind))
		s.graph = lifecycle.GraphDispositionRebuildRequired
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		return s.beginTeardown()
	case lifecycle.CallbackCapacityReleased:
		s.sess = lifecycle.SessionStateReady
		s.invState = lifecycle.InvocationStateTerminal
		s.graph = lifecycle.GraphDispositionPrepared
	case lifecycle.CallbackCapacityReleaseFailed:
		s.addDiagnostic(lifecycle.CleanupDiagnosticCapacityReleaseFailed)
		s.invState = lifecycle.InvocationStateTerminal
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.CallbackCancelled, lifecycle.CallbackCancellationFailed:
		if ev.Kind == EventKind(lifecycle.CallbackCancellationFailed) {
			s.addDiagnostic(lifecycle.CleanupDiagnosticCancellationFailed)
		}
		return s.beginInvocationDrain()
	case lifecycle.CallbackDrained:
		if p.kind == lifecycle.ActionDrainSession {
			return s.beginTeardown()
		}
		s.terminalizeOutputs(lifecycle.OutputStateAdapterReleased)
		if s.graph == lifecycle.GraphDispositionRebuildRequired {
			return s.beginTeardown()
		}
		s.invState = lifecycle.InvocationStateCheckingHealth
		return s.issue(lifecycle.ActionCheckHealth, -1, 0)
	case lifecycle.CallbackDrainFailed:
		s.addDiagnostic(lifecycle.CleanupDiagnosticDrainFailed)
		s.setPrimary(lifecycle.OutcomeDrainFailure)
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.CallbackHealthy:
		s.sess = lifecycle.SessionStateReady
		s.invState = lifecycle.InvocationStateTerminal
		s.graph = lifecycle.GraphDispositionReusable
	case lifecycle.CallbackUnhealthy:
		s.addDiagnostic(lifecycle.CleanupDiagnosticHealthCheckFailed)
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.CallbackTornDown:
		s.sess = lifecycle.SessionStateTornDown
		s.finishInvocation()
		s.graph = lifecycle.GraphDispositionTornDown
		s.terminalizeOutputs(lifecycle.OutputStateUnavailableAfterTeardown)
	case lifecycle.CallbackTeardownFailed:
		s.addDiagnostic(lifecycle.CleanupDiagnosticTeardownFailed)
		s.setPrimary(lifecycle.OutcomeTeardownFailure)
		s.sess = lifecycle.SessionStateQuarantined
		s.finishInvocation()
		s.graph = lifecycle.GraphDispositionRebuildRequired
		s.terminalizeOutputs(lifecycle.OutputStateCleanupUnconfirmed)
	}
	return nil
}

// completed reports whether tok is the last completed action's token.
func (s *State) completed(tok string) bool {
	if s.lastDone != "" {
		return tok == s.lastDone
	}
	if s.lastDoneSeq == 0 {
		return false
	}
	seq, _, ok := ParseToken(tok)
	return ok && seq == s.lastDoneSeq
}

func (s *State) complete() {
	s.hasPending = false
	s.lastDone, s.lastDoneSeq = s.pending.token, s.pending.seq
}

// deadlineOutcome classifies the expiry of an action: the outer deadline
// wins ties.
func (s *State) deadlineOutcome(k lifecycle.Action) lifecycle.Outcome {
	if s.deadlines.Outer <= s.deadlines.stage(k) {
		return lifecycle.OutcomeOuterDeadline
	}
	switch k {
	case lifecycle.ActionAdmit:
		return lifecycle.OutcomeAdmissionTimeout
	case lifecycle.ActionSubmit:
		return lifecycle.OutcomeSubmitTimeout
	case lifecycle.ActionConsumeOutput:
		return lifecycle.OutcomeGetTimeout
	case lifecycle.ActionDrainInvocation, lifecycle.ActionDrainSession:
		return lifecycle.OutcomeDrainTimeout
	case lifecycle.ActionTeardown:
		return lifecycle.OutcomeTeardownFailure
	}
	return lifecycle.OutcomeOuterDeadline
}

// expire completes the pending action as expired (docs/lifecycle.md#action-expiry).
func (s *State) expire() *Rejection {
	p := s.pending
	s.complete()
	outcome := s.deadlineOutcome(p.kind)
	switch p.kind {
	case lifecycle.ActionValidate:
		s.sess = lifecycle.SessionStateRejected
		s.primary = outcome
	case lifecycle.ActionPrepare:
		s.primary = outcome
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.ActionAdmit:
		s.invState = lifecycle.InvocationStateCancelling
		s.graph = lifecycle.GraphDispositionPrepared
		s.effect = lifecycle.EffectStateNotStarted
		s.setRetry(lifecycle.RetryDispositionAutomaticAllowed)
		s.terminalizeOutputs(lifecycle.OutputStateNotCreated)
		s.primary = outcome
		return s.issue(lifecycle.ActionReleaseCapacity, -1, 0)
	case lifecycle.ActionSubmit:
		s.setPrimary(outcome)
		s.graph = lifecycle.GraphDispositionDrainRequired
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case lifecycle.ActionConsumeOutput:
		s.outputs[p.outputIndex] = lifecycle.OutputStateReleasePending
		s.setPrimary(outcome)
		s.graph = lifecycle.GraphDispositionRebuildRequired
		s.setRetry(lifecycle.RetryDispositionApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case lifecycle.ActionReleaseCapacity:
		s.addDiagnostic(lifecycle.CleanupDiagnosticCapacityReleaseTimeout)
		s.invState = lifecycle.InvocationStateTerminal
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.ActionCancel:
		s.addDiagnostic(lifecycle.CleanupDiagnosticCancellationTimeout)
		return s.beginInvocationDrain()
	case lifecycle.ActionDrainInvocation, lifecycle.ActionDrainSession:
		s.addDiagnostic(lifecycle.CleanupDiagnosticDrainTimeout)
		s.setPrimary(outcome)
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.ActionCheckHealth:
		s.addDiagnostic(lifecycle.CleanupDiagnosticHealthCheckFailed)
		s.graph = lifecycle.GraphDispositionRebuildRequired
		return s.beginTeardown()
	case lifecycle.ActionTeardown:
		if outcome == lifecycle.OutcomeTeardownFailure || outcome == lifecycle.OutcomeOuterDeadline {
			s.addDiagnostic(lifecycle.CleanupDiagnosticTeardownTimeout)
		} else {
			s.addDiagnostic(lifecycle.CleanupDiagnosticTeardownFailed)
		}
		s.setPrimary(outcome)
		s.sess = lifecycle.SessionStateQuarantined
		s.finishInvocation()
		s.graph = lifecycle.GraphDispositionRebuildRequired
		s.terminalizeOutputs(lifecycle.OutputStateCleanupUnconfirmed)
	}
	return nil
}

// issue makes kind the pending action. An action whose deadline has
// already passed at the last observation is expired at once.
func (s *State) issue(kind lifecycle.Action, outputIndex, declared int) *Rejection {
	if s.nextSeq >= MaxActionSequence {
		return reject(lifecycle.RejectionCodeActionSequenceExhausted, "the bounded action sequence is exhausted")
	}
	seq := s.nextSeq
	s.pending = pendingAction{
		token:       Token(seq, kind),
		seq:         seq,
		kind:        kind,
		deadline:    s.deadlines.ActionDeadline(kind),
		outputIndex: outputIndex,
		declared:    declared,
	}
	s.hasPending = true
	s.nextSeq++
	if s.hasObserved && s.observed >= s.pending.deadline {
		return s.expire()
	}
	return nil
}

func (s *State) beginInvocationDrain() *Rejection {
	s.sess = lifecycle.SessionStateDraining
	s.invState = lifecycle.InvocationStateDraining
	return s.issue(lifecycle.ActionDrainInvocation, -1, 0)
}

func (s *State) beginTeardown() *Rejection {
	s.sess = lifecycle.SessionStateDraining
	if s.inv != nil && s.invState != lifecycle.InvocationStateTerminal {
		s.invState = lifecycle.InvocationStateDraining
	}
	s.graph = lifecycle.GraphDispositionRebuildRequired
	return s.issue(lifecycle.ActionTeardown, -1, 0)
}

// finishInvocation ends the invocation at teardown: TERMINAL if one was
// ever admitted, else NONE.
func (s *State) finishInvocation() {
	if s.inv != nil {
		s.invState = lifecycle.InvocationStateTerminal
	} else {
		s.invState = lifecycle.InvocationStateNone
	}
}

func (s *State) setPrimary(o lifecycle.Outcome) {
	if s.primary == "" {
		s.primary = o
	}
}

// setRetry changes the retry disposition unless reconciliation is already
// required: that disposition is sticky (rayflow decision 4, docs/lifecycle.md#rayflows-decisions).
func (s *State) setRetry(r lifecycle.RetryDisposition) {
	if s.retry != lifecycle.RetryDispositionOperatorReconciliationRequired {
		s.retry = r
	}
}

func (s *State) terminalizeOutputs(to lifecycle.OutputState) {
	for i, o := range s.outputs[:s.nOut] {
		if !outputTerminal(o) {
			s.outputs[i] = to
		}
	}
}

// addDiagnostic keeps at most lifecycle.MaxCleanupDiagnostics distinct codes; when full,
// the last slot becomes DIAGNOSTICS_TRUNCATED.
func (s *State) addDiagnostic(d lifecycle.CleanupDiagnostic) {
	for _, x := range s.diags[:s.nDiag] {
		if x == d {
			return
		}
	}
	if s.nDiag < lifecycle.MaxCleanupDiagnostics {
		s.diags[s.nDiag] = d
		s.nDiag++
		return
	}
	s.diags[lifecycle.MaxCleanupDiagnostics-1] = lifecycle.CleanupDiagnosticDiagnosticsTruncated
}

func (s *State) clearDiagnostics() {
	s.diags = [lifecycle.MaxCleanupDiagnostics]lifecycle.CleanupDiagnostic{}
	s.nDiag = 0
}
