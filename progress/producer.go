package progress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/sdk/redact"
)

// Sender submits encoded events to the run's collector (on Ray, the
// collector actor's handle; in tests, a fake).
type Sender interface {
	// Send submits one encoded event and returns without waiting for its
	// delivery. A non-nil error means the event was not submitted
	// (ErrActorUnavailable when there is no collector). Otherwise the
	// channel yields the acknowledgement exactly once: nil when the
	// collector accepted the event, an error wrapping ErrActorRejected when
	// it rejected it, any other error when the acknowledgement failed.
	Send(wire []byte) (<-chan error, error)
}

var (
	// ErrActorUnavailable is returned by a Sender that has no collector.
	ErrActorUnavailable = errors.New("progress: collector actor unavailable")
	// ErrActorRejected is wrapped by an acknowledgement the collector
	// refused (fence, limit or protocol).
	ErrActorRejected = errors.New("progress: collector rejected the event")
)

// ProducerConfig configures one leaf invocation's producer.
type ProducerConfig struct {
	// Encoder binds events to the run identity; required.
	Encoder *Encoder
	// NodeID and Label name the leaf's graph node.
	NodeID, Label string
	// Sender delivers events; required for a producer to exist.
	Sender Sender
	// Policy is the run's reporting policy; "" means full.
	Policy common.ReportingPolicy
	// MapItem is true inside a bounded-map item leaf, which is not a graph
	// node and reports nothing.
	MapItem bool
	// SettleWait bounds how long Complete and Fail wait for outstanding
	// acknowledgements before sealing the producer report (0: no wait).
	SettleWait time.Duration
}

// Producer is one leaf invocation's progress session and its Reporter
// (sdk.ReportProgress). A nil *Producer is valid: it reports false and
// sends nothing. Its methods are safe for concurrent use.
type Producer struct {
	enc        *Encoder
	nodeID     string
	label      string
	send       Sender
	own        ownSender // send itself when it takes this process's events as built
	settleWait time.Duration
	metrics    limits.MetricsProfile
	msgBytes   int64
	pol        *redact.Policy

	mu       sync.Mutex
	closed   bool // Complete or Fail began: Report refuses, the slot is not pumped
	sealed   bool // the report is built: acknowledgement outcomes no longer count
	inflight bool // one application-progress acknowledgement is outstanding
	slot     []byte
	c        event.ProducerReportPayload
	changed  chan struct{} // closed and replaced whenever an outcome is recorded
	lost     int64         // lifecycle and report events the sender refused
}

var _ Reporter = (*Producer)(nil)

// NewProducer returns the producer of one leaf invocation, or nil (and no
// error) when the leaf must not report: inside a bounded-map item, under the
// terminal_only, disabled or sampled policies, or without a Sender.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	if cfg.MapItem || cfg.Sender == nil || (cfg.Policy != "" && cfg.Policy != common.ReportingPolicyFull) {
		return nil, nil
	}
	if cfg.Encoder == nil {
		return nil, errors.New("progress: producer needs an Encoder")
	}
	if err := cfg.Encoder.nodeID(cfg.NodeID); err != nil {
		return nil, err
	}
	own, _ := cfg.Sender.(ownSender)
	return &Producer{
		own:        own,
		enc:        cfg.Encoder,
		nodeID:     cfg.NodeID,
		label:      cfg.Label,
		send:       cfg.Sender,
		settleWait: cfg.SettleWait,
		metrics:    limits.MetricsV1,
		msgBytes:   limits.ProfileV1.MessageBytes,
		pol:        cfg.Encoder.redact,
		c:          event.ProducerReportPayload{SchemaVersion: 1, TerminalHandoff: event.TerminalHandoffNotNeeded},
		changed:    make(chan struct{}),
	}, nil
}

// Context returns ctx carrying p as the leaf's progress reporter, or ctx
// unchanged when p is nil (so Report returns false).
func Context(ctx context.Context, p *Producer) context.Context {
	if p == nil {
		return ctx
	}
	return WithReporter(ctx, p)
}

// Report implements Reporter (sdk.ReportProgress). It validates and
// bounds the value
// (total > 0, 0 ≤ current ≤ total, both finite; message ≤ 2 KiB and
// redacted, "" meaning none; metrics per normalizeMetrics), then submits it
// or replaces the latest-value slot. It returns true when the value entered
// the session, false when it was invalid, arrived after the leaf's exit, or
// was dropped because the sender refused it. It never blocks on delivery.
func (p *Producer) Report(current, total float64, message string, metrics map[string]any) bool {
	if p == nil {
		return false
	}
	if math.IsNaN(current) || math.IsNaN(total) || math.IsInf(total, 0) || total <= 0 || current < 0 || current > total {
		return false
	}
	m, truncated, err := normalizeMetrics(metrics, p.metrics, p.pol)
	if err != nil {
		return false
	}
	pl := event.ApplicationProgressPayload{Current: current, Total: total, Metrics: m, NodeID: p.nodeID}
	if message != "" {
		s, t := boundText(message, p.msgBytes, p.pol)
		pl.Message, truncated = &s, truncated || t
	}
	wire, encErr := p.enc.Encode(KindApplicationProgress, &pl, truncated)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.add(&p.c.Offered, 1)
	if encErr != nil {
		p.add(&p.c.LocallyDropped, 1)
		return false
	}
	if p.inflight {
		if p.slot != nil {
			p.add(&p.c.Superseded, 1)
		}
		p.slot = wire
		return true
	}
	ch, ok := p.submitLocked(wire)
	if ok {
		go p.await(ch)
	}
	return ok
}

// add increments a counter, saturating.
func (p *Producer) add(c *int64, d int64) {
	if satAdd(c, d) {
		p.c.Saturated = true
	}
}

// submitLocked sends one application-progress value and counts it.
func (p *Producer) submitLocked(wire []byte) (<-chan error, bool) {
	ch, err := p.send.Send(wire)
	if err != nil || ch == nil {
		p.add(&p.c.LocallyDropped, 1)
		return nil, false
	}
	p.add(&p.c.Submitted, 1)
	p.add(&p.c.PendingAcknowledgements, 1)
	p.inflight = true
	return ch, true
}

// recordLocked counts one acknowledgement outcome (unless sealed) and wakes
// waiters.
func (p *Producer) recordLocked(err error) {
	if !p.sealed {
		if p.c.PendingAcknowledgements > 0 && !p.c.Saturated {
			p.c.PendingAcknowledgements--
		}
		switch {
		case err == nil:
			p.add(&p.c.Acknowledged, 1)
		case errors.Is(err, ErrActorRejected):
			p.add(&p.c.ActorRejected, 1)
		default:
			p.add(&p.c.AckFailed, 1)
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// await waits for the outstanding acknowledgement, then submits the slot's
// value if one is waiting and the leaf is still running.
func (p *Producer) await(ch <-chan error) {
	for {
		err := <-ch
		p.mu.Lock()
		p.recordLocked(err)
		p.inflight = false
		if p.slot == nil || p.closed {
			p.mu.Unlock()
			return
		}
		wire := p.slot
		p.slot = nil
		next, ok := p.submitLocked(wire)
		p.mu.Unlock()
		if !ok {
			return
		}
		ch = next
	}
}

// awaitHandoff records the terminal handoff's acknowledgement.
func (p *Producer) awaitHandoff(ch <-chan error) {
	err := <-ch
	p.mu.Lock()
	p.recordLocked(err)
	p.mu.Unlock()
}

// Started sends the leaf's STARTED event (never coalesced).
func (p *Producer) Started(exec detail.NodeExecution) {
	if p == nil {
		return
	}
	p.lifecycle(p.enc.startedEv(p.nodeID, p.label, exec))
}

// Complete ends the session after success: the latest-value handoff, then
// COMPLETED, then the producer report.
func (p *Producer) Complete() {
	if p == nil {
		return
	}
	p.finish(func() ([]byte, event.Event, error) { return p.enc.completedEv(p.nodeID, p.label) })
}

// Fail ends the session after failure: the latest-value handoff, then
// FAILED with the classified error text, then the producer report.
func (p *Producer) Fail(errText string) {
	if p == nil {
		return
	}
	p.finish(func() ([]byte, event.Event, error) { return p.enc.failedEv(p.nodeID, p.label, errText) })
}

// ownSender is a Sender in this process that takes an event this
// process's Encoder built together with its decoded form, skipping the
// strict decode and canonical check that bytes from elsewhere need
// (progress.Run, for in-process leaves).
type ownSender interface {
	sendOwn(wire []byte, ev event.Event) (<-chan error, error)
}

// lifecycle sends a structural or lifecycle event; its acknowledgement is
// not tracked and a refusal is only counted (it never fails the leaf).
func (p *Producer) lifecycle(wire []byte, ev event.Event, err error) {
	if err == nil {
		var ch <-chan error
		if p.own != nil && ev != nil {
			ch, err = p.own.sendOwn(wire, ev)
		} else {
			ch, err = p.send.Send(wire)
		}
		if ch == nil && err == nil {
			err = ErrActorUnavailable
		}
	}
	if err != nil {
		p.mu.Lock()
		satAdd(&p.lost, 1)
		p.mu.Unlock()
	}
}

func (p *Producer) finish(terminal func() ([]byte, event.Event, error)) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.slot != nil {
		wire := p.slot
		p.slot = nil
		ch, err := p.send.Send(wire)
		switch {
		case err == nil && ch != nil:
			p.add(&p.c.Submitted, 1)
			p.add(&p.c.PendingAcknowledgements, 1)
			p.c.TerminalHandoff = event.TerminalHandoffSubmitted
			go p.awaitHandoff(ch)
		case errors.Is(err, ErrActorUnavailable) || err == nil:
			p.add(&p.c.LocallyDropped, 1)
			p.c.TerminalHandoff = event.TerminalHandoffActorUnavailable
		default:
			p.add(&p.c.LocallyDropped, 1)
			p.c.TerminalHandoff = event.TerminalHandoffFailed
		}
	}
	p.mu.Unlock()

	p.lifecycle(terminal())
	p.settle()

	p.mu.Lock()
	p.sealed = true
	r := p.c
	p.mu.Unlock()
	p.lifecycle(p.enc.producerReportEv(r))
}

// settle waits up to settleWait for outstanding acknowledgements.
func (p *Producer) settle() {
	if p.settleWait <= 0 {
		return
	}
	t := time.NewTimer(p.settleWait)
	defer t.Stop()
	for {
		p.mu.Lock()
		pending, ch := p.c.PendingAcknowledgements, p.changed
		p.mu.Unlock()
		if pending == 0 {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// Stats returns the session's counters as they stand (after Complete or
// Fail: as sealed in the producer report).
func (p *Producer) Stats() event.ProducerReportPayload {
	if p == nil {
		return event.ProducerReportPayload{SchemaVersion: 1, TerminalHandoff: event.TerminalHandoffNotNeeded}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c
}

// Lost returns how many lifecycle and report events the sender refused.
func (p *Producer) Lost() int64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *Producer) String() string {
	if p == nil {
		return "progress.Producer(nil)"
	}
	return fmt.Sprintf("progress.Producer(%s)", p.nodeID)
}
