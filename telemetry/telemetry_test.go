package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/prom"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
)

// spans records every span of this test process.
var spans = tracetest.NewInMemoryExporter()

func TestMain(m *testing.M) {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	os.Exit(m.Run())
}

// A workflow with every node kind: chain(build, group(map(square),
// map(cube)), sum).

func Build(_ context.Context, n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

var errSquare = errors.New("square refused")

// Square logs with its context and starts an application span from it.
func Square(ctx context.Context, v int) (int, error) {
	_, span := otel.Tracer("app").Start(ctx, "app.square")
	defer span.End()
	slog.InfoContext(ctx, "squaring", "v", v, "api_token", "tok-should-never-appear")
	if v == 13 {
		return 0, errSquare
	}
	return v * v, nil
}

func Cube(_ context.Context, v int) (int, error) { return v * v * v, nil }

func Sum(_ context.Context, vs [][]int) (int, error) {
	t := 0
	for _, b := range vs {
		for _, v := range b {
			t += v
		}
	}
	return t, nil
}

// Block waits for its context.
func Block(ctx context.Context, v int) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

var workflow = sdk.Chain3(
	sdk.Step(Build),
	sdk.Group(
		sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 3, MaxItems: 100}),
		sdk.Map(sdk.Step(Cube)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100}),
	),
	sdk.Step(Sum),
)

var blocking = sdk.Then(sdk.Step(Build), sdk.Map(sdk.Step(Block)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}))

func spansOf(runID string) []telemetrytest.Span {
	return telemetrytest.Trace(telemetrytest.FromStubs(spans.GetSpans()), telemetry.SpanRun, string(telemetry.AttrRunID), runID)
}

// TestLocalRunTrace: one connected trace per run (every item and leaf
// reaches the run span), the attributes, the application's span nested
// in its leaf's, and the run's log records carrying the run and node ids
// but never a secret-named attribute.
func TestLocalRunTrace(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(telemetry.LogHandler(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))))
	defer slog.SetDefault(prev)

	id := sdk.NewRunIdentity()
	got, err := sdk.Run(context.Background(), workflow, 5, sdk.WithRunIdentity(id))
	if err != nil {
		t.Fatal(err)
	}
	if got != 0+1+4+9+16+0+1+8+27+64 {
		t.Fatalf("result %d", got)
	}
	tr := spansOf(id.RunID)
	counts, err := telemetrytest.Connected(tr, telemetry.SpanRun, telemetry.SpanNode, telemetry.SpanItem, "app.square")
	if err != nil {
		t.Fatal(err)
	}
	// Nodes: chain 0, build 0.0, group 0.1, two maps, sum 0.2 = 6; items: 5+5; app spans: 5.
	if counts[telemetry.SpanNode] != 6 || counts[telemetry.SpanItem] != 10 || counts["app.square"] != 5 {
		t.Fatalf("span counts %v", counts)
	}
	var run telemetrytest.Span
	byID := map[string]telemetrytest.Span{}
	for _, s := range tr {
		byID[s.SpanID] = s
		if s.Name == telemetry.SpanRun {
			run = s
		}
	}
	if run.Attrs[string(telemetry.AttrFingerprint)] == "" || run.Attrs[string(telemetry.AttrEngine)] != "local" ||
		run.Attrs[string(telemetry.AttrStrategy)] != "local" || run.Error {
		t.Errorf("run span %+v", run)
	}
	for _, s := range tr {
		switch s.Name {
		case "app.square":
			if p := byID[s.Parent]; p.Name != telemetry.SpanItem || p.Attrs[string(telemetry.AttrNodeKind)] != "step" {
				t.Errorf("app span's parent is %+v, want the leaf's item span", p)
			}
		case telemetry.SpanItem:
			if s.Attrs[string(telemetry.AttrItemIndex)] == "" || !strings.Contains(s.Attrs[string(telemetry.AttrNodeID)], ".m") {
				t.Errorf("item span %+v", s)
			}
		}
		if s.Name != "app.square" && s.Attrs[string(telemetry.AttrRunID)] != id.RunID {
			t.Errorf("span %s lacks the run id: %v", s.Name, s.Attrs)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] != "squaring" || rec[telemetry.LogRunID] != id.RunID {
			continue
		}
		n++
		if node, _ := rec[telemetry.LogNodeID].(string); !strings.HasPrefix(node, "0.1.g0.m") || rec[telemetry.LogTraceID] == nil {
			t.Errorf("log record %v lacks its node or trace", rec)
		}
		if rec["api_token"] != telemetry.Redacted {
			t.Errorf("secret attribute logged: %v", rec)
		}
	}
	if n != 5 || strings.Contains(logs.String(), "tok-should-never-appear") {
		t.Errorf("%d squaring records (want 5), or the secret leaked:\n%s", n, logs.String())
	}
}

// TestLocalRunTraceErrors: a failing leaf sets Error on its span and on
// every span up to the run; a cancelled run marks its spans cancelled.
func TestLocalRunTraceErrors(t *testing.T) {
	id := sdk.NewRunIdentity()
	if _, err := sdk.Run(context.Background(), workflow, 20, sdk.WithRunIdentity(id)); !errors.Is(err, errSquare) {
		t.Fatalf("err = %v", err)
	}
	tr := spansOf(id.RunID)
	failedLeaf := false
	for _, s := range tr {
		if s.Name == telemetry.SpanItem && s.Attrs[string(telemetry.AttrItemIndex)] == "13" && s.Attrs[string(telemetry.AttrNodeID)] == "0.1.g0.m13" {
			failedLeaf = s.Error && strings.Contains(s.Status, "square refused")
		}
		if s.Name == telemetry.SpanRun && !s.Error {
			t.Errorf("run span not in error: %+v", s)
		}
	}
	if !failedLeaf {
		t.Errorf("the failing leaf's span is not in error")
	}

	id = sdk.NewRunIdentity()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := sdk.Run(ctx, blocking, 3, sdk.WithRunIdentity(id)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	cancelled := 0
	for _, s := range spansOf(id.RunID) {
		if s.Name == telemetry.SpanRun && (!s.Error || s.Status != "cancelled") {
			t.Errorf("cancelled run span %+v", s)
		}
		if s.Attrs[string(telemetry.AttrCancelled)] == "true" {
			cancelled++
		}
	}
	if cancelled < 3 { // the run, the map, its items
		t.Errorf("%d spans marked cancelled", cancelled)
	}
}

// TestMetricsLint runs the workflow, then scans every metric family of
// the registry (each collector touched) for unbounded labels.
func TestMetricsLint(t *testing.T) {
	if _, err := sdk.Run(context.Background(), workflow, 4); err != nil {
		t.Fatal(err)
	}
	m := prom.M
	m.RunningTasks.WithLabelValues("default").Add(0)
	m.ClaimLatency.WithLabelValues("default").Observe(0.01)
	m.Attempts.WithLabelValues("default", telemetry.OutcomeSucceeded).Add(0)
	m.AttemptDuration.WithLabelValues("default", telemetry.OutcomeSucceeded).Observe(1)
	m.Retries.WithLabelValues("default").Add(0)
	m.Swept.WithLabelValues(telemetry.OutcomeLost).Add(0)
	m.PublicationDuration.WithLabelValues("postgres", telemetry.OutcomeOK).Observe(0.001)
	m.PublicationBytes.WithLabelValues("postgres", telemetry.ArtefactTopology).Observe(512)
	mfs, err := prom.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, name := range []string{"rayflow_leaves_submitted_total", "rayflow_leaves_finished_total", "rayflow_map_window_slots",
		"rayflow_map_items_in_flight", "rayflow_claim_latency_seconds", "rayflow_attempts_total", "go_goroutines"} {
		if !seen[name] {
			t.Errorf("no family %s", name)
		}
	}
	for _, err := range prom.LintFamilies(mfs) {
		t.Error(err)
	}
	if v := testutil.ToFloat64(m.MapWindowSlots.WithLabelValues("local")); v != 0 {
		t.Errorf("window slots after the runs: %v, want 0", v)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
