// Package telemetrytest reads rayflow's spans back, from memory or from a
// RAYFLOW_TRACES_FILE, and checks a run's trace is connected. It is for
// tests.
package telemetrytest
