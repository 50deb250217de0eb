// Command cuegen generates Go types, strict decoders and validators from the
// CUE schemas in schema/ (see package internal/gen for the strict profile).
//
// Usage, from the repository root (go generate ./... runs it from schema/):
//
//	go run ./tools/cuegen -schema schema -gen gen
//
// It writes gen/<pkg>/schema_gen.go per Go package, gen/rt (the shared
// run-time, copied from tools/cuegen/rtsrc with its package name rtsrc
// changed to rt, so that the two packages do not share a name),
// gen/registry, and
// schema/zz_generated_bytecaps.cue. It refuses a schema outside the profile
// and lists every offending place.
package main
