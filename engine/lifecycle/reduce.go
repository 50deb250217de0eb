package lifecycle

// Apply reduces one event. It returns the next state and the action to
// dispatch (nil when the transition issues none), or the unchanged
// receiver and a rejection. It never blocks, reads a clock or performs
// I/O.
//
// Checks run in the order of CONTRACTS §4.3: state invariants, event kind
// and protocol version, run identity, clock, invocation identity, payload,
// identity scope; then the command or callback rules of §4.4–§4.6; finally
// the invariants of §4.7 again on the result.
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

// validate applies the event checks of CONTRACTS §4.3 that precede the
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
	// pending CONSUME_OUTPUT echo its index (rayflow decision §4.9 item 3).
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

// command applies a command (CONTRACTS §4.4).
func (w *State) command(ev *Event) *Rejection {
	if ev.ActionToken != "" {
		return reject(CodeUnexpectedActionToken, "command events must not carry an action token")
	}
	switch ev.Kind {
	case EventOuterDeadlineExpired:
		return w.outerDeadline(ev)
	case EventCancellationRequested:
		return w.cancel(ev)
	case EventOwnerLost:
		return w.ownerLost(ev)
	}
	if w.hasPending {
		return reject(CodeActionInProgress, "another adapter action is still pending")
	}
	switch ev.Kind {
	case EventValidationRequested:
		if w.sess != SessionNew {
			return invalidTransition(w, ev)
		}
		w.sess = SessionValidating
		return w.issue(ActionValidate, -1, 0)
	case EventPreparationRequested:
		if w.sess != SessionValidated {
			return invalidTransition(w, ev)
		}
		// First irreversible cutoff: strategy fallback closes before the
		// adapter may allocate anything.
		w.sess = SessionPreparing
		w.fallback = false
		return w.issue(ActionPrepare, -1, 0)
	case EventAdmissionRequested:
		return w.admit(ev)
	case EventSubmissionRequested:
		if w.invState != InvocationAdmitted {
			return invalidTransition(w, ev)
		}
		// Second irreversible cutoff: no replay once submission is issued.
		w.invState = InvocationSubmitting
		w.effect = EffectMayHaveStarted
		w.setRetry(RetryApplicationPolicyRequired)
		return w.issue(ActionSubmit, -1, 0)
	case EventConsumptionRequested:
		if w.invState != InvocationRunning {
			return invalidTransition(w, ev)
		}
		i := ev.OutputIndex
		if i == nil || *i < 0 || *i >= w.nOut {
			return reject(CodeOutputIndexInvalid, "output_index does not identify a declared output")
		}
		if w.outputs[*i] != OutputAvailable {
			return reject(CodeOutputAlreadyClaimed, "a one-shot output may begin consumption only once")
		}
		w.outputs[*i] = OutputConsuming
		w.invState = InvocationConsuming
		return w.issue(ActionConsumeOutput, *i, 0)
	case EventDrainRequested:
		if w.sess != SessionReady {
			return invalidTransition(w, ev)
		}
		switch {
		case w.inv == nil:
			w.sess = SessionDraining
			return w.issue(ActionDrainSession, -1, 0)
		case w.invState == InvocationTerminal:
			w.sess = SessionDraining
			w.graph = GraphDrainRequired
			return w.issue(ActionDrainSession, -1, 0)
		}
		return w.beginInvocationDrain()
	case EventTeardownRequested:
		if w.sess != SessionReady && w.sess != SessionQuarantined {
			return invalidTransition(w, ev)
		}
		return w.beginTeardown()
	}
	return reject(CodeInvalidEvent, "event kind is unsupported")
}

func (w *State) admit(ev *Event) *Rejection {
	if w.sess != SessionReady ||
		(w.graph != GraphPrepared && w.graph != GraphReusable) ||
		(w.invState != InvocationNone && w.invState != InvocationTerminal) ||
		!w.outputsAll(OutputState.ReuseSafe) {
		return invalidTransition(w, ev)
	}
	if w.inv != nil && *w.inv == *ev.Invocation {
		return reject(CodeDuplicateInvocation, "the invocation identity has already been used by this session")
	}
	n := ev.DeclaredOutputs
	if n == nil || *n < 1 || *n > MaxOutputs {
		return reject(CodeOutputCardinalityInvalid, "declared_outputs must be between 1 and 64")
	}
	inv := *ev.Invocation
	w.inv = &inv
	w.invState = InvocationAdmitting
	w.effect = EffectNotStarted
	w.setRetry(RetryAutomaticAllowed)
	w.nOut = *n
	for i := range w.outputs {
		if i < *n {
			w.outputs[i] = OutputDeclared
		} else {
			w.outputs[i] = ""
		}
	}
	w.primary = ""
	w.clearDiagnostics()
	// rayflow decision §4.9 item 1: a REUSABLE graph takes the new
	// invocation and becomes PREPARED; REUSABLE describes a graph between
	// invocations.
	w.graph = GraphPrepared
	return w.issue(ActionAdmit, -1, *n)
}

func (w *State) cancel(ev *Event) *Rejection {
	if ev.ObservedAt >= w.deadlines.Outer {
		return w.outerDeadline(ev)
	}
	switch w.invState {
	case InvocationAdmitting, InvocationAdmitted:
		w.invState = InvocationCancelling
		w.primary = OutcomeCancelledPreSubmission
		w.setRetry(RetryProhibited)
		w.terminalizeOutputs(OutputNotCreated)
		w.hasPending = false // superseded, not completed: its callback is stale
		return w.issue(ActionReleaseCapacity, -1, 0)
	case InvocationSubmitting, InvocationRunning, InvocationConsuming:
		w.sess = SessionDraining
		w.invState = InvocationCancelling
		w.effect = EffectMayHaveStarted
		w.graph = GraphDrainRequired
		w.setRetry(RetryApplicationPolicyRequired)
		w.setPrimary(OutcomeCancelledAfterSubmission)
		w.hasPending = false
		return w.issue(ActionCancel, -1, 0)
	}
	return invalidTransition(w, ev)
}

// ownerLost applies OWNER_LOST as amended by rayflow decisions §4.9 items 2
// and 4: classified at the submission cutoff by the effect state.
func (w *State) ownerLost(ev *Event) *Rejection {
	if ev.ObservedAt >= w.deadlines.Outer {
		return w.outerDeadline(ev)
	}
	if w.inv == nil || !w.invState.active() {
		return invalidTransition(w, ev)
	}
	w.hasPending = false
	hadPrimary := w.primary != ""
	w.setPrimary(OutcomeOwnerLost)
	w.sess = SessionQuarantined
	w.invState = InvocationTerminal
	w.graph = GraphRebuildRequired
	if w.effect == EffectNotStarted {
		w.terminalizeOutputs(OutputNotCreated)
		if !hadPrimary {
			w.setRetry(RetryAutomaticAllowed)
		}
	} else {
		w.terminalizeOutputs(OutputLostWithOwner)
		w.setRetry(RetryOperatorReconciliationRequired)
	}
	return nil
}

func (w *State) outerDeadline(ev *Event) *Rejection {
	if w.sess == SessionRejected || w.sess == SessionTornDown {
		return invalidTransition(w, ev)
	}
	if ev.ObservedAt < w.deadlines.Outer {
		return reject(CodeDeadlineNotExpired, "the outer deadline has not expired")
	}
	if w.hasPending {
		return w.expire()
	}
	if w.inv == nil {
		switch w.sess {
		case SessionNew, SessionValidating, SessionValidated:
			w.sess = SessionRejected
			w.graph = GraphUnprepared
		default:
			w.sess = SessionQuarantined
			w.graph = GraphRebuildRequired
		}
		w.primary = OutcomeOuterDeadline
		w.fallback = false
		w.setRetry(RetryProhibited)
		return nil
	}
	switch w.invState {
	case InvocationAdmitting, InvocationAdmitted:
		w.invState = InvocationCancelling
		w.primary = OutcomeOuterDeadline
		w.setRetry(RetryProhibited)
		w.terminalizeOutputs(OutputNotCreated)
		return w.issue(ActionReleaseCapacity, -1, 0)
	case InvocationTerminal:
		w.sess = SessionQuarantined
		w.graph = GraphRebuildRequired
		w.setRetry(RetryProhibited)
		return nil
	}
	// SUBMITTING … CHECKING_HEALTH with nothing pending.
	w.setPrimary(OutcomeOuterDeadline)
	w.sess = SessionDraining
	w.graph = GraphRebuildRequired
	w.setRetry(RetryApplicationPolicyRequired)
	return w.beginInvocationDrain()
}

// callback applies an adapter callback (CONTRACTS §4.5).
func (w *State) callback(ev *Event) *Rejection {
	tok := ev.ActionToken
	if !w.hasPending || tok != w.pending.token {
		switch {
		case tok == "":
			return reject(CodeActionTokenRequired, "adapter callbacks require an action token")
		case w.completed(tok):
			return reject(CodeDuplicateAction, "the action callback was already applied")
		}
		return reject(CodeStaleActionToken, "the action token is not pending")
	}
	p := w.pending
	if !p.kind.Allows(ev.Kind) {
		return invalidTransition(w, ev)
	}
	if ev.Kind.explicitTimeout() && ev.ObservedAt < p.deadline {
		return reject(CodeDeadlineNotExpired, "the action deadline has not expired")
	}
	if ev.ObservedAt >= p.deadline {
		// Any callback at or after the action deadline is expiry, even a success.
		return w.expire()
	}
	w.complete()
	switch ev.Kind {
	case EventValidated:
		w.sess = SessionValidated
	case EventValidationRejected:
		w.sess = SessionRejected
		w.primary = OutcomeValidationRejected
	case EventPrepared:
		w.sess = SessionReady
		w.graph = GraphPrepared
	case EventPreparationFailed:
		w.primary = OutcomePreparationFailed
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case EventAdmitted:
		w.invState = InvocationAdmitted
	case EventCapacityRejected:
		w.sess = SessionReady
		w.invState = InvocationTerminal
		w.graph = GraphPrepared
		w.effect = EffectNotStarted
		w.setRetry(RetryAutomaticAllowed)
		w.terminalizeOutputs(OutputNotCreated)
		w.primary = OutcomeCapacityRejected
	case EventSubmitted:
		w.invState = InvocationRunning
		for i := range w.outputs[:w.nOut] {
			w.outputs[i] = OutputAvailable
		}
	case EventOutputConsumed:
		w.outputs[p.outputIndex] = OutputConsumed
		if !w.outputsAll(OutputState.Terminal) {
			w.invState = InvocationRunning
			return nil
		}
		w.setPrimary(OutcomeSucceeded)
		w.sess = SessionDraining
		w.invState = InvocationCheckingHealth
		w.setRetry(RetryProhibited)
		return w.issue(ActionCheckHealth, -1, 0)
	case EventApplicationError:
		if p.kind == ActionConsumeOutput {
			w.outputs[p.outputIndex] = OutputConsumed
		}
		w.setPrimary(OutcomeApplicationError)
		w.graph = GraphDrainRequired
		w.setRetry(RetryApplicationPolicyRequired)
		return w.beginInvocationDrain()
	case EventActorDied, EventChannelError:
		w.setPrimary(Outcome(ev.Kind))
		w.graph = GraphRebuildRequired
		w.setRetry(RetryApplicationPolicyRequired)
		return w.beginTeardown()
	case EventCapacityReleased:
		w.sess = SessionReady
		w.invState = InvocationTerminal
		w.graph = GraphPrepared
	case EventCapacityReleaseFailed:
		w.addDiagnostic(DiagCapacityReleaseFailed)
		w.invState = InvocationTerminal
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case EventCancelled, EventCancellationFailed:
		if ev.Kind == EventCancellationFailed {
			w.addDiagnostic(DiagCancellationFailed)
		}
		return w.beginInvocationDrain()
	case EventDrained:
		if p.kind == ActionDrainSession {
			return w.beginTeardown()
		}
		w.terminalizeOutputs(OutputAdapterReleased)
		if w.graph == GraphRebuildRequired {
			return w.beginTeardown()
		}
		w.invState = InvocationCheckingHealth
		return w.issue(ActionCheckHealth, -1, 0)
	case EventDrainFailed:
		w.addDiagnostic(DiagDrainFailed)
		w.setPrimary(OutcomeDrainFailure)
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case EventHealthy:
		w.sess = SessionReady
		w.invState = InvocationTerminal
		w.graph = GraphReusable
	case EventUnhealthy:
		w.addDiagnostic(DiagHealthCheckFailed)
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case EventTornDown:
		w.sess = SessionTornDown
		w.finishInvocation()
		w.graph = GraphTornDown
		w.terminalizeOutputs(OutputUnavailableAfterTeardown)
	case EventTeardownFailed:
		w.addDiagnostic(DiagTeardownFailed)
		w.setPrimary(OutcomeTeardownFailure)
		w.sess = SessionQuarantined
		w.finishInvocation()
		w.graph = GraphRebuildRequired
		w.terminalizeOutputs(OutputCleanupUnconfirmed)
	}
	return nil
}

// completed reports whether tok is the last completed action's token.
func (w *State) completed(tok string) bool {
	if w.lastDone != "" {
		return tok == w.lastDone
	}
	if w.lastDoneSeq == 0 {
		return false
	}
	seq, _, ok := ParseToken(tok)
	return ok && seq == w.lastDoneSeq
}

func (w *State) complete() {
	w.hasPending = false
	w.lastDone, w.lastDoneSeq = w.pending.token, w.pending.seq
}

// deadlineOutcome classifies the expiry of an action: the outer deadline
// wins ties.
func (w *State) deadlineOutcome(k ActionKind) Outcome {
	if w.deadlines.Outer <= w.deadlines.stage(k) {
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

// expire completes the pending action as expired (CONTRACTS §4.6).
func (w *State) expire() *Rejection {
	p := w.pending
	w.complete()
	outcome := w.deadlineOutcome(p.kind)
	switch p.kind {
	case ActionValidate:
		w.sess = SessionRejected
		w.primary = outcome
	case ActionPrepare:
		w.primary = outcome
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case ActionAdmit:
		w.invState = InvocationCancelling
		w.graph = GraphPrepared
		w.effect = EffectNotStarted
		w.setRetry(RetryAutomaticAllowed)
		w.terminalizeOutputs(OutputNotCreated)
		w.primary = outcome
		return w.issue(ActionReleaseCapacity, -1, 0)
	case ActionSubmit:
		w.setPrimary(outcome)
		w.graph = GraphDrainRequired
		w.setRetry(RetryApplicationPolicyRequired)
		return w.beginInvocationDrain()
	case ActionConsumeOutput:
		w.outputs[p.outputIndex] = OutputReleasePending
		w.setPrimary(outcome)
		w.graph = GraphRebuildRequired
		w.setRetry(RetryApplicationPolicyRequired)
		return w.beginInvocationDrain()
	case ActionReleaseCapacity:
		w.addDiagnostic(DiagCapacityReleaseTimeout)
		w.invState = InvocationTerminal
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case ActionCancel:
		w.addDiagnostic(DiagCancellationTimeout)
		return w.beginInvocationDrain()
	case ActionDrainInvocation, ActionDrainSession:
		w.addDiagnostic(DiagDrainTimeout)
		w.setPrimary(outcome)
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case ActionCheckHealth:
		w.addDiagnostic(DiagHealthCheckFailed)
		w.graph = GraphRebuildRequired
		return w.beginTeardown()
	case ActionTeardown:
		if outcome == OutcomeTeardownFailure || outcome == OutcomeOuterDeadline {
			w.addDiagnostic(DiagTeardownTimeout)
		} else {
			w.addDiagnostic(DiagTeardownFailed)
		}
		w.setPrimary(outcome)
		w.sess = SessionQuarantined
		w.finishInvocation()
		w.graph = GraphRebuildRequired
		w.terminalizeOutputs(OutputCleanupUnconfirmed)
	}
	return nil
}

// issue makes kind the pending action. An action whose deadline has
// already passed at the last observation is expired at once.
func (w *State) issue(kind ActionKind, outputIndex, declared int) *Rejection {
	if w.nextSeq >= MaxActionSequence {
		return reject(CodeActionSequenceExhausted, "the bounded action sequence is exhausted")
	}
	seq := w.nextSeq
	w.pending = pendingAction{
		token:       Token(seq, kind),
		seq:         seq,
		kind:        kind,
		deadline:    w.deadlines.ActionDeadline(kind),
		outputIndex: outputIndex,
		declared:    declared,
	}
	w.hasPending = true
	w.nextSeq++
	if w.hasObserved && w.observed >= w.pending.deadline {
		return w.expire()
	}
	return nil
}

func (w *State) beginInvocationDrain() *Rejection {
	w.sess = SessionDraining
	w.invState = InvocationDraining
	return w.issue(ActionDrainInvocation, -1, 0)
}

func (w *State) beginTeardown() *Rejection {
	w.sess = SessionDraining
	if w.inv != nil && w.invState != InvocationTerminal {
		w.invState = InvocationDraining
	}
	w.graph = GraphRebuildRequired
	return w.issue(ActionTeardown, -1, 0)
}

// finishInvocation ends the invocation at teardown: TERMINAL if one was
// ever admitted, else NONE.
func (w *State) finishInvocation() {
	if w.inv != nil {
		w.invState = InvocationTerminal
	} else {
		w.invState = InvocationNone
	}
}

func (w *State) setPrimary(o Outcome) {
	if w.primary == "" {
		w.primary = o
	}
}

// setRetry changes the retry disposition unless reconciliation is already
// required: that disposition is sticky (rayflow decision §4.9 item 4).
func (w *State) setRetry(r RetryDisposition) {
	if w.retry != RetryOperatorReconciliationRequired {
		w.retry = r
	}
}

func (w *State) terminalizeOutputs(to OutputState) {
	for i, o := range w.outputs[:w.nOut] {
		if !o.Terminal() {
			w.outputs[i] = to
		}
	}
}

// addDiagnostic keeps at most MaxDiagnostics distinct codes; when full,
// the last slot becomes DIAGNOSTICS_TRUNCATED.
func (w *State) addDiagnostic(d Diagnostic) {
	for _, x := range w.diags[:w.nDiag] {
		if x == d {
			return
		}
	}
	if w.nDiag < MaxDiagnostics {
		w.diags[w.nDiag] = d
		w.nDiag++
		return
	}
	w.diags[MaxDiagnostics-1] = DiagDiagnosticsTruncated
}

func (w *State) clearDiagnostics() {
	w.diags = [MaxDiagnostics]Diagnostic{}
	w.nDiag = 0
}
