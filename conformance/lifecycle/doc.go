// Package lifecycle holds the conformance scenarios of the compiled-
// invocation lifecycle reducer (docs/lifecycle.md, engine/lifecycle) and runs
// them against an implementation: this module's reducer in process, or any
// command that speaks `CMD lifecycle replay FILE` (README.md documents the
// JSON-lines format).
//
// The scenario files are the contract, not the Go code: each NAME.jsonl is
// a replay input and NAME.out the exact expected output. The package does
// not generate them (scenarios_test.go does, with -update, and checks every
// scenario's hand-written per-event expectations while doing so).
package lifecycle
