package ray

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/prom"
)

const leafSpanChild = "RAYFLOW_LEAFSPAN_TEST_CHILD"

// The job runtime environment gets this process's OTEL_* and
// RAYFLOW_TRACES_FILE variables, but not the OTEL_*_HEADERS credentials;
// the ones it sets win.
func TestTelemetryEnv(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "svc")
	t.Setenv("RAYFLOW_TRACES_FILE", "/tmp/x")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer secret")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-key=secret")
	env := map[string]any{"env_vars": map[string]string{"OTEL_SERVICE_NAME": "mine"}, "pip": []string{"x"}}
	got := telemetryEnv(env)
	vars := got["env_vars"].(map[string]any)
	if vars["OTEL_SERVICE_NAME"] != "mine" || vars["RAYFLOW_TRACES_FILE"] != "/tmp/x" || got["pip"] == nil {
		t.Fatalf("%v", got)
	}
	for k := range vars {
		if strings.HasSuffix(k, "_HEADERS") {
			t.Errorf("%s travels to the leaves", k)
		}
	}
	if _, ok := env["env_vars"].(map[string]string)["RAYFLOW_TRACES_FILE"]; ok {
		t.Fatal("the caller's map was changed")
	}
}

// On Ray, leaf tasks count as submitted and finished (by outcome), and a
// bounded map's window shows in the window gauges while it runs. Other
// tests run in parallel: counts are checked as lower bounds.
func TestRayMetrics(t *testing.T) {
	needRay(t)
	t.Parallel()
	m := prom.M
	sub0 := testutil.ToFloat64(m.LeavesSubmitted.WithLabelValues("ray"))
	ok0 := testutil.ToFloat64(m.LeavesFinished.WithLabelValues("ray", telemetry.OutcomeSucceeded))
	fail0 := testutil.ToFloat64(m.LeavesFinished.WithLabelValues("ray", telemetry.OutcomeFailed))
	var slots, inFlight atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			s, f := int64(testutil.ToFloat64(m.MapWindowSlots.WithLabelValues("ray"))), int64(testutil.ToFloat64(m.MapItemsInFlight.WithLabelValues("ray")))
			if s > slots.Load() {
				slots.Store(s)
			}
			if f > inFlight.Load() {
				inFlight.Store(f)
			}
		}
	}()
	f := mapFlow(sdk.Limits{MaxConcurrency: 3, MaxItems: 100})
	if _, err := runOn(context.Background(), testEngine, f, JobsSpec{N: 6, FailAt: -1, Template: Job{SleepMS: 150}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runOn(context.Background(), testEngine, f, JobsSpec{N: 2, FailAt: 0, Template: Job{}}); err == nil {
		t.Fatal("the failing run succeeded")
	}
	close(stop)
	<-sampled
	sub := testutil.ToFloat64(m.LeavesSubmitted.WithLabelValues("ray")) - sub0
	ok := testutil.ToFloat64(m.LeavesFinished.WithLabelValues("ray", telemetry.OutcomeSucceeded)) - ok0
	fail := testutil.ToFloat64(m.LeavesFinished.WithLabelValues("ray", telemetry.OutcomeFailed)) - fail0
	// Run 1: Jobs and 6 items; run 2: Jobs and at least the failing item.
	if sub < 9 || ok < 8 || fail < 1 || slots.Load() < 3 || inFlight.Load() < 1 {
		t.Fatalf("submitted %v, succeeded %v, failed %v, window slots seen %d, in flight seen %d", sub, ok, fail, slots.Load(), inFlight.Load())
	}
}

// A leaf's span starts from its request's trace context (a child of the
// node span that sent it), carries the node, callable and Ray task id,
// and a failed leaf's span is in error; no trace context, no span.
//
// It sets the global tracer provider, so it runs in a child process (a
// unit test, -test.short) rather than change this one's.
func TestLeafSpan(t *testing.T) {
	if os.Getenv(leafSpanChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLeafSpan$", "-test.short", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), leafSpanChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestLeafSpan") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "node")
	req := leafRequest{Name: "pkg.Step", Node: "0.1.m3", Trace: telemetry.Inject(parentCtx), RayTaskID: "task-7"}
	parent.End()
	if req.Trace == "" {
		t.Fatal("no traceparent")
	}
	otel.SetTracerProvider(tp)
	ctx, end := leafSpan(context.Background(), req)
	if !trace.SpanFromContext(ctx).IsRecording() || telemetry.Node(ctx) != "0.1.m3" {
		t.Fatal("the step's context carries no recording leaf span")
	}
	end(&errorInfo{Type: "*pkg.Err", Message: "boom"})
	if _, end := leafSpan(context.Background(), leafRequest{Name: "x"}); end == nil {
		t.Fatal("nil end")
	} else {
		end(nil)
	}
	got := spans.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans", len(got))
	}
	leaf := got[1]
	attrs := map[string]string{}
	for _, a := range leaf.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	if leaf.Name != telemetry.SpanLeaf || leaf.Parent.SpanID() != parent.SpanContext().SpanID() ||
		leaf.SpanContext.TraceID() != parent.SpanContext().TraceID() || leaf.Status.Code != codes.Error ||
		attrs[string(telemetry.AttrRayTaskID)] != "task-7" || attrs[string(telemetry.AttrNodeID)] != "0.1.m3" ||
		attrs[string(telemetry.AttrCallable)] != "pkg.Step" {
		t.Fatalf("leaf span %+v %v", leaf, attrs)
	}
}
