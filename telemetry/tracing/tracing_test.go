package tracing_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

const childEnv = "RAYFLOW_TRACING_TEST_CHILD"

// TestChild is the process the other tests start with a given
// environment (Setup configures its process once).
func TestChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by the other tests")
	}
	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx)
	if err != nil {
		os.Stdout.WriteString("SETUP-ERROR " + err.Error() + "\n")
		return
	}
	ctx, span := telemetry.StartRun(ctx, telemetry.RunInfo{RunID: "run-1", Fingerprint: "sha256:00"})
	_, child := telemetry.StartNode(ctx, "0", "step", -1)
	if span.IsRecording() {
		os.Stdout.WriteString("TRACING-ON\n")
	} else {
		os.Stdout.WriteString("TRACING-OFF\n")
	}
	telemetry.End(child, errors.New("boom"))
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func child(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	// The child sees none of the caller's OTEL_* settings but env's.
	var clean []string
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, tracing.TracesFileEnv+"=") {
			clean = append(clean, kv)
		}
	}
	cmd.Env = append(clean, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestSetup(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	for _, tc := range []struct {
		name string
		env  []string
		want string // in the child's output
		file bool   // spans in file
	}{
		{"off by default", nil, "TRACING-OFF", false},
		{"none", []string{"OTEL_TRACES_EXPORTER=none"}, "TRACING-OFF", false},
		{"disabled", []string{"OTEL_SDK_DISABLED=true", tracing.TracesFileEnv + "=" + file}, "TRACING-OFF", false},
		{"console", []string{"OTEL_TRACES_EXPORTER=console"}, `"Name":"rayflow.run"`, false},
		{"unknown exporter", []string{"OTEL_TRACES_EXPORTER=zipkin"}, "SETUP-ERROR", false},
		{"http/json refused", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "SETUP-ERROR", false},
		{"unknown traces protocol refused", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=thrift"}, "SETUP-ERROR", false},
		{"file", []string{tracing.TracesFileEnv + "=" + file}, "TRACING-ON", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(file)
			out := child(t, tc.env...)
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, out)
			}
			spans, err := telemetrytest.ReadFile(file)
			if tc.file != (err == nil) {
				t.Fatalf("spans file: %v (want one: %v)", err, tc.file)
			}
			if !tc.file {
				return
			}
			if _, err := telemetrytest.Connected(spans, telemetry.SpanRun, telemetry.SpanNode); err != nil || len(spans) != 2 {
				t.Fatalf("%d spans, %v: %+v", len(spans), err, spans)
			}
			for _, s := range spans {
				if s.Name == telemetry.SpanNode && (!s.Error || s.Status != "boom") {
					t.Errorf("node span status %+v", s)
				}
				if s.Attrs[string(telemetry.AttrRunID)] != "run-1" {
					t.Errorf("span %s attrs %v", s.Name, s.Attrs)
				}
			}
		})
	}
}

func TestForwarded(t *testing.T) {
	for key, want := range map[string]bool{
		"OTEL_SERVICE_NAME": true, "OTEL_EXPORTER_OTLP_ENDPOINT": true, "OTEL_EXPORTER_OTLP_PROTOCOL": true,
		"OTEL_TRACES_EXPORTER": true, tracing.TracesFileEnv: true,
		"OTEL_EXPORTER_OTLP_HEADERS": false, "OTEL_EXPORTER_OTLP_TRACES_HEADERS": false,
		"RAYFLOW_DATABASE_URL": false, "PATH": false, "otel_service_name": false,
	} {
		if got := tracing.Forwarded(key); got != want {
			t.Errorf("Forwarded(%q) = %v, want %v", key, got, want)
		}
	}
}
