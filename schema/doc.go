// Package schema holds rayflow's CUE schemas: the single source of truth for
// every record rayflow persists, hashes or sends. tools/cuegen generates the
// Go in gen/ from these files; this package's tests check that CUE's
// evaluator and the generated Go give the same verdict on every fixture in
// testdata/{valid,invalid} and under fuzzing.
//
// The package has no Go API: import the generated packages under gen/.
package schema

//go:generate go run ../tools/cuegen -schema . -gen ../gen
