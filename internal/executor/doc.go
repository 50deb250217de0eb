// Package executor is the one map scheduler that both engines run their
// maps through: engine/local (items run on goroutines in process) and
// engine/ray (items run as Ray tasks) are two backends of it.
//
// Run (an input sequence, pulled as the window has room) and RunIndexed
// (a sized input, item i read by index when its slot frees, with no
// iterator to pull) share one scheduler loop, which owns everything a
// bounded map means, once:
//
//   - the admission window: at most Limits.Window items are open (read
//     and not yet finished, or finished and not yet incorporated by an
//     ordered fold) at any time; the next item is read only when a slot
//     is free;
//   - MaxItems: a sized input over the cap fails before any item with
//     CheckSize, a sequence when item MaxItems+1 is read, both with a
//     *flowgraph.MaxItemsError; exactly MaxItems items run;
//   - item batching: with Limits.BatchSize above 1, items start in units
//     of BatchSize (the last unit may be short) and every item keeps its
//     own result, error, window slot and progress count;
//   - automatic item batching (Limits.Auto, sdk's WithAutoBatching): a
//     Sizer chooses each unit's size, 1 … BatchSize, from the units it saw
//     finish and the engine's TaskCost (per-task overhead, CPUs): first at
//     most CPUs units of one item, then units long enough for the overhead
//     to be OverheadShare of them, never so large that fewer than CPUs units
//     fit the window or the items left; when no item can be read, a short
//     unit starts while fewer than CPUs are in flight. Units always hold
//     consecutive items, so every per-item guarantee is the fixed
//     batching's;
//   - the first failure: admission stops, the items in flight are
//     cancelled through their context, Run waits up to
//     Limits.CancelTimeout for them (stragglers are abandoned) and hands
//     what is left to the backend's Abort, then returns the failure
//     itself (an item's error unchanged, or a *flowgraph.CanceledError
//     when the run was cancelled: no item is to blame);
//   - the results: every finished item goes to the map's Sink, in input
//     order when the sink asks for it (an in-process fold), and an
//     ordered fold returns an item's window slot only once every item
//     before it was incorporated (head-of-line backpressure);
//   - the map's progress counters (progress.MapCounters), reported as
//     items finish and once when the map ends, with exact final counts
//     (a map whose run was cancelled reports no failure of its own: its
//     counters stay as last reported). The report is a counter update:
//     progress.Run.Map turns the counters into events at most once per
//     flush interval, besides the map's first and final reports.
//   - a resumable map (Limits.Resume, a backend that is a Resumer): the
//     input is read a window chunk ahead (at most MaxLedgerChunk items),
//     each chunk's input digests are looked up in the item ledger at once,
//     a reused item's recorded result goes to the sink exactly as a
//     computed one (no backend call) and the others run; finished items'
//     results are encoded on the workers and recorded once per chunk in the
//     background (and at the map's end, or after its failure). A lost
//     fence (itemledger.ErrFenceLost) stops the map; other ledger errors
//     are logged and the items rerun. Without Limits.Resume Run does no
//     ledger work at all.
//
// A Backend only runs items: Item runs one, Batch runs a unit of items
// one after another, Discard takes back a result the map no longer wants
// (after a failure), Abort releases what a failed map leaves behind. A
// Sink takes the results and fetches the map's result with Finish.
// Neither counts windows, items or failures: a new map capability is
// written here once and both engines have it.
//
// Where a map's node id and limits come from is not this package's
// business: callers pass them as plain values (Limits), so a builder node
// or a compiled program can feed it.
//
// The backend test suite (package executortest) is one table of scheduler
// scenarios: suite_test.go runs it against a deterministic fake backend
// under testing/synctest, and engine/local and engine/ray run the same
// table against their real backends (TestExecutorSuite in each).
package executor
