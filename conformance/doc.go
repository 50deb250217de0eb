// Package conformance runs rayflow's language-neutral conformance vectors
// (vectors/*.json) against an implementation: this module's own Go code, or
// any command that speaks the protocol documented in README.md, such as the
// independent Python reference in reference/python.
//
// It checks byte formats only (canonical JSON v1, the no-fold codec, digests
// and the number lines of
// docs/contracts.md#number-lines-and-vectors); record schemas are checked by the
// generated validators in gen/.
package conformance
