package ray

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

const spanNestingChild = "RAYFLOW_SPANNESTING_TEST_CHILD"

// spanWork runs a step's body in an application span (a child of the
// step's leaf span on Ray, of its node span locally) for ms milliseconds.
func spanWork(ctx context.Context, name string, ms int) {
	_, span := otel.Tracer("rayflow-test").Start(ctx, name)
	time.Sleep(time.Duration(ms) * time.Millisecond)
	span.End()
}

// SpanList, SpanItem and SpanSum are a chain with a map in the middle.
func SpanList(ctx context.Context, n int) ([]int, error) {
	spanWork(ctx, "test.list", 50)
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

func SpanItem(ctx context.Context, i int) (int, error) {
	spanWork(ctx, "test.item", 30+10*i)
	return i * i, nil
}

func SpanSum(ctx context.Context, xs []int) (int, error) {
	spanWork(ctx, "test.sum", 50)
	return Sum(ctx, xs)
}

var spanFlow = sdk.Then(sdk.Then(sdk.Step(SpanList), sdk.Map(sdk.Step(SpanItem, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10})), sdk.Step(SpanSum))

// timedSpan is a finished span with its interval.
type timedSpan struct {
	Name, ID, Parent string
	Start, End       time.Time
}

// readSpanFile reads a RAYFLOW_TRACES_FILE's spans with their intervals.
func readSpanFile(t *testing.T, path string) []timedSpan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []timedSpan
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l struct {
			Name                string
			SpanContext, Parent struct{ SpanID string }
			StartTime, EndTime  time.Time
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, timedSpan{l.Name, l.SpanContext.SpanID, l.Parent.SpanID, l.StartTime, l.EndTime})
	}
	return out
}

// A node's or map item's span covers its execution until its result is
// known, on Ray as locally: every span of a run (node, item, leaf, and
// the step code's own) lies inside its parent's interval. On Ray, the
// node and item spans used to end when the leaf was submitted, and the
// leaf ran after its parent's span had ended.
//
// It sets the global tracer provider, so it runs in a child process.
func TestSpansCoverLeaves(t *testing.T) {
	needRay(t)
	if os.Getenv(spanNestingChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSpansCoverLeaves$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), spanNestingChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSpansCoverLeaves") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	t.Setenv(tracing.TracesFileEnv, file) // the leaf processes' spans
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	otel.SetTracerProvider(tp)
	e, err := New(context.Background(), Options{Address: testAddress, Stderr: logWriter()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	for _, tc := range []struct {
		name   string
		engine []sdk.RunOption
	}{{"local", nil}, {"ray", []sdk.RunOption{sdk.WithEngine(e)}}} {
		t.Run(tc.name, func(t *testing.T) {
			mem.Reset() // the file is only read for Ray, whose run is the last
			ctx, root := tp.Tracer("test").Start(context.Background(), "test")
			got, err := sdk.Run(ctx, spanFlow, 4, tc.engine...)
			root.End()
			if err != nil || got != 0+1+4+9 {
				t.Fatalf("got %d, %v", got, err)
			}
			spans := map[string]timedSpan{}
			for _, s := range mem.GetSpans() {
				ts := timedSpan{Name: s.Name, ID: s.SpanContext.SpanID().String(), Start: s.StartTime, End: s.EndTime}
				if s.Parent.IsValid() {
					ts.Parent = s.Parent.SpanID().String()
				}
				spans[ts.ID] = ts
			}
			if tc.name == "ray" {
				for _, s := range readSpanFile(t, file) {
					spans[s.ID] = s
				}
			}
			count := map[string]int{}
			for _, s := range spans {
				count[s.Name]++
				p, ok := spans[s.Parent]
				if !ok {
					continue
				}
				if s.Start.Before(p.Start) || s.End.After(p.End) {
					t.Errorf("%s [%s, %s] is not inside its parent %s [%s, %s] (starts %v after it, ends %v after it)",
						s.Name, s.Start.Format(time.StampMicro), s.End.Format(time.StampMicro),
						p.Name, p.Start.Format(time.StampMicro), p.End.Format(time.StampMicro), s.Start.Sub(p.Start), s.End.Sub(p.End))
				}
			}
			t.Logf("spans: %v", count)
			// Nodes: the chain, list, the map, sum; items: 4; the step
			// code's spans: list, 4 items, sum.
			want := map[string]int{telemetry.SpanNode: 4, telemetry.SpanItem: 4, "test.list": 1, "test.item": 4, "test.sum": 1}
			if tc.name == "ray" {
				want[telemetry.SpanLeaf] = 6
			}
			for name, n := range want {
				if count[name] != n {
					t.Errorf("%d %s spans, want %d (%v)", count[name], name, n, count)
				}
			}
		})
	}
}
