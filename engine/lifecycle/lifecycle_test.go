package lifecycle_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rayflow/rayflow/engine/lifecycle"
)

var (
	run = lifecycle.RunIdentity{TaskExecutionPK: 7, AttemptNumber: 1, ExecutionGeneration: 0, RunID: "rayflow:7"}
	dl  = lifecycle.Deadlines{Outer: 100, Admission: 10, Submission: 20, Result: 30, Cancellation: 40, Drain: 50, Teardown: 60}
)

func newSession(t testing.TB) lifecycle.State {
	t.Helper()
	s, err := lifecycle.NewSession(run, dl, lifecycle.DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// apply applies ev and fails the test on rejection.
func apply(t testing.TB, s lifecycle.State, ev lifecycle.Event) (lifecycle.State, *lifecycle.Action) {
	t.Helper()
	next, a, rej := s.Apply(ev)
	if rej != nil {
		t.Fatalf("%s rejected: %v", ev.Kind, rej)
	}
	return next, a
}

// ready drives a new session to READY through the fake adapter.
func ready(t testing.TB, f *lifecycle.Fake) lifecycle.State {
	t.Helper()
	ctx := context.Background()
	s := newSession(t)
	s, a := apply(t, s, lifecycle.Command(lifecycle.EventValidationRequested, run, f.Now))
	s, err := lifecycle.Drive(ctx, s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	s, a = apply(t, s, lifecycle.Command(lifecycle.EventPreparationRequested, run, f.Now))
	if s.StrategyFallbackAllowed() {
		t.Fatal("fallback still allowed once PREPARE is issued")
	}
	if s, err = lifecycle.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	if s.SessionState() != lifecycle.SessionReady {
		t.Fatalf("session %s, want READY", s.SessionState())
	}
	return s
}

// invoke admits, submits and consumes every output of one invocation.
func invoke(t testing.TB, s lifecycle.State, f *lifecycle.Fake, id string, outputs int) lifecycle.State {
	t.Helper()
	ctx := context.Background()
	inv := run.Invocation(id)
	ev := lifecycle.Command(lifecycle.EventAdmissionRequested, run, f.Now).WithInvocation(inv)
	ev.DeclaredOutputs = lifecycle.Int(outputs)
	s, a := apply(t, s, ev)
	s, err := lifecycle.Drive(ctx, s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	s, a = apply(t, s, lifecycle.Command(lifecycle.EventSubmissionRequested, run, f.Now).WithInvocation(inv))
	if s.RetryDisposition() != lifecycle.RetryApplicationPolicyRequired || s.EffectState() != lifecycle.EffectMayHaveStarted {
		t.Fatalf("after SUBMIT issue: retry %s effect %s", s.RetryDisposition(), s.EffectState())
	}
	if s, err = lifecycle.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	for i := range outputs {
		ev := lifecycle.Command(lifecycle.EventConsumptionRequested, run, f.Now).WithInvocation(inv)
		ev.OutputIndex = lifecycle.Int(i)
		s, a = apply(t, s, ev)
		if s, err = lifecycle.Drive(ctx, s, f, a); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestFakeAdapterWholeLifecycle(t *testing.T) {
	t.Parallel()
	f := &lifecycle.Fake{Now: 1, Step: 0.5}
	s := ready(t, f)
	s = invoke(t, s, f, "inv-1", 3)
	if o, _ := s.PrimaryOutcome(); o != lifecycle.OutcomeSucceeded || s.GraphDisposition() != lifecycle.GraphReusable ||
		s.InvocationState() != lifecycle.InvocationTerminal || s.SessionState() != lifecycle.SessionReady {
		t.Fatalf("after first invocation: %v %s %s %s", o, s.GraphDisposition(), s.InvocationState(), s.SessionState())
	}
	// Graph reuse after HEALTHY (rayflow decision 1, docs/lifecycle.md#rayflows-decisions).
	s = invoke(t, s, f, "inv-2", 1)
	if s.GraphDisposition() != lifecycle.GraphReusable {
		t.Fatalf("second invocation left graph %s", s.GraphDisposition())
	}
	s, a := apply(t, s, lifecycle.Command(lifecycle.EventTeardownRequested, run, f.Now))
	s, err := lifecycle.Drive(context.Background(), s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionState() != lifecycle.SessionTornDown || s.GraphDisposition() != lifecycle.GraphTornDown {
		t.Fatalf("after teardown: %s %s", s.SessionState(), s.GraphDisposition())
	}
	var kinds []lifecycle.ActionKind
	for _, c := range f.Calls {
		kinds = append(kinds, c.Kind)
	}
	if len(kinds) != 13 {
		t.Fatalf("dispatched %d actions: %v", len(kinds), kinds)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarshalSnapshot(); err != nil {
		t.Fatal(err)
	}
}

func TestRejectionIsCode(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	_, _, rej := s.Apply(lifecycle.Command(lifecycle.EventPreparationRequested, run, 1))
	var err error = rej
	if !errors.Is(err, lifecycle.CodeInvalidTransition) || errors.Is(err, lifecycle.CodeInvalidState) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
}
