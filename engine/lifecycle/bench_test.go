package lifecycle_test

import (
	"testing"

	"github.com/rayflow/rayflow/engine/lifecycle"
)

// lifecycleEvents is one whole session: validate, prepare, then an
// invocation with two outputs run to HEALTHY, then teardown (16 events).
func lifecycleEvents(b *testing.B) []lifecycle.Event {
	b.Helper()
	s := newSession(b)
	var evs []lifecycle.Event
	step := func(ev lifecycle.Event) *lifecycle.Action {
		var a *lifecycle.Action
		var rej *lifecycle.Rejection
		s, a, rej = s.Apply(ev)
		if rej != nil {
			b.Fatalf("%s: %v", ev.Kind, rej)
		}
		evs = append(evs, ev)
		return a
	}
	inv := run.Invocation("inv-1")
	a := step(lifecycle.Command(lifecycle.EventValidationRequested, run, 1))
	step(lifecycle.Callback(*a, lifecycle.EventValidated, 1))
	a = step(lifecycle.Command(lifecycle.EventPreparationRequested, run, 1))
	step(lifecycle.Callback(*a, lifecycle.EventPrepared, 2))
	ev := lifecycle.Command(lifecycle.EventAdmissionRequested, run, 2).WithInvocation(inv)
	ev.DeclaredOutputs = lifecycle.Int(2)
	a = step(ev)
	step(lifecycle.Callback(*a, lifecycle.EventAdmitted, 3))
	a = step(lifecycle.Command(lifecycle.EventSubmissionRequested, run, 3).WithInvocation(inv))
	step(lifecycle.Callback(*a, lifecycle.EventSubmitted, 4))
	for i := range 2 {
		at := 4 + float64(i)
		ev := lifecycle.Command(lifecycle.EventConsumptionRequested, run, at).WithInvocation(inv)
		ev.OutputIndex = lifecycle.Int(i)
		a = step(ev)
		a = step(lifecycle.Callback(*a, lifecycle.EventOutputConsumed, at+0.5))
	}
	step(lifecycle.Callback(*a, lifecycle.EventHealthy, 6))
	a = step(lifecycle.Command(lifecycle.EventTeardownRequested, run, 6))
	step(lifecycle.Callback(*a, lifecycle.EventTornDown, 7))
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
	ev := lifecycle.Command(lifecycle.EventValidated, run, 1)
	ev.ActionToken = lifecycle.Token(7, lifecycle.ActionValidate)
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
		if _, err := lifecycle.DecodeSnapshot(raw); err != nil {
			b.Fatal(err)
		}
	}
}
