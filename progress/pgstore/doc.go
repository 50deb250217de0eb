// Package pgstore is rayflow's PostgreSQL progress storage
// (docs/contracts.md#progress-storage): everything that writes or
// verifies the progress tables (rayflow_progress_runs, _manifests, _pages,
// _manifest_pages, _nodes, created by migration 0002_progress_storage) and
// the summary v3 columns on rayflow_tasks and rayflow_task_attempts. The
// tables and the statements themselves belong to package internal/store.
//
// A [Sink] is a progress.Sink for one durable run. Each Publish is one
// fenced publication (docs/contracts.md#publication): the topology, when it changed, is prepared
// (deterministic truncation, greedy content-addressed pages, manifest)
// and staged as the run's one PENDING manifest outside the task lock;
// then one transaction locks the task row with the exact run fence
// (task, RUNNING, attempt, generation, run id) and a strictly larger
// summary_revision, updates the run's detail counters by deltas, promotes
// the staged manifest, upserts the changed node detail rows and deletes
// the dropped ones. A stale fence rolls all of it back and Publish
// returns an error wrapping progress.ErrStaleFence. Runs under
// terminal_only or disabled publish only their summary.
//
// Each step is one pipelined pgx batch (one round trip, one implicit
// transaction); a fenced statement that matches no row raises SQLSTATE
// RF001 (rayflow_require, migration 0004) so that the batch rolls back. A
// run's first publication of a small topology is written in one batch
// with no staging (DECISIONS.md). [Sink.DeferFinal] leaves the final
// publication to the caller, which sends it with its own terminal
// statement ([Sink.TakeFinal]): the durable worker's terminal transition.
//
// [TerminalEnvelope] derives the terminal summary the durable lifecycle
// archives on the attempt row when it ends an attempt before the run's own
// terminal publication. [Verify] is the reader-side integrity check
// (MISSING / CORRUPT); [Cleanup] implements retention (docs/contracts.md#retention-and-cleanup).
//
// Preparation is bounded by the retained caps, not by what was observed:
// [PrepareTopology] consumes node and edge sequences once, keeping only
// the smallest node ids and edges in bounded heaps (25,000 nodes / 100,000
// edges), so its memory does not grow with the observed graph.
package pgstore
