package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// TestEncoderMatchesGeneratedRecords: the hand-assembled envelope is
// byte-identical to canonical.NoFold.Marshal of the decoded gen/event record
// and passes its strict decoder.
func TestEncoderMatchesGeneratedRecords(t *testing.T) {
	e := newEnc(t)
	wires := [][]byte{
		must(e.Initialized(testPlan)),
		must(e.NodeRegistered("a", "A", str("pkg.A"), map[string]json.RawMessage{"mode": json.RawMessage(`"inherit"`), "env_vars": json.RawMessage(`{"API_TOKEN":"x","HOME":"/h"}`)}, nil)),
		must(e.MapRegistered("m", "M", nil, i64(3))),
		must(e.Submitted("a", "A", "task-1")),
		must(e.Started("a", "A", detail.NodeExecution{})),
		must(e.MapProgress("m", "M", 2, 1, false)),
		must(e.OutputPreview("a", detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityTooLarge, Value: json.RawMessage("null")})),
		must(e.Completed("a", "A")),
		must(e.Failed("a", "A", "boom")),
		must(e.NodeSettled(event.NodeSettledPayload{NodeID: "a", State: event.SettledStateSucceeded, OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: json.RawMessage("null")}})),
		must(e.ProducerReport(event.ProducerReportPayload{SchemaVersion: 1, TerminalHandoff: event.TerminalHandoffNotNeeded})),
	}
	wires = append(wires, must2(e.EdgesRegistered([]topology.Edge{{Source: "a", Target: "m"}}))...)
	for _, w := range wires {
		ev, err := event.DecodeEvent(w)
		if err != nil {
			t.Fatalf("%v\n%s", err, w)
		}
		again, err := canonical.NoFold.Marshal(ev)
		if err != nil || !bytes.Equal(again, w) {
			t.Fatalf("encoder bytes differ from the record:\n%s\n%s", w, again)
		}
	}
	// Metadata is redacted before it leaves the leaf.
	if !bytes.Contains(wires[1], []byte(`"API_TOKEN":"[REDACTED]"`)) || !bytes.Contains(wires[1], []byte(`"truncated":true`)) {
		t.Fatalf("%s", wires[1])
	}
	// Identity-like text is refused, not repaired.
	for _, id := range []string{"", strings.Repeat("n", 257), "my-secret"} {
		if _, err := e.Completed(id, "x"); !errors.Is(err, ErrInvalidIdentity) {
			t.Errorf("node id %.10q: %v", id, err)
		}
	}
	if _, err := e.Completed(strings.Repeat("n", 256), "x"); err != nil {
		t.Error(err)
	}
	// Metadata over depth 6 is replaced by {} and marked truncated.
	deep := json.RawMessage(`[[[[[["x"]]]]]]`) // 6 containers below the object: depth 7
	if m, tr := redactMetadata(map[string]json.RawMessage{"d": deep}, limitsMetrics(), nil); len(m) != 0 || !tr {
		t.Fatal(m)
	}
	ok := json.RawMessage(`[[[[["x"]]]]]`)
	if m, tr := redactMetadata(map[string]json.RawMessage{"d": ok}, limitsMetrics(), nil); len(m) != 1 || tr {
		t.Fatal(m)
	}
}
