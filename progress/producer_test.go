package progress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/internal/testwait"
)

func newProducer(t *testing.T, s Sender) *Producer {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Encoder: newEnc(t), NodeID: "0.1.m0", Label: "sync_resource", Sender: s})
	if err != nil || p == nil {
		t.Fatalf("NewProducer = %v, %v", p, err)
	}
	return p
}

// checkSums checks the producer_report identities of docs/contracts.md#live-events.
func checkSums(t *testing.T, r event.ProducerReportPayload) {
	t.Helper()
	if r.Offered != r.Submitted+r.Superseded+r.LocallyDropped {
		t.Errorf("offered %d != submitted %d + superseded %d + dropped %d", r.Offered, r.Submitted, r.Superseded, r.LocallyDropped)
	}
	if r.Submitted != r.Acknowledged+r.ActorRejected+r.AckFailed+r.PendingAcknowledgements {
		t.Errorf("submitted %d != ack %d + rejected %d + failed %d + pending %d", r.Submitted, r.Acknowledged, r.ActorRejected, r.AckFailed, r.PendingAcknowledgements)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
}

func TestProducerAbsent(t *testing.T) {
	enc := newEnc(t)
	s := &fakeSender{}
	for _, cfg := range []ProducerConfig{
		{Encoder: enc, NodeID: "a", Sender: s, MapItem: true},
		{Encoder: enc, NodeID: "a", Sender: s, Policy: common.ReportingPolicyTerminalOnly},
		{Encoder: enc, NodeID: "a", Sender: s, Policy: common.ReportingPolicyDisabled},
		{Encoder: enc, NodeID: "a", Sender: s, Policy: common.ReportingPolicySampled},
		{Encoder: enc, NodeID: "a"},
	} {
		p, err := NewProducer(cfg)
		if p != nil || err != nil {
			t.Fatalf("NewProducer(%+v) = %v, %v; want nil, nil", cfg, p, err)
		}
		if Report(Context(context.Background(), p), 1, 2, "", nil) {
			t.Fatal("ReportProgress returned true without a producer")
		}
		// A typed nil installed directly still reports false.
		if Report(WithReporter(context.Background(), p), 1, 2, "", nil) {
			t.Fatal("nil *Producer reported true")
		}
		p.Started(detail.NodeExecution{})
		p.Complete()
		p.Fail("x")
		checkSums(t, p.Stats())
	}
	if s.n() != 0 {
		t.Fatal("an absent producer sent events")
	}
	if _, err := NewProducer(ProducerConfig{Encoder: enc, NodeID: "", Sender: s}); !errors.Is(err, ErrInvalidIdentity) {
		t.Fatalf("empty node id: %v", err)
	}
	if _, err := NewProducer(ProducerConfig{Encoder: enc, NodeID: "secret-node", Sender: s}); !errors.Is(err, ErrInvalidIdentity) {
		t.Fatalf("node id changed by redaction: %v", err)
	}
}

func TestProducerRejectsInvalidValues(t *testing.T) {
	s := &fakeSender{instant: true}
	p := newProducer(t, s)
	ctx := Context(context.Background(), p)
	for _, v := range [][2]float64{{1, 0}, {-1, 2}, {3, 2}, {math.NaN(), 2}, {1, math.Inf(1)}, {1, math.NaN()}} {
		if Report(ctx, v[0], v[1], "", nil) {
			t.Errorf("ReportProgress(%v) = true", v)
		}
	}
	if Report(ctx, 1, 2, "", map[string]any{"x": []any{}}) {
		t.Error("nested metrics accepted")
	}
	if r := p.Stats(); r.Offered != 0 || s.n() != 0 {
		t.Fatalf("invalid values were counted or sent: %+v", r)
	}
}

// Run in a bubble, so synctest.Wait stands for "the producer has handled
// every acknowledgement released so far".
func TestProducerCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &fakeSender{}
		p := newProducer(t, s)
		ctx := Context(context.Background(), p)
		p.Started(detail.NodeExecution{RayTaskID: str("t1")})

		// First value: sent at once (send 1); the ack stays outstanding.
		if !Report(ctx, 1, 10, "one", nil) {
			t.Fatal("first report refused")
		}
		// While the ack is pending, values replace the one slot: no sends.
		for i := 2; i <= 5; i++ {
			if !Report(ctx, float64(i), 10, "", map[string]any{"i": i}) {
				t.Fatal("report refused")
			}
		}
		if s.n() != 2 {
			t.Fatalf("%d sends while the ack was pending, want 2 (STARTED + one value)", s.n())
		}
		r := p.Stats()
		if r.Offered != 5 || r.Submitted != 1 || r.Superseded != 3 || r.PendingAcknowledgements != 1 {
			t.Fatalf("stats %+v", r)
		}
		// Lifecycle events are never coalesced, even with an ack pending.
		p.Started(detail.NodeExecution{RayTaskID: str("t1")})
		if s.n() != 3 {
			t.Fatal("STARTED was held back")
		}
		// Releasing the ack submits the latest value (5).
		s.ack(1, nil)
		synctest.Wait() // the producer has taken the ack and pumped the slot
		if s.n() != 4 {
			t.Fatalf("%d sends after the ack, want 4 (the slot pumped once)", s.n())
		}
		if ap := s.event(t, 3).(*event.ApplicationProgress); ap.Payload.Current != 5 || string(ap.Payload.Metrics["i"]) != "5" {
			t.Fatalf("pumped %+v, want the latest value 5", ap.Payload)
		}
		// Ack pending again: two more values → one slot, one superseded.
		Report(ctx, 6, 10, "", nil)
		Report(ctx, 7, 10, "", nil)
		// Leaf exit: one handoff of 7, then COMPLETED, then the report.
		p.Complete()
		want := []Kind{KindStarted, KindApplicationProgress, KindStarted, KindApplicationProgress, KindApplicationProgress, KindCompleted, KindProducerReport}
		if got := s.kinds(t); !slices.Equal(got, want) {
			t.Fatalf("sends %v\nwant %v", got, want)
		}
		if ap := s.event(t, 4).(*event.ApplicationProgress); ap.Payload.Current != 7 {
			t.Fatalf("handoff carried %v, want 7", ap.Payload.Current)
		}
		rep := s.event(t, 6).(*event.ProducerReport).Payload
		checkSums(t, rep)
		wantRep := event.ProducerReportPayload{SchemaVersion: 1, Offered: 7, Submitted: 3, Superseded: 4, Acknowledged: 1, PendingAcknowledgements: 2, TerminalHandoff: event.TerminalHandoffSubmitted}
		if rep != wantRep {
			t.Fatalf("report %+v\nwant   %+v", rep, wantRep)
		}
		// After exit: Report refuses, nothing more is sent, late acks do not
		// change the sealed report.
		if Report(ctx, 8, 10, "", nil) {
			t.Fatal("report after exit accepted")
		}
		s.ack(3, nil)
		s.ack(4, ErrActorRejected)
		synctest.Wait() // the producer has taken both acks
		if p.Stats() != wantRep || s.n() != 7 {
			t.Fatal("sealed report changed or more events sent")
		}
	})
}

func TestProducerFastAcksSendEveryValue(t *testing.T) {
	s := &fakeSender{instant: true}
	p := newProducer(t, s)
	ctx := Context(context.Background(), p)
	for i := 1; i <= 50; i++ {
		Report(ctx, float64(i), 50, "", nil)
		testwait.Until(t, 5*time.Second, "ack", func() bool { return p.Stats().PendingAcknowledgements == 0 })
	}
	p.Complete()
	r := p.Stats()
	if r.Offered != 50 || r.Submitted != 50 || r.Acknowledged != 50 || r.TerminalHandoff != event.TerminalHandoffNotNeeded {
		t.Fatalf("%+v", r)
	}
	checkSums(t, r)
}

func TestProducerAckOutcomesAndSettle(t *testing.T) {
	s := &fakeSender{}
	p, _ := NewProducer(ProducerConfig{Encoder: newEnc(t), NodeID: "a", Sender: s, SettleWait: 5 * time.Second})
	ctx := Context(context.Background(), p)
	Report(ctx, 1, 3, "", nil) // send 0
	Report(ctx, 2, 3, "", nil) // slot
	s.ack(0, ErrActorRejected)
	testwait.Until(t, 5*time.Second, "pump", func() bool { return s.n() == 2 })
	Report(ctx, 3, 3, "", nil) // slot
	s.ack(1, errors.New("ray: actor died"))
	testwait.Until(t, 5*time.Second, "pump", func() bool { return s.n() == 3 })
	go func() {
		testwait.Until(t, 5*time.Second, "FAILED sent", func() bool { return s.n() == 4 })
		s.ack(2, nil)
	}()
	p.Fail("boom")
	r := p.Stats()
	want := event.ProducerReportPayload{SchemaVersion: 1, Offered: 3, Submitted: 3, Acknowledged: 1, ActorRejected: 1, AckFailed: 1, TerminalHandoff: event.TerminalHandoffNotNeeded}
	if r != want {
		t.Fatalf("%+v", r)
	}
	if got := s.kinds(t); !slices.Equal(got, []Kind{KindApplicationProgress, KindApplicationProgress, KindApplicationProgress, KindFailed, KindProducerReport}) {
		t.Fatal(got)
	}
	if f := s.event(t, 3).(*event.Failed); f.Payload.Error != "boom" {
		t.Fatal(f.Payload)
	}
}

// switchSender fails every send after the first n.
type switchSender struct {
	fakeSender
	after int
	err   error
}

func (s *switchSender) Send(w []byte) (<-chan error, error) {
	if s.n() >= s.after {
		return nil, s.err
	}
	return s.fakeSender.Send(w)
}

func TestProducerHandoffOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want event.TerminalHandoff
	}{
		{ErrActorUnavailable, event.TerminalHandoffActorUnavailable},
		{errors.New("transport"), event.TerminalHandoffFailed},
	} {
		s := &switchSender{after: 1, err: tc.err}
		p := newProducer(t, s)
		ctx := Context(context.Background(), p)
		Report(ctx, 1, 2, "", nil) // sent, ack pending
		Report(ctx, 2, 2, "", nil) // slot
		p.Complete()               // the handoff fails
		r := p.Stats()
		if r.TerminalHandoff != tc.want || r.LocallyDropped != 1 || r.Submitted != 1 {
			t.Fatalf("%v: %+v", tc.err, r)
		}
		checkSums(t, r)
		if p.Lost() != 2 { // COMPLETED and the report were refused too
			t.Fatalf("lost %d", p.Lost())
		}
	}
	// A refused first send drops the value locally and reports false.
	s := &fakeSender{fail: ErrActorUnavailable}
	p := newProducer(t, s)
	if Report(Context(context.Background(), p), 1, 2, "", nil) {
		t.Fatal("dropped value reported true")
	}
	if r := p.Stats(); r.Offered != 1 || r.LocallyDropped != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestProducerBoundsMessageAndLabel(t *testing.T) {
	s := &fakeSender{instant: true}
	p, _ := NewProducer(ProducerConfig{Encoder: newEnc(t), NodeID: "a", Label: strings.Repeat("l", 513), Sender: s})
	ctx := Context(context.Background(), p)
	Report(ctx, 1, 2, strings.Repeat("m", 2049), nil)
	testwait.Until(t, 5*time.Second, "send", func() bool { return s.n() == 1 })
	ap := s.event(t, 0).(*event.ApplicationProgress)
	if *ap.Payload.Message != "<omitted:oversized>" || !ap.Truncated {
		t.Fatalf("%+v", ap)
	}
	p.Complete()
	c := s.event(t, 1).(*event.Completed)
	if c.Payload.Label != "<omitted:oversized>" || !c.Truncated {
		t.Fatalf("%+v", c)
	}
	// At the caps nothing is truncated.
	s2 := &fakeSender{instant: true}
	p2, _ := NewProducer(ProducerConfig{Encoder: newEnc(t), NodeID: "a", Label: strings.Repeat("l", 512), Sender: s2})
	Report(Context(context.Background(), p2), 1, 2, strings.Repeat("m", 2048), nil)
	p2.Complete()
	if ap := s2.event(t, 0).(*event.ApplicationProgress); ap.Truncated || len(*ap.Payload.Message) != 2048 {
		t.Fatal("message at the cap was truncated")
	}
	if c := s2.event(t, 1).(*event.Completed); c.Truncated || len(c.Payload.Label) != 512 {
		t.Fatal("label at the cap was truncated")
	}
}

func TestProducerSaturates(t *testing.T) {
	s := &fakeSender{instant: true}
	p := newProducer(t, s)
	p.mu.Lock()
	p.c.Offered = math.MaxInt64
	p.mu.Unlock()
	Report(Context(context.Background(), p), 1, 2, "", nil)
	p.Complete()
	r := p.Stats()
	if !r.Saturated || r.Offered != math.MaxInt64 {
		t.Fatalf("%+v", r)
	}
	// The saturated report still encodes and decodes (sums unchecked).
	if _, ok := s.event(t, s.n()-1).(*event.ProducerReport); !ok {
		t.Fatal("no report")
	}
}

func TestProducerConcurrentReports(t *testing.T) {
	s := &fakeSender{}
	p := newProducer(t, s)
	ctx := Context(context.Background(), p)
	done := make(chan struct{})
	go func() { // acknowledge everything, slowly
		defer close(done)
		wctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		for i := 0; ; i++ {
			// Not Until: t.Fatalf may only be called from the test's goroutine.
			if err := testwait.Poll(wctx, testwait.Interval, fmt.Sprintf("send %d", i), func(context.Context) (bool, error) { return s.n() > i, nil }); err != nil {
				t.Error(err)
				return
			}
			if k := s.kinds(t)[i]; k == KindProducerReport {
				return
			}
			time.Sleep(100 * time.Microsecond)
			s.ack(i, nil)
		}
	}()
	var wg = make(chan struct{})
	for g := range 4 {
		go func() {
			for i := range 200 {
				Report(ctx, float64(i), 200, "", map[string]any{"g": g})
			}
			wg <- struct{}{}
		}()
	}
	for range 4 {
		<-wg
	}
	p.Complete()
	<-done
	r := p.Stats()
	checkSums(t, r)
	if r.Offered != 800 || r.Submitted >= 800 || r.Superseded == 0 {
		t.Fatalf("%+v", r)
	}
}
