package reducer_test

import (
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

// lifecycleEvents is one whole session: validate, prepare, then an
// invocation with two outputs run to HEALTHY, then teardown (16 events).
func lifecycleEvents(b *testing.B) []reducer.Event {
	b.Helper()
	s := newSession(b)
	var evs []reducer.Event
	step := func(ev reducer.Event) *reducer.Action {
		var a *reducer.Action
		var rej *reducer.Rejection
		s, a, rej = s.Apply(ev)
		if rej != nil {
			b.Fatalf("%s: %v", ev.Kind, rej)
		}
		evs = append(evs, ev)
		return a
	}
	inv := run.Invocation("inv-1")
	a := step(reducer.Command(lifecycle.CommandValidationRequested, run, 1))
	step(reducer.Callback(*a, lifecycle.CallbackValidated, 1))
	a = step(reducer.Command(lifecycle.CommandPreparationRequested, run, 1))
	step(reducer.Callback(*a, lifecycle.CallbackPrepared, 2))
	ev := reducer.Command(lifecycle.CommandAdmissionRequested, run, 2).WithInvocation(inv)
	ev.DeclaredOutputs = reducer.Int(2)
	a = step(ev)
	step(reducer.Callback(*a, lifecycle.CallbackAdmitted, 3))
	a = step(reducer.Command(lifecycle.CommandSubmissionRequested, run, 3).WithInvocation(inv))
	step(reducer.Callback(*a, lifecycle.CallbackSubmitted, 4))
	for i := range 2 {
		at := 4 + float64(i)
		ev := reducer.Command(lifecycle.CommandConsumptionRequested, run, at).WithInvocation(inv)
		ev.OutputIndex = reducer.Int(i)
		a = step(ev)
		a = step(reducer.Callback(*a, lifecycle.CallbackOutputConsumed, at+0.5))
	}
	step(reducer.Callback(*a, lifecycle.CallbackHealthy, 6))
	a = step(reducer.Command(lifecycle.CommandTeardownRequested, run, 6))
	step(reducer.Callback(*a, lifecycle.CallbackTornDown, 7))
	return evs
}

// BenchmarkApply reports events per second through the reducer over whole
// session lifecycles.
func BenchmarkApply(b *testing.B) {
	evs := lifecycleEvents(b)
	start := newSession(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s := start
		for _, ev := range evs {
			next, _, rej := s.Apply(ev)
			if rej != nil {
				b.Fatal(rej)
			}
			s = next
		}
		n += len(evs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReject reports the cost of a rejected (stale) callback.
func BenchmarkReject(b *testing.B) {
	s := newSession(b)
	ev := reducer.Event{Kind: reducer.EventKind(lifecycle.CallbackValidated), ProtocolVersion: lifecycle.ProtocolVersion,
		Session: run, ObservedAt: 1, ActionToken: reducer.Token(7, lifecycle.ActionValidate)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, rej := s.Apply(ev); rej == nil {
			b.Fatal("accepted")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSnapshot reports snapshot encoding and restoring.
func BenchmarkSnapshot(b *testing.B) {
	evs := lifecycleEvents(b)
	s := newSession(b)
	for _, ev := range evs[:10] {
		s, _, _ = s.Apply(ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		raw, err := s.MarshalSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reducer.DecodeSnapshot(raw); err != nil {
			b.Fatal(err)
		}
	}
}
