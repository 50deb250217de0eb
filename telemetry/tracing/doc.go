// Package tracing configures OpenTelemetry tracing from the standard
// OTEL_* variables (Setup), for the programs that export rayflow's spans:
// the rayflow CLI, Ray leaf processes and an application's main. It is
// apart from package telemetry so that a program that only imports the
// SDK links no exporter.
package tracing
