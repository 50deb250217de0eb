package progress

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
)

// BenchmarkCollectorIngest: events per second through the collector (fence,
// decode, canonical check, limits, state) for typical application progress
// envelopes on registered nodes, with the real clocks.
func BenchmarkCollectorIngest(b *testing.B) {
	b.Run("process-cpu-clock", func(b *testing.B) { benchIngest(b, nil) })
	b.Run("no-cpu-clock", func(b *testing.B) { benchIngest(b, fixedCPU) })
}

func benchIngest(b *testing.B, cpu func() time.Duration) {
	e := newEnc(b)
	c, _ := newCollector(collectorConfig{Identity: testID, Profile: limits.ProfileTerminalV1, CPU: cpu})
	const nodes = 256
	for i := range nodes {
		c.Ingest(must(e.NodeRegistered(nodeID(i), "leaf", nil, nil, nil)))
	}
	wires := make([][]byte, 1024)
	var size int
	for i := range wires {
		wires[i] = must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{
			Current: float64(i), Total: 1024, Message: str("Normalizing rows"), NodeID: nodeID(i % nodes),
			Metrics: map[string]json.RawMessage{"last_row": json.RawMessage(itoa(i)), "rate": json.RawMessage("12.5")}}, false))
		size += len(wires[i])
	}
	b.SetBytes(int64(size / len(wires)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if o := c.Ingest(wires[i%len(wires)]); !o.Accepted {
			b.Fatal(o.Err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCollectorSnapshot: building the schema-v2 snapshot of 256 nodes.
func BenchmarkCollectorSnapshot(b *testing.B) {
	e := newEnc(b)
	c, _ := newCollector(collectorConfig{Identity: testID, Profile: limits.ProfileTerminalV1})
	for i := range 256 {
		c.Ingest(must(e.NodeRegistered(nodeID(i), "leaf", nil, nil, nil)))
		c.Ingest(must(e.Encode(KindApplicationProgress, &event.ApplicationProgressPayload{Current: 1, Total: 2, NodeID: nodeID(i), Metrics: map[string]json.RawMessage{}}, false)))
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Snapshot()
	}
}

// nopSender acknowledges at once without delivering anywhere.
type nopSender struct{}

func (nopSender) Send([]byte) (<-chan error, error) {
	ch := make(chan error, 1)
	ch <- nil
	return ch, nil
}

// blockedSender never acknowledges: every Report after the first only
// replaces the latest-value slot.
type blockedSender struct{}

func (blockedSender) Send([]byte) (<-chan error, error) { return make(chan error, 1), nil }

func benchReport(b *testing.B, s Sender, metrics map[string]any) {
	p, _ := NewProducer(ProducerConfig{Encoder: newEnc(b), NodeID: "0.1.m0", Label: "leaf", Sender: s})
	ctx := Context(context.Background(), p)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Report(ctx, float64(i%100), 100, "Normalizing rows", metrics)
	}
}

// BenchmarkProducerReport: the leaf-side cost of one ReportProgress call
// (validation, redaction, canonical envelope, slot or submit).
func BenchmarkProducerReport(b *testing.B) {
	m := map[string]any{"last_row": 100, "rate": 12.5, "stage": "normalize"}
	b.Run("slot/3-metrics", func(b *testing.B) { benchReport(b, blockedSender{}, m) })
	b.Run("slot/no-metrics", func(b *testing.B) { benchReport(b, blockedSender{}, nil) })
	b.Run("instant-ack/3-metrics", func(b *testing.B) { benchReport(b, nopSender{}, m) })
	b.Run("absent", func(b *testing.B) {
		ctx := Context(context.Background(), nil)
		for b.Loop() {
			Report(ctx, 1, 2, "x", m)
		}
	})
}

// BenchmarkRunMap: one map-progress report (Run.Map after each finished
// item, as both engines call it): an update of the map's counters; the
// canonical event and its ingestion come with the next flush
// (BenchmarkRunMapFold).
func BenchmarkRunMap(b *testing.B) {
	r, err := Start(context.Background(), RunConfig{Identity: runID, Root: testGraph(),
		Plan: PlanInfo{Fingerprint: "sha256:" + strings.Repeat("0", 63) + "1", DefinitionName: "workflow:A", SelectedStrategy: "local"}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Finish(context.Background(), nil)
	if !r.Full() {
		b.Fatal("the run's progress is not full")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Map(MapCounters{Node: "0.1", Admitted: i + 64, InFlight: 64, Completed: i})
	}
}

// BenchmarkRunMapFold: one report followed by a fold of the map's
// counters (what a flush costs per changed map): the canonical event and
// its ingestion.
func BenchmarkRunMapFold(b *testing.B) {
	r, err := Start(context.Background(), RunConfig{Identity: runID, Root: testGraph(),
		Plan: PlanInfo{Fingerprint: "sha256:" + strings.Repeat("0", 63) + "1", DefinitionName: "workflow:A", SelectedStrategy: "local"}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Finish(context.Background(), nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Map(MapCounters{Node: "0.1", Admitted: i + 64, InFlight: 64, Completed: i})
		r.flushMaps()
	}
}
