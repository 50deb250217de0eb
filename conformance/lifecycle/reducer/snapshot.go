package reducer

import (
	"fmt"

	"github.com/rayflow/rayflow/gen/lifecycle"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Snapshot is lifecycle snapshot schema 1 (docs/lifecycle.md#snapshot), the record type
// generated from schema/lifecycle.cue. It is secret-free: identities,
// deadlines, states, output slot states, diagnostic codes and the pending
// action's token, kind, deadline and payload-free parameters; never a
// payload, result, error text, credential or runtime handle.
type Snapshot = lifecycle.Snapshot

// Snapshot returns s as a snapshot record.
func (s State) Snapshot() Snapshot {
	snap := Snapshot{
		SchemaVersion:   lifecycle.SnapshotSchemaVersion,
		ProtocolVersion: s.protocol,
		SessionIdentity: lifecycle.SessionIdentity{
			SchemaVersion:       1,
			RunID:               s.session.RunID,
			TaskExecutionPK:     s.session.TaskExecutionPK,
			AttemptNumber:       s.session.AttemptNumber,
			ExecutionGeneration: s.session.ExecutionGeneration,
		},
		SessionState:    s.sess,
		InvocationState: s.invState,
		Deadlines: lifecycle.Deadlines{
			Outer: s.deadlines.Outer, Admission: s.deadlines.Admission, Submission: s.deadlines.Submission,
			Result: s.deadlines.Result, Cancellation: s.deadlines.Cancellation, Drain: s.deadlines.Drain,
			Teardown: s.deadlines.Teardown,
		},
		Capacity: lifecycle.Capacity{
			SessionOwners: s.capacity.SessionOwners, Callers: s.capacity.Callers,
			MaximumInFlight: s.capacity.MaximumInFlight, MaximumBufferedResults: s.capacity.MaximumBufferedResults,
			OwnerConcurrency: s.capacity.OwnerConcurrency, QueueCapacity: s.capacity.QueueCapacity,
		},
		StrategyFallbackAllowed: s.fallback,
		RetryDisposition:        s.retry,
		EffectState:             s.effect,
		GraphDisposition:        s.graph,
		Outputs:                 make([]lifecycle.Output, s.nOut),
		CleanupDiagnostics:      make([]lifecycle.CleanupDiagnostic, s.nDiag),
		NextActionSequence:      s.nextSeq,
	}
	if s.inv != nil {
		snap.InvocationIdentity = &lifecycle.InvocationIdentity{
			SchemaVersion:       1,
			TaskExecutionPK:     s.inv.TaskExecutionPK,
			AttemptNumber:       s.inv.AttemptNumber,
			ExecutionGeneration: s.inv.ExecutionGeneration,
			RunID:               s.inv.RunID,
			InvocationID:        s.inv.InvocationID,
		}
	}
	if s.hasObserved {
		t := s.observed
		snap.LastObservedAt = &t
	}
	if s.primary != "" {
		o := s.primary
		snap.PrimaryOutcome = &o
	}
	for i, o := range s.outputs[:s.nOut] {
		snap.Outputs[i] = lifecycle.Output{Index: int64(i), State: o}
	}
	copy(snap.CleanupDiagnostics, s.diags[:s.nDiag])
	if s.hasPending {
		p := &s.pending
		pa := &lifecycle.PendingAction{Token: p.token, Kind: p.kind, Deadline: p.deadline}
		if p.outputIndex >= 0 {
			i := int64(p.outputIndex)
			pa.OutputIndex = &i
		}
		if p.declared > 0 {
			n := int64(p.declared)
			pa.DeclaredOutputs = &n
		}
		snap.PendingAction = pa
	}
	return snap
}

// MarshalSnapshot returns s's snapshot as canonical JSON (sorted keys,
// compact, raw UTF-8, Python float text; the no-fold codec, so identifiers
// and timestamps are kept exactly as given). It fails if the snapshot would
// exceed MaxSnapshotBytes (which no valid state can reach).
func (s State) MarshalSnapshot() ([]byte, error) {
	snap := s.Snapshot()
	if err := checkSnapshotSize(&snap); err != nil {
		return nil, err
	}
	return canonical.NoFold.Marshal(&snap)
}

// SnapshotSize returns the size of snap as docs/lifecycle.md#snapshot measures it:
// Python's json.dumps(v, sort_keys=True, separators=(",", ":")) with ASCII
// escapes.
func SnapshotSize(snap *Snapshot) (int64, error) { return canonical.ASCIISize(snap, false) }

func checkSnapshotSize(snap *Snapshot) error {
	n, err := SnapshotSize(snap)
	if err != nil {
		return fmt.Errorf("lifecycle: snapshot: %w", err)
	}
	if n > lifecycle.MaxSnapshotBytes {
		return fmt.Errorf("lifecycle: snapshot is %d bytes, over its %d-byte bound", n, lifecycle.MaxSnapshotBytes)
	}
	return nil
}

// DecodeSnapshot strictly decodes a snapshot record (unknown fields,
// duplicate keys and schema violations are errors) and restores it.
func DecodeSnapshot(data []byte) (State, error) {
	snap, err := lifecycle.DecodeSnapshot(data)
	if err != nil {
		return State{}, fmt.Errorf("lifecycle: snapshot: %w", err)
	}
	return Restore(snap)
}

// Restore rebuilds the State a snapshot was taken from. The record must
// satisfy schema 1 (generated validation: versions, vocabularies, exact
// capacity, bounds, token form) and the 16,384-byte bound; the state
// invariants of docs/lifecycle.md#state-invariants are not checked here but by every Apply, which rejects
// all events of an inconsistent state with INVALID_STATE.
//
// Schema 1 has no field for the last completed action token. A restored
// state takes the sequence just below the pending action (or below
// next_action_sequence when none is pending) as the last completed one, so
// a re-delivered callback of that action is still DUPLICATE_ACTION; this
// equals the uninterrupted state unless that action was superseded by a
// cancellation or owner loss rather than completed. Callers that persist
// the token beside the snapshot restore it exactly with
// State.WithLastCompletedToken.
func Restore(snap *Snapshot) (State, error) {
	if snap == nil {
		return State{}, reject(lifecycle.RejectionCodeInvalidState, "snapshot is nil")
	}
	if err := snap.Validate(); err != nil {
		return State{}, fmt.Errorf("lifecycle: snapshot: %w", err)
	}
	if err := checkSnapshotSize(snap); err != nil {
		return State{}, err
	}
	id := snap.SessionIdentity
	s := State{
		protocol: snap.ProtocolVersion,
		session: RunIdentity{
			TaskExecutionPK: id.TaskExecutionPK, AttemptNumber: id.AttemptNumber,
			ExecutionGeneration: id.ExecutionGeneration, RunID: id.RunID,
		},
		deadlines: Deadlines{
			Outer: snap.Deadlines.Outer, Admission: snap.Deadlines.Admission, Submission: snap.Deadlines.Submission,
			Result: snap.Deadlines.Result, Cancellation: snap.Deadlines.Cancellation, Drain: snap.Deadlines.Drain,
			Teardown: snap.Deadlines.Teardown,
		},
		capacity: Capacity{
			SessionOwners: snap.Capacity.SessionOwners, Callers: snap.Capacity.Callers,
			MaximumInFlight: snap.Capacity.MaximumInFlight, MaximumBufferedResults: snap.Capacity.MaximumBufferedResults,
			OwnerConcurrency: snap.Capacity.OwnerConcurrency, QueueCapacity: snap.Capacity.QueueCapacity,
		},
		sess:     snap.SessionState,
		invState: snap.InvocationState,
		effect:   snap.EffectState,
		graph:    snap.GraphDisposition,
		fallback: snap.StrategyFallbackAllowed,
		retry:    snap.RetryDisposition,
		nOut:     len(snap.Outputs),
		nDiag:    len(snap.CleanupDiagnostics),
		nextSeq:  snap.NextActionSequence,
	}
	if ii := snap.InvocationIdentity; ii != nil {
		s.inv = &InvocationIdentity{
			RunIdentity: RunIdentity{
				TaskExecutionPK: ii.TaskExecutionPK, AttemptNumber: ii.AttemptNumber,
				ExecutionGeneration: ii.ExecutionGeneration, RunID: ii.RunID,
			},
			InvocationID: ii.InvocationID,
		}
	}
	if snap.LastObservedAt != nil {
		s.observed, s.hasObserved = *snap.LastObservedAt, true
	}
	if snap.PrimaryOutcome != nil {
		s.primary = *snap.PrimaryOutcome
	}
	for i, o := range snap.Outputs {
		if o.Index != int64(i) {
			return State{}, reject(lifecycle.RejectionCodeInvalidState, "output slots must have dense ordered indexes")
		}
		s.outputs[i] = o.State
	}
	copy(s.diags[:], snap.CleanupDiagnostics)
	if pa := snap.PendingAction; pa != nil {
		seq, _, _ := ParseToken(pa.Token)
		s.hasPending = true
		s.pending = pendingAction{
			token: pa.Token, seq: seq, kind: pa.Kind, deadline: pa.Deadline,
			outputIndex: -1,
		}
		if pa.OutputIndex != nil {
			s.pending.outputIndex = int(*pa.OutputIndex)
		}
		if pa.DeclaredOutputs != nil {
			s.pending.declared = int(*pa.DeclaredOutputs)
		}
	}
	last := s.nextSeq - 1
	if s.hasPending && s.pending.seq > 0 {
		last = s.pending.seq - 1
	}
	if last > 0 {
		s.lastDoneSeq = last
	}
	return s, nil
}
