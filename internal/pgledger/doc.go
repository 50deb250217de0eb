// Package pgledger is the item ledger (internal/itemledger) of one
// durable attempt, kept in PostgreSQL (the rayflow_item_ledger table of
// internal/store, migration 0007).
//
// A Ledger is bound to one attempt's fence (store.Run): every Record is
// one statement that writes nothing when the attempt no longer holds its
// task (a newer attempt or generation, or the task left RUNNING), and
// then returns an error wrapping both itemledger.ErrFenceLost and
// store.ErrStaleRun, which stops the run. While the attempt's task is
// CANCELLING, Record writes nothing and keeps nothing without an error:
// the cancellation stops the run, as for a progress publication. Lookup
// is one statement per call (the scheduler calls it once per admitted
// chunk) and needs no fence: a later attempt or a repair task reads what
// earlier attempts recorded. An attempt whose task had no row at its
// first call (a task's first attempt, usually) sends no lookup at all.
// The first call of an attempt reads the task's usage (one statement).
//
// Bounds: a result over store.MaxLedgerResultBytes (1 MiB) is never sent
// (its item reruns next time), and a task's ledger holds at most
// Limits.MaxRows rows and Limits.MaxBytes result bytes in all; beyond
// that Record keeps nothing more and says so through its kept count (and
// one warning in the log). The durable worker (package durable) and the
// Ray Job coordinator (rayjob/coordinator) put a Ledger in each attempt's
// run context with itemledger.WithLedger.
package pgledger
