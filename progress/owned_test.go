package progress

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/topology"
)

// TestBuiltEventIsTheDecodedEvent: every event the Encoder hands to an
// in-process collector with its decoded form (ingestOwn skips the strict
// decode and the canonical check) is exactly what event.DecodeEvent makes
// of its bytes, and the bytes are canonical, for each kind it builds,
// truncation and redaction included.
func TestBuiltEventIsTheDecodedEvent(t *testing.T) {
	e := newEnc(t)
	long := strings.Repeat("é", 3000)
	path := "pkg.Step"
	task := "task-1"
	one, ten := int64(1), int64(10)
	errText := "boom: password=hunter2 " + long
	var edges []topology.Edge
	for i := range 33 {
		edges = append(edges, topology.Edge{Source: "0", Target: fmt.Sprintf("0.%d", i)})
	}
	type built struct {
		wire []byte
		ev   event.Event
		err  error
	}
	b := func(w []byte, ev event.Event, err error) built { return built{w, ev, err} }
	cases := map[string]built{
		"initialized": b(e.initializedEv(event.Plan{PlanFormat: "rayflow.workflow-plan", PlanFormatVersion: 1,
			Fingerprint: "sha256:" + strings.Repeat("a", 64), DefinitionName: "f", DefinitionRevision: "sha256:" + strings.Repeat("b", 64), TopologyClass: event.PlanTopologyClassStatic, NodeCount: 3})),
		"node_registered":         b(e.nodeRegisteredEv("0.1", long, &path, map[string]json.RawMessage{"env_vars": json.RawMessage(`{"API_TOKEN":"s3cret","X":"1"}`)}, nil)),
		"node_registered/no path": b(e.nodeRegisteredEv("0.2", "l", nil, nil, map[string]json.RawMessage{"num_cpus": json.RawMessage("1")})),
		"map_registered":          b(e.mapRegisteredEv("0.3", "map", &one, &ten)),
		"map_registered/no limit": b(e.mapRegisteredEv("0.3", "map", nil, nil)),
		"submitted":               b(e.submittedEv("0.1", "l", "abc123")),
		"started":                 b(e.startedEv("0.1", "l", detail.NodeExecution{})),
		"started/exec":            b(e.startedEv("0.1", "l", detail.NodeExecution{RayTaskID: &task, AssignedResources: map[string]float64{"CPU": 1}})),
		"map_progress":            b(e.mapProgressEvent("0.3", "map", 5, 2, 0, true)),
		"output_preview/pending":  b(e.outputPreviewEv("0.1", previewDetail(PreviewEnvelope{SchemaVersion: 1, Availability: PreviewPending}))),
		"output_preview/value":    b(e.outputPreviewEv("0.1", previewDetail(PreviewEnvelope{SchemaVersion: 1, Availability: PreviewAvailable, Value: map[string]any{"n": 1, "s": "x"}}))),
		"completed":               b(e.completedEv("0.1", "l")),
		"failed":                  b(e.failedEv("0.1", "l", errText)),
		"node_settled":            b(e.nodeSettledEv(event.NodeSettledPayload{NodeID: "0.1", State: event.SettledStateFailed, Error: &errText, OutputPreview: previewDetail(PreviewEnvelope{SchemaVersion: 1, Availability: PreviewUnavailable})})),
		"producer_report":         b(e.producerReportEv(event.ProducerReportPayload{SchemaVersion: 1, TerminalHandoff: event.TerminalHandoffNotNeeded, Offered: 3, Submitted: 2, Superseded: 1, Acknowledged: 2})),
	}
	batches, evs, err := e.edgesRegisteredEv(edges)
	if err != nil || len(batches) != 2 || len(evs) != 2 {
		t.Fatalf("edges: %d batches, %d events, %v", len(batches), len(evs), err)
	}
	for i := range batches {
		cases[fmt.Sprintf("edges_registered/%d", i)] = built{batches[i], evs[i], nil}
	}
	for name, c := range cases {
		if c.err != nil {
			t.Errorf("%s: %v", name, c.err)
			continue
		}
		dec, err := event.DecodeEvent(c.wire)
		if err != nil {
			t.Errorf("%s: the bytes do not decode: %v", name, err)
			continue
		}
		if c.ev == nil {
			t.Errorf("%s: no event", name)
			continue
		}
		if d := cmp.Diff(dec, c.ev); d != "" {
			t.Errorf("%s: built event differs from the decoded one (-decoded +built):\n%s", name, d)
		}
		if out, _ := newCol(t, e.prof).decode(c.wire); out.Err != nil {
			t.Errorf("%s: the collector refuses the bytes: %v", name, out.Err)
		}
	}
	if ev := cases["failed"].ev.(*event.Failed); !ev.Truncated || strings.Contains(ev.Payload.Error, "hunter2") {
		t.Errorf("failed: truncated %v, error %.60q", ev.Truncated, ev.Payload.Error)
	}
}

// TestInProcessLeafEventsOwned: a Run takes owned events, and an owned
// event gets the same outcome as its bytes decoded.
func TestInProcessLeafEventsOwned(t *testing.T) {
	e := newEnc(t)
	wire, ev, err := e.startedEv("0.1", "l", detail.NodeExecution{})
	if err != nil {
		t.Fatal(err)
	}
	var s Sender = &Run{}
	if _, ok := s.(ownSender); !ok {
		t.Fatal("Run does not take owned events")
	}
	owned := newCol(t, e.prof).ingestEvent(wire, ev)
	decoded := newCol(t, e.prof).ingestEvent(wire, nil)
	if owned.Kind != KindStarted || owned.Accepted != decoded.Accepted || owned.Reason != decoded.Reason {
		t.Errorf("owned %+v, decoded %+v", owned, decoded)
	}
}
