package rayjob_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rayflow/rayflow/durable"
	complexwf "github.com/rayflow/rayflow/examples/complex/workflow"
	recoverywf "github.com/rayflow/rayflow/examples/recovery/workflow"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// The worker side knows the showcase flows the jobs of testdata/showcaseapp run.
func init() {
	durable.Register(complexwf.FlowName, complexwf.Workflow)
	durable.Register(recoverywf.FlowName, recoverywf.Workflow)
}

var showcase struct {
	once sync.Once
	exe  string
	err  error
	out  []byte
}

// showcaseApp builds testdata/showcaseapp once, next to appBinary (in
// the tests' temporary directory).
func showcaseApp(t *testing.T) string {
	t.Helper()
	if testing.Short() || appBinary == "" {
		t.Skip("needs Ray")
	}
	showcase.once.Do(func() {
		showcase.exe = filepath.Join(filepath.Dir(appBinary), "showcaseapp")
		showcase.out, showcase.err = exec.Command("go", "build", "-o", showcase.exe, "./testdata/showcaseapp").CombinedOutput()
	})
	if showcase.err != nil {
		t.Fatalf("building testdata/showcaseapp: %v\n%s", showcase.err, showcase.out)
	}
	return showcase.exe
}

// spans records the spans of this test process (the worker's side). The
// global tracer provider is set once per process: telemetry's tracer
// follows only the first provider set, so a provider set again by a later
// run of the test (-count) would never see a span.
var (
	spans     = tracetest.NewInMemoryExporter()
	recording sync.Once
)

// recordSpans installs the recording provider (once) and returns its
// exporter, emptied now and again when t ends.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	recording.Do(func() { otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))) })
	spans.Reset()
	t.Cleanup(spans.Reset)
	return spans
}

// TestRayJobTraceConnected: a durable ray_job attempt of examples/complex
// is one trace. The worker's attempt span (this process, in memory) is
// the parent of the job coordinator's run span (the traceparent travels
// in the job's entrypoint), and every plan node, map item and leaf span
// of the coordinator and of the leaf processes on the Ray workers (both
// written to RAYFLOW_TRACES_FILE, which the runner forwards from this
// process's environment to the job) chains up to the attempt span.
func TestRayJobTraceConnected(t *testing.T) {
	// Not parallel: the traces file is this process's environment, which
	// the runner forwards.
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	t.Setenv(tracing.TracesFileEnv, file)
	mem := recordSpans(t)

	e := newDurableApp(t, showcaseApp(t), "", time.Second)
	in, _ := json.Marshal(complexwf.Request{FastItems: 4, SlowItems: 2, FastWork: 5 * time.Millisecond, SlowWork: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	id, err := e.c.EnqueueJSON(ctx, complexwf.FlowName, in, durable.EnqueueOptions{Queue: "rayjob", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.c.Wait(ctx, id)
	if err != nil || task.State != durable.StateSucceeded || task.Runner != "ray_job" {
		t.Fatalf("task %v: %v\nworker log:\n%s", task, err, e.log.String())
	}
	// The worker records the attempt's end just after the transition.
	var all []telemetrytest.Span
	testwait.Until(t, 10*time.Second, "the worker's attempt span", func() bool {
		all = telemetrytest.FromStubs(mem.GetSpans())
		return telemetrytest.Trace(all, telemetry.SpanAttempt, string(telemetry.AttrTaskID), id) != nil
	})
	job, err := telemetrytest.ReadFile(file)
	if err != nil {
		t.Fatalf("the job wrote no spans: %v", err)
	}
	all = append(all, job...)
	tr := telemetrytest.Trace(all, telemetry.SpanAttempt, string(telemetry.AttrTaskID), id)
	if tr == nil {
		t.Fatalf("no attempt span for task %s among %d spans", id, len(all))
	}
	counts, err := telemetrytest.Connected(tr, telemetry.SpanAttempt, telemetry.SpanRun, telemetry.SpanNode, telemetry.SpanItem, telemetry.SpanLeaf)
	if err != nil {
		t.Fatalf("%v (%d spans of the job in %s)", err, len(job), file)
	}
	// The run in the coordinator; plan nodes: the chain, build_config,
	// the group, two branch chains with their build, map and summarize,
	// summarize_workflow = 12; items 4 + 2; leaves: build_config, both
	// branches' build and summarize, the six items, summarize_workflow.
	if counts[telemetry.SpanRun] != 1 || counts[telemetry.SpanNode] != 12 || counts[telemetry.SpanItem] != 6 || counts[telemetry.SpanLeaf] != 12 {
		t.Fatalf("spans: %v", counts)
	}
	for _, s := range tr {
		if s.Name == telemetry.SpanRun && (s.Attrs[string(telemetry.AttrRunID)] != task.RunID || s.Attrs[string(telemetry.AttrFingerprint)] != task.PlanFingerprint) {
			t.Errorf("run span %v: want run %s, plan %s", s.Attrs, task.RunID, task.PlanFingerprint)
		}
		if s.Error {
			t.Errorf("span %s %v: error %q", s.Name, s.Attrs, s.Status)
		}
	}
	t.Logf("trace of task %s: %v", id, counts)
}
