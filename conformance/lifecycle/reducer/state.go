package reducer

import "github.com/rayflow/rayflow/gen/lifecycle"

// State is the complete reducer state of one compiled-graph session and its
// single invocation. It is an immutable value: Apply returns a new State and
// never modifies its receiver, so a caller keeps the previous State when an
// event is rejected. The zero State is invalid (every event is rejected
// with INVALID_STATE); build one with NewSession or Restore.
//
// State holds no event history, no payloads, handles or error text: only
// the fields of snapshot schema 1 plus the token of the last completed
// action, which tells a duplicate callback from a stale one.
type State struct {
	protocol  int64
	session   RunIdentity
	deadlines Deadlines
	capacity  Capacity

	sess     lifecycle.SessionState
	inv      *InvocationIdentity // never mutated once set; replaced on admission
	invState lifecycle.InvocationState
	effect   lifecycle.EffectState
	graph    lifecycle.GraphDisposition
	fallback bool
	retry    lifecycle.RetryDisposition
	primary  lifecycle.Outcome // "" is null

	nOut    int
	outputs [lifecycle.MaxDeclaredOutputs]lifecycle.OutputState
	nDiag   int
	diags   [lifecycle.MaxCleanupDiagnostics]lifecycle.CleanupDiagnostic

	hasPending bool
	pending    pendingAction

	// lastDone is the token of the last completed action. A state restored
	// from a snapshot knows only lastDoneSeq (see Restore).
	lastDone    string
	lastDoneSeq int64
	nextSeq     int64

	hasObserved bool
	observed    float64

	// verified records that the invariants held when Apply produced this
	// state, so the next Apply need not check them again. Restored states
	// start unverified.
	verified bool
}

type pendingAction struct {
	token       string
	seq         int64
	kind        lifecycle.Action
	deadline    float64
	outputIndex int // -1: none
	declared    int // 0: none
}

// NewSession returns the initial state of a session (docs/lifecycle.md#initial-state):
// NEW, no invocation, effects NOT_STARTED, graph UNPREPARED, strategy
// fallback allowed, retry AUTOMATIC_ALLOWED, no outputs, no pending action,
// next action sequence 1. It fails closed (a *Rejection) unless the run
// identity and deadlines are valid and the capacity is exactly
// DefaultCapacity.
func NewSession(run RunIdentity, d Deadlines, c Capacity) (State, error) {
	if m := run.check(); m != "" {
		return State{}, reject(lifecycle.RejectionCodeInvalidIdentity, m)
	}
	if m := d.check(); m != "" {
		return State{}, reject(lifecycle.RejectionCodeInvalidState, m)
	}
	if c != DefaultCapacity {
		return State{}, reject(lifecycle.RejectionCodeInvalidState, "lifecycle protocol v1 requires exact single-owner capacity 1/1/1/1/1/0")
	}
	return State{
		protocol:  lifecycle.ProtocolVersion,
		session:   run,
		deadlines: d,
		capacity:  c,
		sess:      lifecycle.SessionStateNew,
		invState:  lifecycle.InvocationStateNone,
		effect:    lifecycle.EffectStateNotStarted,
		graph:     lifecycle.GraphDispositionUnprepared,
		fallback:  true,
		retry:     lifecycle.RetryDispositionAutomaticAllowed,
		nextSeq:   1,
	}, nil
}

// Session returns the run identity that owns the session.
func (s State) Session() RunIdentity { return s.session }

// Deadlines returns the session's seven absolute deadlines.
func (s State) Deadlines() Deadlines { return s.deadlines }

// SessionState returns the session state.
func (s State) SessionState() lifecycle.SessionState { return s.sess }

// InvocationState returns the invocation state.
func (s State) InvocationState() lifecycle.InvocationState { return s.invState }

// Invocation returns the current (or last) invocation identity, if any.
func (s State) Invocation() (InvocationIdentity, bool) {
	if s.inv == nil {
		return InvocationIdentity{}, false
	}
	return *s.inv, true
}

// PrimaryOutcome returns the primary outcome; ok is false while it is null.
func (s State) PrimaryOutcome() (o lifecycle.Outcome, ok bool) { return s.primary, s.primary != "" }

// EffectState returns whether application effects may have started.
func (s State) EffectState() lifecycle.EffectState { return s.effect }

// GraphDisposition returns the graph disposition.
func (s State) GraphDisposition() lifecycle.GraphDisposition { return s.graph }

// RetryDisposition returns the retry disposition.
func (s State) RetryDisposition() lifecycle.RetryDisposition { return s.retry }

// StrategyFallbackAllowed reports whether another strategy may still be
// chosen (false from the moment preparation is issued).
func (s State) StrategyFallbackAllowed() bool { return s.fallback }

// Outputs returns a copy of the output slot states, by index.
func (s State) Outputs() []lifecycle.OutputState {
	return append([]lifecycle.OutputState(nil), s.outputs[:s.nOut]...)
}

// Diagnostics returns a copy of the cleanup diagnostics.
func (s State) Diagnostics() []lifecycle.CleanupDiagnostic {
	return append([]lifecycle.CleanupDiagnostic(nil), s.diags[:s.nDiag]...)
}

// Pending returns the pending action, or nil.
func (s State) Pending() *Action {
	if !s.hasPending {
		return nil
	}
	a := s.action()
	return &a
}

// NextActionSequence returns the sequence the next issued action will carry.
func (s State) NextActionSequence() int64 { return s.nextSeq }

// LastObservedAt returns the latest accepted observed_at; ok is false
// before the first accepted event.
func (s State) LastObservedAt() (t float64, ok bool) { return s.observed, s.hasObserved }

// LastCompletedToken returns the token of the last completed action, or ""
// when none completed or the state was restored from a snapshot without it.
func (s State) LastCompletedToken() string { return s.lastDone }

// WithLastCompletedToken returns s remembering tok as the last completed
// action token, for callers that persist it beside the snapshot (schema 1
// has no field for it). tok must be a well-formed token of an action issued
// before s's pending action.
func (s State) WithLastCompletedToken(tok string) (State, error) {
	seq, _, ok := ParseToken(tok)
	limit := s.nextSeq
	if s.hasPending {
		limit = s.pending.seq
	}
	if !ok || seq >= limit {
		return s, reject(lifecycle.RejectionCodeInvalidState, "last completed token must name an action issued before the pending one")
	}
	s.lastDone, s.lastDoneSeq = tok, seq
	s.verified = false
	return s, nil
}

// action returns the pending action as the adapter sees it.
func (s *State) action() Action {
	p := &s.pending
	a := Action{Token: p.token, Kind: p.kind, Session: s.session, Deadline: p.deadline}
	if InvocationScoped(p.kind) && s.inv != nil {
		inv := *s.inv
		a.Invocation = &inv
	}
	if p.outputIndex >= 0 {
		a.OutputIndex = Int(p.outputIndex)
	}
	if p.declared > 0 {
		a.DeclaredOutputs = Int(p.declared)
	}
	return a
}

func (s *State) outputsAll(pred func(lifecycle.OutputState) bool) bool {
	for _, o := range s.outputs[:s.nOut] {
		if !pred(o) {
			return false
		}
	}
	return true
}

func (s *State) outputsAny(o lifecycle.OutputState) bool {
	for _, x := range s.outputs[:s.nOut] {
		if x == o {
			return true
		}
	}
	return false
}
