package lifecycle

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
			return s, nil, reject(CodeInvalidState, m)
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
		return s, nil, reject(CodeInvalidState, m)
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
		return reject(CodeInvalidEvent, "event kind is unsupported")
	}
	if ev.ProtocolVersion != ProtocolVersion {
		return reject(CodeInvalidEvent, "event lifecycle protocol version is unsupported")
	}
	if m := ev.Session.check(); m != "" {
		return reject(CodeInvalidIdentity, m)
	}
	if ev.Session != s.session {
		return reject(CodeStaleSessionIdentity, "event run identity does not own this session")
	}
	if !validTime(ev.ObservedAt) {
		return reject(CodeInvalidClock, "observed_at must be a finite non-negative absolute timestamp")
	}
	if s.hasObserved && ev.ObservedAt < s.observed {
		return reject(CodeClockRegression, "observed_at cannot move backwards")
	}
	inv := ev.Invocation
	if inv != nil {
		if m := inv.check(); m != "" {
			return reject(CodeInvalidIdentity, m)
		}
		if inv.RunIdentity != s.session {
			return reject(CodeStaleSessionIdentity, "invocation identity belongs to another workflow run")
		}
	}

	// Payload: only ADMISSION_REQUESTED declares outputs, only
	// CONSUMPTION_REQUESTED names an output, and only callbacks answering a
	// pending CONSUME_OUTPUT echo its index (rayflow decision 3, docs/lifecycle.md#rayflows-decisions).
	switch {
	case ev.Kind == EventAdmissionRequested:
		if ev.OutputIndex != nil {
			return reject(CodeActionPayloadMismatch, "admission does not carry an output index")
		}
	case ev.Kind == EventConsumptionRequested:
		if ev.DeclaredOutputs != nil {
			return reject(CodeActionPayloadMismatch, "consumption does not redeclare output cardinality")
		}
	case ev.Kind.IsCallback() && s.hasPending && s.pending.kind == ActionConsumeOutput:
		if ev.OutputIndex == nil || *ev.OutputIndex != s.pending.outputIndex || ev.DeclaredOutputs != nil {
			return reject(CodeActionPayloadMismatch, "callback output index does not match its one-shot action")
		}
	default:
		if ev.OutputIndex != nil || ev.DeclaredOutputs != nil {
			return reject(CodeActionPayloadMismatch, "event carries fields that do not belong to its operation")
		}
	}

	// Identity scope.
	switch ev.Kind {
	case EventValidationRequested, EventPreparationRequested, EventTeardownRequested:
		if inv != nil {
			return reject(CodeInvalidEvent, "session lifecycle commands use only the four-field run identity")
		}
	}
	pendingInvocation := s.hasPending && s.pending.kind.InvocationScoped()
	if s.hasPending && !pendingInvocation && inv != nil {
		return reject(CodeInvalidEvent, "session lifecycle callbacks use only the four-field run identity")
	}
	active := s.inv != nil && s.invState != InvocationTerminal
	needs := false
	switch ev.Kind {
	case EventAdmissionRequested, EventSubmissionRequested, EventConsumptionRequested,
		EventCancellationRequested, EventOwnerLost:
		needs = true
	case EventOuterDeadlineExpired:
		needs = active
	}
	if pendingInvocation {
		needs = true
	}
	if ev.Kind == EventDrainRequested {
		needs = active
		if !needs && inv != nil {
			return reject(CodeInvalidEvent, "idle session drain uses only the four-field run identity")
		}
	}
	if needs && inv == nil {
		return reject(CodeMissingInvocationID, "event requires the complete five-field invocation identity")
	}
	if pendingInvocation && (s.inv == nil || *inv != *s.inv) {
		return reject(CodeStaleInvocationIdentity, "callback invocation identity does not match its action")
	}
	if inv != nil && ev.Kind != EventAdmissionRequested && s.inv != nil && *inv != *s.inv {
		return reject(CodeStaleInvocationIdentity, "event invocation identity is stale")
	}
	return nil
}

func invalidTransition(s *State, ev *Event) *Rejection {
	return reject(CodeInvalidTransition, string(ev.Kind)+" is invalid for "+string(s.sess)+"/"+string(s.invState))
}

// command applies a command (docs/lifecycle.md#commands).
func (s *State) command(ev *Event) *Rejection {
	if ev.ActionToken != "" {
		return reject(CodeUnexpectedActionToken, "command events must not carry an action token")
	}
	switch ev.Kind {
	case EventOuterDeadlineExpired:
		return s.outerDeadline(ev)
	case EventCancellationRequested:
		return s.cancel(ev)
	case EventOwnerLost:
		return s.ownerLost(ev)
	}
	if s.hasPending {
		return reject(CodeActionInProgress, "another adapter action is still pending")
	}
	switch ev.Kind {
	case EventValidationRequested:
		if s.sess != SessionNew {
			return invalidTransition(s, ev)
		}
		s.sess = SessionValidating
		return s.issue(ActionValidate, -1, 0)
	case EventPreparationRequested:
		if s.sess != SessionValidated {
			return invalidTransition(s, ev)
		}
		// First irreversible cutoff: strategy fallback closes before the
		// adapter may allocate anything.
		s.sess = SessionPreparing
		s.fallback = false
		return s.issue(ActionPrepare, -1, 0)
	case EventAdmissionRequested:
		return s.admit(ev)
	case EventSubmissionRequested:
		if s.invState != InvocationAdmitted {
			return invalidTransition(s, ev)
		}
		// Second irreversible cutoff: no replay once submission is issued.
		s.invState = InvocationSubmitting
		s.effect = EffectMayHaveStarted
		s.setRetry(RetryApplicationPolicyRequired)
		return s.issue(ActionSubmit, -1, 0)
	case EventConsumptionRequested:
		if s.invState != InvocationRunning {
			return invalidTransition(s, ev)
		}
		i := ev.OutputIndex
		if i == nil || *i < 0 || *i >= s.nOut {
			return reject(CodeOutputIndexInvalid, "output_index does not identify a declared output")
		}
		if s.outputs[*i] != OutputAvailable {
			return reject(CodeOutputAlreadyClaimed, "a one-shot output may begin consumption only once")
		}
		s.outputs[*i] = OutputConsuming
		s.invState = InvocationConsuming
		return s.issue(ActionConsumeOutput, *i, 0)
	case EventDrainRequested:
		if s.sess != SessionReady {
			return invalidTransition(s, ev)
		}
		switch {
		case s.inv == nil:
			s.sess = SessionDraining
			return s.issue(ActionDrainSession, -1, 0)
		case s.invState == InvocationTerminal:
			s.sess = SessionDraining
			s.graph = GraphDrainRequired
			return s.issue(ActionDrainSession, -1, 0)
		}
		return s.beginInvocationDrain()
	case EventTeardownRequested:
		if s.sess != SessionReady && s.sess != SessionQuarantined {
			return invalidTransition(s, ev)
		}
		return s.beginTeardown()
	}
	return reject(CodeInvalidEvent, "event kind is unsupported")
}

func (s *State) admit(ev *Event) *Rejection {
	if s.sess != SessionReady ||
		(s.graph != GraphPrepared && s.graph != GraphReusable) ||
		(s.invState != InvocationNone && s.invState != InvocationTerminal) ||
		!s.outputsAll(OutputState.ReuseSafe) {
		return invalidTransition(s, ev)
	}
	if s.inv != nil && *s.inv == *ev.Invocation {
		return reject(CodeDuplicateInvocation, "the invocation identity has already been used by this session")
	}
	n := ev.DeclaredOutputs
	if n == nil || *n < 1 || *n > MaxOutputs {
		return reject(CodeOutputCardinalityInvalid, "declared_outputs must be between 1 and 64")
	}
	inv := *ev.Invocation
	s.inv = &inv
	s.invState = InvocationAdmitting
	s.effect = EffectNotStarted
	s.setRetry(RetryAutomaticAllowed)
	s.nOut = *n
	for i := range s.outputs {
		if i < *n {
			s.outputs[i] = OutputDeclared
		} else {
			s.outputs[i] = ""
		}
	}
	s.primary = ""
	s.clearDiagnostics()
	// rayflow decision 1, docs/lifecycle.md#rayflows-decisions: a REUSABLE graph takes the new
	// invocation and becomes PREPARED; REUSABLE describes a graph between
	// invocations.
	s.graph = GraphPrepared
	return s.issue(ActionAdmit, -1, *n)
}

func (s *State) cancel(ev *Event) *Rejection {
	if ev.ObservedAt >= s.deadlines.Outer {
		return s.outerDeadline(ev)
	}
	switch s.invState {
	case InvocationAdmitting, InvocationAdmitted:
		s.invState = InvocationCancelling
		s.primary = OutcomeCancelledPreSubmission
		s.setRetry(RetryProhibited)
		s.terminalizeOutputs(OutputNotCreated)
		s.hasPending = false // superseded, not completed: its callback is stale
		return s.issue(ActionReleaseCapacity, -1, 0)
	case InvocationSubmitting, InvocationRunning, InvocationConsuming:
		s.sess = SessionDraining
		s.invState = InvocationCancelling
		s.effect = EffectMayHaveStarted
		s.graph = GraphDrainRequired
		s.setRetry(RetryApplicationPolicyRequired)
		s.setPrimary(OutcomeCancelledAfterSubmission)
		s.hasPending = false
		return s.issue(ActionCancel, -1, 0)
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
	if s.inv == nil || !s.invState.active() {
		return invalidTransition(s, ev)
	}
	s.hasPending = false
	hadPrimary := s.primary != ""
	s.setPrimary(OutcomeOwnerLost)
	s.sess = SessionQuarantined
	s.invState = InvocationTerminal
	s.graph = GraphRebuildRequired
	if s.effect == EffectNotStarted {
		s.terminalizeOutputs(OutputNotCreated)
		if !hadPrimary {
			s.setRetry(RetryAutomaticAllowed)
		}
	} else {
		s.terminalizeOutputs(OutputLostWithOwner)
		s.setRetry(RetryOperatorReconciliationRequired)
	}
	return nil
}

func (s *State) outerDeadline(ev *Event) *Rejection {
	if s.sess == SessionRejected || s.sess == SessionTornDown {
		return invalidTransition(s, ev)
	}
	if ev.ObservedAt < s.deadlines.Outer {
		return reject(CodeDeadlineNotExpired, "the outer deadline has not expired")
	}
	if s.hasPending {
		return s.expire()
	}
	if s.inv == nil {
		switch s.sess {
		case SessionNew, SessionValidating, SessionValidated:
			s.sess = SessionRejected
			s.graph = GraphUnprepared
		default:
			s.sess = SessionQuarantined
			s.graph = GraphRebuildRequired
		}
		s.primary = OutcomeOuterDeadline
		s.fallback = false
		s.setRetry(RetryProhibited)
		return nil
	}
	switch s.invState {
	case InvocationAdmitting, InvocationAdmitted:
		s.invState = InvocationCancelling
		s.primary = OutcomeOuterDeadline
		s.setRetry(RetryProhibited)
		s.terminalizeOutputs(OutputNotCreated)
		return s.issue(ActionReleaseCapacity, -1, 0)
	case InvocationTerminal:
		s.sess = SessionQuarantined
		s.graph = GraphRebuildRequired
		s.setRetry(RetryProhibited)
		return nil
	}
	// SUBMITTING … CHECKING_HEALTH with nothing pending.
	s.setPrimary(OutcomeOuterDeadline)
	s.sess = SessionDraining
	s.graph = GraphRebuildRequired
	s.setRetry(RetryApplicationPolicyRequired)
	return s.beginInvocationDrain()
}

// callback applies an adapter callback (docs/lifecycle.md#callbacks).
func (s *State) callback(ev *Event) *Rejection {
	tok := ev.ActionToken
	if !s.hasPending || tok != s.pending.token {
		switch {
		case tok == "":
			return reject(CodeActionTokenRequired, "adapter callbacks require an action token")
		case s.completed(tok):
			return reject(CodeDuplicateAction, "the action callback was already applied")
		}
		return reject(CodeStaleActionToken, "the action token is not pending")
	}
	p := s.pending
	if !p.kind.Allows(ev.Kind) {
		return invalidTransition(s, ev)
	}
	if ev.Kind.explicitTimeout() && ev.ObservedAt < p.deadline {
		return reject(CodeDeadlineNotExpired, "the action deadline has not expired")
	}
	if ev.ObservedAt >= p.deadline {
		// Any callback at or after the action deadline is expiry, even a success.
		return s.expire()
	}
	s.complete()
	switch ev.Kind {
	case EventValidated:
		s.sess = SessionValidated
	case EventValidationRejected:
		s.sess = SessionRejected
		s.primary = OutcomeValidationRejected
	case EventPrepared:
		s.sess = SessionReady
		s.graph = GraphPrepared
	case EventPreparationFailed:
		s.primary = OutcomePreparationFailed
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case EventAdmitted:
		s.invState = InvocationAdmitted
	case EventCapacityRejected:
		s.sess = SessionReady
		s.invState = InvocationTerminal
		s.graph = GraphPrepared
		s.effect = EffectNotStarted
		s.setRetry(RetryAutomaticAllowed)
		s.terminalizeOutputs(OutputNotCreated)
		s.primary = OutcomeCapacityRejected
	case EventSubmitted:
		s.invState = InvocationRunning
		for i := range s.outputs[:s.nOut] {
			s.outputs[i] = OutputAvailable
		}
	case EventOutputConsumed:
		s.outputs[p.outputIndex] = OutputConsumed
		if !s.outputsAll(OutputState.Terminal) {
			s.invState = InvocationRunning
			return nil
		}
		s.setPrimary(OutcomeSucceeded)
		s.sess = SessionDraining
		s.invState = InvocationCheckingHealth
		s.setRetry(RetryProhibited)
		return s.issue(ActionCheckHealth, -1, 0)
	case EventApplicationError:
		if p.kind == ActionConsumeOutput {
			s.outputs[p.outputIndex] = OutputConsumed
		}
		s.setPrimary(OutcomeApplicationError)
		s.graph = GraphDrainRequired
		s.setRetry(RetryApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case EventActorDied, EventChannelError:
		s.setPrimary(Outcome(ev.Kind))
		s.graph = GraphRebuildRequired
		s.setRetry(RetryApplicationPolicyRequired)
		return s.beginTeardown()
	case EventCapacityReleased:
		s.sess = SessionReady
		s.invState = InvocationTerminal
		s.graph = GraphPrepared
	case EventCapacityReleaseFailed:
		s.addDiagnostic(DiagCapacityReleaseFailed)
		s.invState = InvocationTerminal
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case EventCancelled, EventCancellationFailed:
		if ev.Kind == EventCancellationFailed {
			s.addDiagnostic(DiagCancellationFailed)
		}
		return s.beginInvocationDrain()
	case EventDrained:
		if p.kind == ActionDrainSession {
			return s.beginTeardown()
		}
		s.terminalizeOutputs(OutputAdapterReleased)
		if s.graph == GraphRebuildRequired {
			return s.beginTeardown()
		}
		s.invState = InvocationCheckingHealth
		return s.issue(ActionCheckHealth, -1, 0)
	case EventDrainFailed:
		s.addDiagnostic(DiagDrainFailed)
		s.setPrimary(OutcomeDrainFailure)
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case EventHealthy:
		s.sess = SessionReady
		s.invState = InvocationTerminal
		s.graph = GraphReusable
	case EventUnhealthy:
		s.addDiagnostic(DiagHealthCheckFailed)
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case EventTornDown:
		s.sess = SessionTornDown
		s.finishInvocation()
		s.graph = GraphTornDown
		s.terminalizeOutputs(OutputUnavailableAfterTeardown)
	case EventTeardownFailed:
		s.addDiagnostic(DiagTeardownFailed)
		s.setPrimary(OutcomeTeardownFailure)
		s.sess = SessionQuarantined
		s.finishInvocation()
		s.graph = GraphRebuildRequired
		s.terminalizeOutputs(OutputCleanupUnconfirmed)
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
func (s *State) deadlineOutcome(k ActionKind) Outcome {
	if s.deadlines.Outer <= s.deadlines.stage(k) {
		return OutcomeOuterDeadline
	}
	switch k {
	case ActionAdmit:
		return OutcomeAdmissionTimeout
	case ActionSubmit:
		return OutcomeSubmitTimeout
	case ActionConsumeOutput:
		return OutcomeGetTimeout
	case ActionDrainInvocation, ActionDrainSession:
		return OutcomeDrainTimeout
	case ActionTeardown:
		return OutcomeTeardownFailure
	}
	return OutcomeOuterDeadline
}

// expire completes the pending action as expired (docs/lifecycle.md#action-expiry).
func (s *State) expire() *Rejection {
	p := s.pending
	s.complete()
	outcome := s.deadlineOutcome(p.kind)
	switch p.kind {
	case ActionValidate:
		s.sess = SessionRejected
		s.primary = outcome
	case ActionPrepare:
		s.primary = outcome
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case ActionAdmit:
		s.invState = InvocationCancelling
		s.graph = GraphPrepared
		s.effect = EffectNotStarted
		s.setRetry(RetryAutomaticAllowed)
		s.terminalizeOutputs(OutputNotCreated)
		s.primary = outcome
		return s.issue(ActionReleaseCapacity, -1, 0)
	case ActionSubmit:
		s.setPrimary(outcome)
		s.graph = GraphDrainRequired
		s.setRetry(RetryApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case ActionConsumeOutput:
		s.outputs[p.outputIndex] = OutputReleasePending
		s.setPrimary(outcome)
		s.graph = GraphRebuildRequired
		s.setRetry(RetryApplicationPolicyRequired)
		return s.beginInvocationDrain()
	case ActionReleaseCapacity:
		s.addDiagnostic(DiagCapacityReleaseTimeout)
		s.invState = InvocationTerminal
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case ActionCancel:
		s.addDiagnostic(DiagCancellationTimeout)
		return s.beginInvocationDrain()
	case ActionDrainInvocation, ActionDrainSession:
		s.addDiagnostic(DiagDrainTimeout)
		s.setPrimary(outcome)
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case ActionCheckHealth:
		s.addDiagnostic(DiagHealthCheckFailed)
		s.graph = GraphRebuildRequired
		return s.beginTeardown()
	case ActionTeardown:
		if outcome == OutcomeTeardownFailure || outcome == OutcomeOuterDeadline {
			s.addDiagnostic(DiagTeardownTimeout)
		} else {
			s.addDiagnostic(DiagTeardownFailed)
		}
		s.setPrimary(outcome)
		s.sess = SessionQuarantined
		s.finishInvocation()
		s.graph = GraphRebuildRequired
		s.terminalizeOutputs(OutputCleanupUnconfirmed)
	}
	return nil
}

// issue makes kind the pending action. An action whose deadline has
// already passed at the last observation is expired at once.
func (s *State) issue(kind ActionKind, outputIndex, declared int) *Rejection {
	if s.nextSeq >= MaxActionSequence {
		return reject(CodeActionSequenceExhausted, "the bounded action sequence is exhausted")
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
	s.sess = SessionDraining
	s.invState = InvocationDraining
	return s.issue(ActionDrainInvocation, -1, 0)
}

func (s *State) beginTeardown() *Rejection {
	s.sess = SessionDraining
	if s.inv != nil && s.invState != InvocationTerminal {
		s.invState = InvocationDraining
	}
	s.graph = GraphRebuildRequired
	return s.issue(ActionTeardown, -1, 0)
}

// finishInvocation ends the invocation at teardown: TERMINAL if one was
// ever admitted, else NONE.
func (s *State) finishInvocation() {
	if s.inv != nil {
		s.invState = InvocationTerminal
	} else {
		s.invState = InvocationNone
	}
}

func (s *State) setPrimary(o Outcome) {
	if s.primary == "" {
		s.primary = o
	}
}

// setRetry changes the retry disposition unless reconciliation is already
// required: that disposition is sticky (rayflow decision 4, docs/lifecycle.md#rayflows-decisions).
func (s *State) setRetry(r RetryDisposition) {
	if s.retry != RetryOperatorReconciliationRequired {
		s.retry = r
	}
}

func (s *State) terminalizeOutputs(to OutputState) {
	for i, o := range s.outputs[:s.nOut] {
		if !o.Terminal() {
			s.outputs[i] = to
		}
	}
}

// addDiagnostic keeps at most MaxDiagnostics distinct codes; when full,
// the last slot becomes DIAGNOSTICS_TRUNCATED.
func (s *State) addDiagnostic(d Diagnostic) {
	for _, x := range s.diags[:s.nDiag] {
		if x == d {
			return
		}
	}
	if s.nDiag < MaxDiagnostics {
		s.diags[s.nDiag] = d
		s.nDiag++
		return
	}
	s.diags[MaxDiagnostics-1] = DiagDiagnosticsTruncated
}

func (s *State) clearDiagnostics() {
	s.diags = [MaxDiagnostics]Diagnostic{}
	s.nDiag = 0
}
