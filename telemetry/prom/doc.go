// Package prom is rayflow's Prometheus metrics: the collectors (M, in
// Registry), their HTTP handler and listener, the lint for unbounded
// labels (LintFamilies) and the telemetry.Recorder that records the
// engines' and progress sinks' metrics into M.
//
// Importing the package installs that recorder (telemetry.SetRecorder),
// so a process that serves these metrics (a durable worker, rayflow
// serve, an application mounting Handler) counts its leaves, map windows
// and publications; a program that links only the SDK links no Prometheus
// client and records nothing.
package prom
