package reducer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

var (
	run = reducer.RunIdentity{TaskExecutionPK: 7, AttemptNumber: 1, ExecutionGeneration: 0, RunID: "rayflow:7"}
	dl  = reducer.Deadlines{Outer: 100, Admission: 10, Submission: 20, Result: 30, Cancellation: 40, Drain: 50, Teardown: 60}
)

func newSession(t testing.TB) reducer.State {
	t.Helper()
	s, err := reducer.NewSession(run, dl, reducer.DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// apply applies ev and fails the test on rejection.
func apply(t testing.TB, s reducer.State, ev reducer.Event) (reducer.State, *reducer.Action) {
	t.Helper()
	next, a, rej := s.Apply(ev)
	if rej != nil {
		t.Fatalf("%s rejected: %v", ev.Kind, rej)
	}
	return next, a
}

// ready drives a new session to READY through the fake adapter.
func ready(t testing.TB, f *reducer.Fake) reducer.State {
	t.Helper()
	ctx := context.Background()
	s := newSession(t)
	s, a := apply(t, s, reducer.Command(lifecycle.CommandValidationRequested, run, f.Now))
	s, err := reducer.Drive(ctx, s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	s, a = apply(t, s, reducer.Command(lifecycle.CommandPreparationRequested, run, f.Now))
	if s.StrategyFallbackAllowed() {
		t.Fatal("fallback still allowed once PREPARE is issued")
	}
	if s, err = reducer.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	if s.SessionState() != lifecycle.SessionStateReady {
		t.Fatalf("session %s, want READY", s.SessionState())
	}
	return s
}

// invoke admits, submits and consumes every output of one invocation.
func invoke(t testing.TB, s reducer.State, f *reducer.Fake, id string, outputs int) reducer.State {
	t.Helper()
	ctx := context.Background()
	inv := run.Invocation(id)
	ev := reducer.Command(lifecycle.CommandAdmissionRequested, run, f.Now).WithInvocation(inv)
	ev.DeclaredOutputs = reducer.Int(outputs)
	s, a := apply(t, s, ev)
	s, err := reducer.Drive(ctx, s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	s, a = apply(t, s, reducer.Command(lifecycle.CommandSubmissionRequested, run, f.Now).WithInvocation(inv))
	if s.RetryDisposition() != lifecycle.RetryDispositionApplicationPolicyRequired || s.EffectState() != lifecycle.EffectStateMayHaveStarted {
		t.Fatalf("after SUBMIT issue: retry %s effect %s", s.RetryDisposition(), s.EffectState())
	}
	if s, err = reducer.Drive(ctx, s, f, a); err != nil {
		t.Fatal(err)
	}
	for i := range outputs {
		ev := reducer.Command(lifecycle.CommandConsumptionRequested, run, f.Now).WithInvocation(inv)
		ev.OutputIndex = reducer.Int(i)
		s, a = apply(t, s, ev)
		if s, err = reducer.Drive(ctx, s, f, a); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestFakeAdapterWholeLifecycle(t *testing.T) {
	t.Parallel()
	f := &reducer.Fake{Now: 1, Step: 0.5}
	s := ready(t, f)
	s = invoke(t, s, f, "inv-1", 3)
	if o, _ := s.PrimaryOutcome(); o != lifecycle.OutcomeSucceeded || s.GraphDisposition() != lifecycle.GraphDispositionReusable ||
		s.InvocationState() != lifecycle.InvocationStateTerminal || s.SessionState() != lifecycle.SessionStateReady {
		t.Fatalf("after first invocation: %v %s %s %s", o, s.GraphDisposition(), s.InvocationState(), s.SessionState())
	}
	// Graph reuse after HEALTHY (rayflow decision 1, docs/lifecycle.md#rayflows-decisions).
	s = invoke(t, s, f, "inv-2", 1)
	if s.GraphDisposition() != lifecycle.GraphDispositionReusable {
		t.Fatalf("second invocation left graph %s", s.GraphDisposition())
	}
	s, a := apply(t, s, reducer.Command(lifecycle.CommandTeardownRequested, run, f.Now))
	s, err := reducer.Drive(context.Background(), s, f, a)
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionState() != lifecycle.SessionStateTornDown || s.GraphDisposition() != lifecycle.GraphDispositionTornDown {
		t.Fatalf("after teardown: %s %s", s.SessionState(), s.GraphDisposition())
	}
	var kinds []lifecycle.Action
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
	_, _, rej := s.Apply(reducer.Command(lifecycle.CommandPreparationRequested, run, 1))
	var err error = rej
	if !errors.Is(err, &reducer.Rejection{Code: lifecycle.RejectionCodeInvalidTransition}) ||
		errors.Is(err, &reducer.Rejection{Code: lifecycle.RejectionCodeInvalidState}) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
	var as *reducer.Rejection
	if !errors.As(fmt.Errorf("wrapped: %w", err), &as) || as.Code != lifecycle.RejectionCodeInvalidTransition {
		t.Fatalf("errors.As through a wrap: %v", as)
	}
}
