// Package local runs a workflow graph in the current process with
// goroutines: the engine sdk.Run uses when no Ray engine is configured, and
// the reference for the Ray engine's semantics. The executor itself is
// internal/inproc (below sdk, so that sdk imports no engine package); this
// package is its public face.
//
// Its maps run through the map scheduler both engines share
// (internal/executor, which owns the window, MaxItems, item batching, the
// first failure, CancelTimeout, the ordered fold and the map's progress
// counters); this engine is the scheduler's in-process backend.
//
// It preserves the seed semantics exactly: group and map results in order;
// a map's admission window counts items; results are collected as items
// finish; a sized input over MaxItems fails before any leaf, a sequence
// when item MaxItems+1 is read; on the first failure admission stops,
// in-flight leaves are cancelled through their context, the engine waits up
// to CancelTimeout for them and returns the original error. A fold is a
// strict input-order left fold with head-of-line backpressure. With item
// batching (flowgraph.Map.BatchSize above 1) a worker runs each batch's
// items one after another with flowgraph.RunBatch and hands every item's
// result back as it finishes: the window still counts items (a batch
// starts once it holds its items or the input ends), results, errors and
// progress stay per item, and a batch stops before its next item once the
// map fails or the run is cancelled. Result
// buffers and fold byte limits are Ray-only contracts and are not enforced
// here.
//
// Progress (Options.Progress, the run's progress.Run) is the Ray engine's:
// a step outside any map reports STARTED, application progress (under the
// full policy), its output preview (Options.Preview) and COMPLETED or
// FAILED through a progress.Producer whose Sender is the run itself; a map
// reports its fan-out counters as items finish (a counter update: the run
// publishes them at most once per flush interval) and settles when it
// ends, unless its run was cancelled; map items report nothing.
//
// Values cross step boundaries through the value codec, as on Ray: the
// run's input where a step receives it, every step's output, a bound value
// (afresh for every call) and a fold's accumulator are encoded and decoded
// into a fresh value of their declared type, so a local run predicts a Ray
// run (what the codec refuses fails here too, as a
// *flowgraph.ValueError naming the node, and no two steps share mutable
// values). Options.NoCodecRoundTrip (sdk.WithoutCodecRoundTrip) skips it
// for speed; BenchmarkCodecRoundTrip measures the difference.
//
// Cancellation is bounded whatever the leaves do. Once the run's context
// is done, every waiting node stops waiting: a map waits up to its
// CancelTimeout for its in-flight items, a step or group outside any map
// up to CancelTimeoutDefault (1 s), and Run returns a
// *flowgraph.CanceledError (sdk.CanceledError) carrying the context's
// error and cause — never a value, never a nil error, and never an item's
// error, since no item is to blame. A leaf that ignores its context and is
// still running then is abandoned, not awaited: its goroutine runs until
// the leaf returns and its result is discarded. Leaves that own
// resources should watch ctx.Done(). (A MapSeq input iterator that blocks
// is application code the engine cannot abandon.)
//
// It is not a durability layer: a failed run is rerun from its entry node.
package local
