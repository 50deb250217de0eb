// Package reducer is rayflow's compiled-invocation lifecycle reducer
// (protocol version 1; docs/lifecycle.md). It lives next to its conformance
// scenarios (conformance/lifecycle) and speaks the vocabularies generated
// from schema/lifecycle.cue (package gen/lifecycle: states, actions,
// commands, callbacks, outcomes, dispositions, diagnostics, rejection codes
// and bounds); it declares none of its own.
//
// A State is one compiled-graph session with at most one invocation. The
// reducer, State.Apply, takes one Event (a command from the controller or a
// callback from the adapter) and returns the next State and at most one
// Action for the adapter, or a *Rejection that leaves the state unchanged.
// It is deterministic and context-free: it never reads a clock (events carry
// observed_at), never blocks, performs no I/O, imports nothing from Ray or
// the bridge and keeps no event history. Exactly one bounded action is
// pending at a time, named by its token cg-lifecycle-v1:<sequence>:<ACTION>.
//
// Features:
//   - exact capacity 1/1/1/1/1/0 and protocol version 1, else fail closed;
//   - seven absolute deadlines, the outer one winning ties; a callback
//     observed at or after its action deadline is processed as expiry;
//   - the two irreversible cutoffs: issuing PREPARE closes strategy fallback,
//     issuing SUBMIT closes replay of the invocation;
//   - snapshot schema 1 (Snapshot, Restore): secret-free, ≤ 64 output slots,
//     ≤ 8 cleanup diagnostics, ≤ 16,384 bytes of sorted compact ASCII JSON;
//   - the Adapter interface naming the eleven actions, Drive to run a whole
//     lifecycle against one, and Fake, a scripted adapter for tests;
//   - Replay, the JSON-lines scenario format of `rayflow lifecycle replay`.
//
// The package does not make any strategy eligible: plan selection still
// rejects compiled_graph. It holds no Ray handle, payload, result or error
// text, and it is not a scheduler: the caller owns the clock, dispatches
// actions and persists snapshots.
package reducer
