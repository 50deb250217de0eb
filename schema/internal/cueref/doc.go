// Package cueref is the reference verdict for the differential tests: CUE's
// own evaluator (Unify with the definition, then Validate with
// cue.Concrete(true)) plus the wire rules that CUE cannot express (the
// record byte cap from @rayflow(maxBytes=N), the byte cap of a record member
// that is not a string (an event payload), duplicate keys, invalid UTF-8,
// lone surrogates, NaN/Infinity), implemented here independently of the
// generated parser.
//
// It is for tests and benchmarks only: generated code never uses CUE.
package cueref
