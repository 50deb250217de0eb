package progress

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

var testID = common.RunIdentity{SchemaVersion: 1, RunID: "2eb22ff3-5fd2-43a0-834c-d920737b584c", TaskExecutionPK: 42, AttemptNumber: 2, ExecutionGeneration: 5}

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// clock is a deterministic clock advancing 1 ms per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func fixedCPU() time.Duration { return 0 }

func newEnc(t testing.TB) *Encoder {
	t.Helper()
	e, err := NewEncoder(testID, newClock().Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newCol(t testing.TB, prof limits.Profile) *collector {
	t.Helper()
	c, err := newCollector(collectorConfig{Identity: testID, Profile: prof, Now: newClock().Now, CPU: fixedCPU})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// ingestOK ingests and fails the test unless accepted.
func ingestOK(t testing.TB, c *collector, wire []byte) Outcome {
	t.Helper()
	o := c.Ingest(wire)
	if !o.Accepted {
		t.Fatalf("rejected %s: %s/%s: %v", o.Kind, o.Reason, o.Bucket, o.Err)
	}
	return o
}

func wantReject(t testing.TB, o Outcome, reason event.ErrorReason, bucket Bucket) {
	t.Helper()
	if o.Accepted || o.Reason != reason || o.Bucket != bucket {
		t.Fatalf("got accepted=%v %s/%s (%v), want rejected %s/%s", o.Accepted, o.Reason, o.Bucket, o.Err, reason, bucket)
	}
}

func nodeID(i int) string { return "n" + pad(i) }

func pad(i int) string {
	s := strings.Repeat("0", 6) + itoa(i)
	return s[len(s)-6:]
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func register(t testing.TB, e *Encoder, c *collector, id string) {
	t.Helper()
	ingestOK(t, c, must(e.NodeRegistered(id, "label "+id, nil, nil, nil)))
}

// fakeSender records sends; acknowledgements are released by the test.
type fakeSender struct {
	mu      sync.Mutex
	sent    [][]byte
	acks    []chan error
	fail    error
	instant bool // acknowledge at once (nil)
}

func (f *fakeSender) Send(w []byte) (<-chan error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	ch := make(chan error, 1)
	if f.instant {
		ch <- nil
	}
	f.sent = append(f.sent, w)
	f.acks = append(f.acks, ch)
	return ch, nil
}

func (f *fakeSender) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

func (f *fakeSender) ack(i int, err error) {
	f.mu.Lock()
	ch := f.acks[i]
	f.mu.Unlock()
	ch <- err
}

func (f *fakeSender) kinds(t testing.TB) []Kind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ks []Kind
	for _, w := range f.sent {
		ev, err := event.DecodeEvent(w)
		if err != nil {
			t.Fatalf("producer sent an invalid event: %v\n%s", err, w)
		}
		ks = append(ks, kindOf(ev))
	}
	return ks
}

func (f *fakeSender) event(t testing.TB, i int) event.Event {
	f.mu.Lock()
	w := f.sent[i]
	f.mu.Unlock()
	ev, err := event.DecodeEvent(w)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// loopSender delivers into a collector synchronously and acknowledges with
// its verdict.
type loopSender struct{ c *collector }

func (l loopSender) Send(w []byte) (<-chan error, error) {
	ch := make(chan error, 1)
	if o := l.c.Ingest(w); o.Accepted {
		ch <- nil
	} else {
		ch <- ErrActorRejected
	}
	return ch, nil
}

func str(s string) *string { return &s }
func i64(v int64) *int64   { return &v }

// rawEvent builds and canonically encodes a gen/event record by hand (to
// test the collector with payloads the Encoder would refuse to build).
func rawEvent(t testing.TB, kind Kind, payload any, id common.RunIdentity) []byte {
	t.Helper()
	m := map[string]any{
		"encoding": "identity", "kind": string(kind), "limits_profile": "v1",
		"occurred_at": "2026-07-01T12:00:00.500000Z", "payload": payload,
		"run_identity": id, "schema_version": 1, "truncated": false,
	}
	b, err := canonical.NoFold.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = detail.NodeStatePending
var _ = topology.NodeKindTask

func limitsMetrics() limits.MetricsProfile { return limits.MetricsV1 }
