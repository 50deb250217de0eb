// Package telemetry is rayflow's observability: OpenTelemetry traces,
// Prometheus metrics and structured logs, shared by the SDK, the engines,
// the durable worker and rayflow serve.
//
// Traces are off unless configured by the standard OTEL_* variables
// (tracing.Setup, in the subpackage so that a program importing only the
// SDK links no exporter): OTEL_TRACES_EXPORTER=otlp (or any OTEL_EXPORTER_OTLP_ENDPOINT)
// exports over OTLP (http/protobuf, or grpc by OTEL_EXPORTER_OTLP_PROTOCOL),
// console writes JSON spans to stdout, and
// RAYFLOW_TRACES_FILE appends JSON spans to a file (the testable mode:
// every process of a run, Ray leaf processes included, may append to the
// same file). One span covers each durable task attempt, each run, each
// plan node, each map item and each leaf, with the run identity, plan
// fingerprint, node id and Ray task id as attributes; errors and
// cancellations set the span status. Step code receives a context that
// carries its leaf's span, so spans the application starts from it nest
// under the leaf.
//
// Metrics are Prometheus collectors in one registry, in package
// telemetry/prom (prom.M, prom.Handler): the worker's attempts, claim
// latency and retries, leaves, map windows and progress publications.
// This package links no metrics library (an application that links only
// the SDK links no Prometheus client): the engines and the progress sinks
// record through the Recorder interface (Leaves, OpenMapWindow,
// ObserveSink), which records nothing until a process installs one
// (SetRecorder); importing telemetry/prom installs the Prometheus one, as
// the durable worker and rayflow serve do. Labels are bounded by
// construction (queue, state, outcome, engine, sink, artefact), never a
// task or run id; prom.LintFamilies checks that.
//
// Logs: LogHandler wraps a slog.Handler so that every record logged with
// a run's context carries the run identity, the node id and the trace
// ids, and so that attributes whose key names a secret (token, password,
// secret, authorization, …) are never written.
//
// The package is not a metrics or tracing framework: it has no knobs
// beyond the standard variables and exists so that every part of rayflow
// names its spans, attributes and metrics alike.
package telemetry
