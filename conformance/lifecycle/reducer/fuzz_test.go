package reducer_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

var allKinds = reducer.EventKinds

// walker turns a byte stream into events biased toward ones the reducer
// accepts, so random inputs reach deep states.
type walker struct {
	data []byte
	i    int
}

func (w *walker) next() byte {
	if w.i >= len(w.data) {
		return 0
	}
	b := w.data[w.i]
	w.i++
	return b
}

func (w *walker) done() bool { return w.i >= len(w.data) }

func (w *walker) event(s reducer.State, now *float64, invs *int) reducer.Event {
	op := w.next()
	*now += float64(w.next()%16) / 2
	if op%29 == 0 {
		*now -= 1 // clock regression now and then
	}
	var ev reducer.Event
	p := s.Pending()
	if p != nil && op%3 != 0 {
		ks := callbacksFor(p.Kind)
		ev = reducer.Callback(*p, ks[int(w.next())%len(ks)], *now)
	} else {
		// any kind, callbacks included, as a command: the reducer must refuse
		// what is not one
		ev = reducer.Command(lifecycle.Command(allKinds[int(w.next())%len(allKinds)]), run, *now)
		if inv, ok := s.Invocation(); ok && op%5 != 0 {
			ev = ev.WithInvocation(inv)
		}
		switch lifecycle.Command(ev.Kind) {
		case lifecycle.CommandAdmissionRequested:
			*invs++
			ev = ev.WithInvocation(run.Invocation("inv-" + strings.Repeat("x", *invs%3) + string(rune('a'+*invs%26))))
			ev.DeclaredOutputs = reducer.Int(int(w.next()%70) - 2)
		case lifecycle.CommandConsumptionRequested:
			ev.OutputIndex = reducer.Int(int(w.next()%8) - 1)
		}
		if ev.Kind.IsCallback() && op%7 == 0 {
			ev.ActionToken = reducer.Token(int64(w.next()%10), lifecycle.ActionValues[int(op)%len(lifecycle.ActionValues)])
		}
	}
	switch w.next() % 32 { // occasional defects
	case 1:
		ev.Invocation = nil
	case 2:
		ev.ActionToken = ""
	case 3:
		ev.ProtocolVersion = 2
	case 4:
		ev.Session.AttemptNumber++
	case 5:
		ev.OutputIndex = reducer.Int(int(w.next() % 4))
	case 6:
		ev.ObservedAt = math.Inf(1)
	}
	return ev
}

func callbacksFor(k lifecycle.Action) []lifecycle.Callback {
	var out []lifecycle.Callback
	for _, c := range lifecycle.CallbackValues {
		if reducer.Allows(k, reducer.EventKind(c)) {
			out = append(out, c)
		}
	}
	return out
}

// walk runs one byte stream through the reducer and checks every reachable
// state: it satisfies the invariants, its snapshot fits 16,384 bytes and
// round-trips, and a rejected event changed nothing.
func walk(t *testing.T, data []byte) {
	w := &walker{data: data}
	d := reducer.Deadlines{}
	for _, f := range []*float64{&d.Admission, &d.Submission, &d.Result, &d.Cancellation, &d.Drain, &d.Teardown} {
		*f = float64(w.next())
	}
	d.Outer = float64(w.next()) + 32
	s, err := reducer.NewSession(run, d, reducer.DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	now, invs := 0.0, 0
	for steps := 0; !w.done() && steps < 400; steps++ {
		ev := w.event(s, &now, &invs)
		next, a, rej := s.Apply(ev)
		if rej != nil {
			if rej.Code == lifecycle.RejectionCodeInvalidState {
				t.Fatalf("step %d: %s produced INVALID_STATE: %s", steps, ev.Kind, rej.Message)
			}
			if next != s || a != nil {
				t.Fatalf("step %d: rejected %s changed the state", steps, ev.Kind)
			}
			continue
		}
		s = next
		if err := s.Check(); err != nil {
			t.Fatalf("step %d: %s: %v", steps, ev.Kind, err)
		}
		if a != nil && (s.Pending() == nil || s.Pending().Token != a.Token) {
			t.Fatalf("step %d: issued action %s is not the pending one", steps, a.Token)
		}
		snap := s.Snapshot()
		n, err := reducer.SnapshotSize(&snap)
		if err != nil || n > lifecycle.MaxSnapshotBytes {
			t.Fatalf("step %d: snapshot size %d: %v", steps, n, err)
		}
		if steps%8 != 0 && !w.done() {
			continue
		}
		raw, err := s.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := reducer.DecodeSnapshot(raw)
		if err != nil {
			t.Fatalf("step %d: restore: %v\n%s", steps, err, raw)
		}
		if again, _ := r.MarshalSnapshot(); !bytes.Equal(again, raw) {
			t.Fatalf("step %d: snapshot does not round-trip", steps)
		}
	}
}

func FuzzReducer(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{1, 2, 3, 4, 5}, 40))
	f.Add([]byte("validate prepare admit submit consume healthy teardown"))
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 300)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(walk)
}

// TestRandomWalks runs the fuzz body over fixed pseudo-random streams as
// part of the ordinary tests.
func TestRandomWalks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20260722, 5))
	for range 300 {
		b := make([]byte, 200+r.IntN(400))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		walk(t, b)
	}
}
