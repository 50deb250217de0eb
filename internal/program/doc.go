// Package program is rayflow's compiler: it turns the builder graph of a
// flow (package sdk/flowgraph, what sdk.Step, sdk.Then, sdk.Group and
// sdk.Map build) into an immutable Program, once per materialization.
//
// The program holds everything the rest of rayflow derives from the
// graph: every node's plan id (derived by one function, Segment), its
// kind, label and children, a map's body and its normalized limits (the
// window, max items, cancel timeout and batch size), whether a subtree
// contains a map, and the bindings to the Go functions (the steps,
// collectors, item sources and folds the builder made). The materializer
// (sdk/materialize.go) records the program as the effective plan,
// progress registers its topology from it, and the engines execute it;
// none of them walks builder nodes.
//
// A node inside a map has a template id ("0.1.m*.0"); a run gives each
// item's body its own id ("0.1.m17.0"), which Node.At and ItemID derive
// from the enclosing runtime id with the same function.
package program
