package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// TracesFileEnv names a file that spans are appended to as JSON lines (one
// span per line, the stdouttrace encoding), in addition to the exporters
// of OTEL_TRACES_EXPORTER. Every process of a run may name the same file.
const TracesFileEnv = "RAYFLOW_TRACES_FILE"

// Forwarded reports whether the environment variable key travels from a
// process that sets tracing up to the Ray processes it starts (leaves, a
// Ray Job's coordinator), so that their spans reach the same exporter:
// OTEL_* and TracesFileEnv, but not OTEL_*_HEADERS, which usually hold a
// collector's credentials, and a Ray runtime environment is readable by
// anyone who can list the cluster's tasks or jobs. A collector that needs
// headers gets them from the cluster's own environment.
func Forwarded(key string) bool {
	return (strings.HasPrefix(key, "OTEL_") && !strings.HasSuffix(key, "_HEADERS")) || key == TracesFileEnv
}

// ErrUnsupportedExporter is wrapped by Setup's error for an exporter or
// protocol this build cannot export with.
var ErrUnsupportedExporter = errors.New("telemetry: unsupported exporter")

var setup struct {
	sync.Mutex
	done     bool
	shutdown func(context.Context) error
}

// Setup configures tracing from the environment, once per process, and
// returns the function that flushes and stops it (call it before exit).
// Tracing stays off (a no-op tracer, nothing exported) unless one of
// these is set:
//
//   - OTEL_TRACES_EXPORTER: a comma-separated list of otlp, console
//     (JSON spans on stdout) and none; otlp exports over OTLP with the
//     protocol of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
//     OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default) or grpc
//     (http/json is refused), and the other OTEL_EXPORTER_OTLP_* variables
//     (endpoint, headers, timeout, …; a grpc endpoint
//     http://host:4317 is plaintext, https:// TLS). Unset, it is otlp when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set.
//   - RAYFLOW_TRACES_FILE: spans are appended, synchronously, to this
//     file as JSON lines.
//
// OTEL_SDK_DISABLED=true turns everything off. OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the resource (service.name defaults to
// "rayflow"); OTEL_TRACES_SAMPLER and the OTEL_BSP_* variables apply as
// the OpenTelemetry SDK reads them. Setup also installs the W3C trace
// context propagator, which carries a span into Ray leaf processes.
func Setup(ctx context.Context) (shutdown func(context.Context) error, err error) {
	setup.Lock()
	defer setup.Unlock()
	noop := func(context.Context) error { return nil }
	if setup.done {
		return noop, nil
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return noop, nil
	}
	var opts []sdktrace.TracerProviderOption
	var closers []func() error
	fail := func(err error) (func(context.Context) error, error) {
		for _, c := range closers {
			_ = c()
		}
		return noop, err
	}
	names := os.Getenv("OTEL_TRACES_EXPORTER")
	if names == "" && (os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		names = "otlp"
	}
	for _, name := range strings.Split(names, ",") {
		switch name = strings.TrimSpace(strings.ToLower(name)); name {
		case "", "none":
		case "otlp":
			proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
			if proto == "" {
				proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
			}
			var exp sdktrace.SpanExporter
			var err error
			switch proto {
			case "", "http/protobuf":
				exp, err = otlptracehttp.New(ctx)
			case "grpc":
				exp, err = otlptracegrpc.New(ctx)
			default:
				return fail(fmt.Errorf("%w: OTLP protocol %q (http/protobuf or grpc)", ErrUnsupportedExporter, proto))
			}
			if err != nil {
				return fail(fmt.Errorf("telemetry: OTLP exporter: %w", err))
			}
			opts = append(opts, sdktrace.WithBatcher(exp))
		case "console":
			exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
			if err != nil {
				return fail(err)
			}
			opts = append(opts, sdktrace.WithSyncer(exp))
		default:
			return fail(fmt.Errorf("%w: OTEL_TRACES_EXPORTER %q (otlp, console or none)", ErrUnsupportedExporter, name))
		}
	}
	if path := os.Getenv(TracesFileEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fail(fmt.Errorf("telemetry: %s: %w", TracesFileEnv, err))
		}
		closers = append(closers, f.Close)
		exp, err := stdouttrace.New(stdouttrace.WithWriter(lineWriter{f}))
		if err != nil {
			return fail(err)
		}
		opts = append(opts, sdktrace.WithSyncer(exp))
	}
	if len(opts) == 0 {
		return noop, nil
	}
	res, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		res = resource.Default()
	}
	if v, ok := res.Set().Value(semconv.ServiceNameKey); !ok || strings.HasPrefix(v.AsString(), "unknown_service") {
		if merged, err := resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("rayflow"))); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	otel.SetTracerProvider(tp)
	setup.done = true
	setup.shutdown = func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		for _, c := range closers {
			err = errors.Join(err, c())
		}
		return err
	}
	return setup.shutdown, nil
}

// lineWriter hands each span's JSON line to the file in one write, so
// that processes appending to one file do not interleave.
type lineWriter struct{ f *os.File }

func (w lineWriter) Write(p []byte) (int, error) { return w.f.Write(p) }
