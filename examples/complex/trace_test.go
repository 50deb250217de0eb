package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rayflow/rayflow/durable"
	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// spans records the spans of this test process (the coordinator's side).
var (
	spans     = tracetest.NewInMemoryExporter()
	recording sync.Once
)

func recordSpans() {
	recording.Do(func() { otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))) })
}

// TestDurableTraceConnected: a durable run of the complex workflow is one
// trace: every plan node, map item and leaf span's parent chain reaches
// the attempt's span, and the spans carry the run identity.
func TestDurableTraceConnected(t *testing.T) {
	checkTrace(t, "")
}

// checkTrace runs the workflow as a durable task (on engine, if any) and
// checks its trace: the coordinator's spans from memory, the leaf
// processes' from file (when not "").
func checkTrace(t *testing.T, file string, engine ...sdk.Engine) map[string]int {
	t.Helper()
	recordSpans()
	task, _, _ := durableRun(t, Request{FastItems: 4, SlowItems: 2, FastWork: 5 * time.Millisecond, SlowWork: 10 * time.Millisecond}, 1, engine...)
	if task.State != durable.StateSucceeded {
		t.Fatalf("task %s: %s", task.State, task.ErrorMessage)
	}
	all := telemetrytest.FromStubs(spans.GetSpans())
	if file != "" {
		leaves, err := telemetrytest.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, leaves...)
	}
	tr := telemetrytest.Trace(all, telemetry.SpanAttempt, string(telemetry.AttrTaskID), task.ID)
	if tr == nil {
		t.Fatalf("no attempt span for task %s among %d spans", task.ID, len(all))
	}
	counts, err := telemetrytest.Connected(tr, telemetry.SpanAttempt, telemetry.SpanRun, telemetry.SpanNode, telemetry.SpanItem, telemetry.SpanLeaf)
	if err != nil {
		t.Fatal(err)
	}
	// Plan nodes: the chain, build_config, the group, two branch chains,
	// each with its build, map and summarize, and summarize_workflow = 12;
	// map items: 4 + 2.
	if counts[telemetry.SpanRun] != 1 || counts[telemetry.SpanNode] != 12 || counts[telemetry.SpanItem] != 6 {
		t.Fatalf("spans: %v", counts)
	}
	for _, s := range tr {
		if s.Name == telemetry.SpanLeaf {
			if s.Attrs[string(telemetry.AttrRayTaskID)] == "" || s.Attrs[string(telemetry.AttrNodeID)] == "" || s.Error {
				t.Errorf("leaf span %v", s.Attrs)
			}
			continue
		}
		if s.Name == telemetry.SpanAttempt {
			continue
		}
		if s.Attrs[string(telemetry.AttrRunID)] != task.RunID || s.Error {
			t.Errorf("span %s (%v): run id %q, want %q", s.Name, s.Attrs, s.Attrs[string(telemetry.AttrRunID)], task.RunID)
		}
		if s.Name == telemetry.SpanRun && s.Attrs[string(telemetry.AttrFingerprint)] != task.PlanFingerprint {
			t.Errorf("run span fingerprint %q, want %q", s.Attrs[string(telemetry.AttrFingerprint)], task.PlanFingerprint)
		}
	}
	t.Logf("trace of task %s: %v", task.ID, counts)
	return counts
}

// The same on the shared Ray cluster (RAYFLOW_RAY_ADDRESS, make ray-up):
// the leaves' spans come from the leaf processes on the Ray workers,
// through RAYFLOW_TRACES_FILE (the engine forwards it to the job's
// workers), and each is a child of its node's span in the coordinator.
func TestDurableTraceConnectedOnRay(t *testing.T) {
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if testing.Short() || addr == "" {
		t.Skip("needs Ray (RAYFLOW_RAY_ADDRESS) and not -short")
	}
	file := filepath.Join(t.TempDir(), "leaf-spans.jsonl")
	t.Setenv(tracing.TracesFileEnv, file)
	e, err := rayengine.New(t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	counts := checkTrace(t, file, e)
	// Leaves: build_config, both branches' build and summarize, the six
	// map items and summarize_workflow.
	if counts[telemetry.SpanLeaf] != 12 {
		t.Fatalf("leaf spans: %v", counts)
	}
}
