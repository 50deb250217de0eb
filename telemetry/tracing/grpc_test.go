package tracing_test

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/rayflow/rayflow/telemetry"
)

// collector is an in-process OTLP/gRPC trace receiver.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []collected
}

type collected struct {
	name, traceID, spanID, parent, runID string
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := collected{name: s.Name, traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
					parent: hex.EncodeToString(s.ParentSpanId)}
				for _, a := range s.Attributes {
					if a.Key == string(telemetry.AttrRunID) {
						sp.runID = a.Value.GetStringValue()
					}
				}
				c.spans = append(c.spans, sp)
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) got() []collected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]collected(nil), c.spans...)
}

// startCollector serves a collector on a free port and returns its
// endpoint URL.
func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return c, "http://" + ln.Addr().String()
}

// OTLP over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc, or the traces-only
// variable): the child's run and node spans reach a real gRPC collector,
// connected, before its shutdown returns.
func TestSetupOTLPGRPC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  func(endpoint string) []string
	}{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", func(ep string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + ep, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
		}},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", func(ep string) []string {
			// The traces variable wins over the general one.
			return []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + ep,
				"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ep := startCollector(t)
			out := child(t, tc.env(ep)...)
			if !contains(out, "TRACING-ON") {
				t.Fatalf("child output:\n%s", out)
			}
			spans := c.got()
			if len(spans) != 2 {
				t.Fatalf("collector got %d spans, want 2: %+v\n%s", len(spans), spans, out)
			}
			byName := map[string]collected{}
			for _, s := range spans {
				byName[s.name] = s
				if s.runID != "run-1" {
					t.Errorf("span %s: run id %q", s.name, s.runID)
				}
			}
			run, node := byName[telemetry.SpanRun], byName[telemetry.SpanNode]
			if run.spanID == "" || node.parent != run.spanID || node.traceID != run.traceID {
				t.Fatalf("node span %+v is not a child of run span %+v", node, run)
			}
		})
	}
}
