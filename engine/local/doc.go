// Package local runs a workflow graph in the current process with
// goroutines: the engine sdk.Run uses when no Ray engine is configured, and
// the reference for the Ray engine's semantics.
//
// It preserves the seed semantics exactly: group and map results in order;
// a map's admission window counts items; results are collected as items
// finish; a sized input over MaxItems fails before any leaf, a sequence
// when item MaxItems+1 is read; on the first failure admission stops,
// in-flight leaves are cancelled through their context, the engine waits up
// to CancelTimeout for them and returns the original error. A fold is a
// strict input-order left fold with head-of-line backpressure. Result
// buffers and fold byte limits are Ray-only contracts and are not enforced
// here.
//
// Progress (Options.Progress, the run's progress.Run) is the Ray engine's:
// a step outside any map reports STARTED, application progress (under the
// full policy), its output preview (Options.Preview) and COMPLETED or
// FAILED through a progress.Producer whose Sender is the run itself; a map
// reports its fan-out counters as items finish and settles when it ends;
// map items report nothing.
//
// It is not a durability layer: a failed run is rerun from its entry node.
package local
