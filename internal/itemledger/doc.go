// Package itemledger is the contract between the scheduler of a resumable
// map and the place that keeps its items' results across attempts.
//
// A map that opts in to resume records each succeeded item's encoded
// result under a Scope (the map's node id and the code identity of its
// body) and the digest of the item's encoded input. A later attempt of the
// same task, or a repair task that copied the entries, looks the inputs of
// each admitted chunk up and runs only the items without an entry.
//
// The durable runtime supplies a Ledger backed by PostgreSQL and bound to
// one attempt's fence; a run without one (a plain Run, a test) records
// nothing and reuses nothing. A run finds its ledger in its context
// (WithLedger, From).
package itemledger
