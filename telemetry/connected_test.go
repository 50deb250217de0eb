package telemetry_test

import (
	"testing"

	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
)

// Connected fails for a span whose chain stops before the root.
func TestConnectedFails(t *testing.T) {
	t.Parallel()
	spans := []telemetrytest.Span{
		{Name: telemetry.SpanAttempt, TraceID: "t", SpanID: "a"},
		{Name: telemetry.SpanRun, TraceID: "t", SpanID: "r", Parent: "a"},
		{Name: telemetry.SpanLeaf, TraceID: "t", SpanID: "l1", Parent: "r"},
		{Name: telemetry.SpanLeaf, TraceID: "t", SpanID: "l2", Parent: "missing"},
	}
	if _, err := telemetrytest.Connected(spans[:3], telemetry.SpanAttempt, telemetry.SpanLeaf); err != nil {
		t.Fatal(err)
	}
	if _, err := telemetrytest.Connected(spans, telemetry.SpanAttempt, telemetry.SpanLeaf); err == nil {
		t.Fatal("a leaf with a missing parent passed")
	}
}
