// Package progress is the engine-neutral half of live workflow progress
// (docs/contracts.md#progress-records: limits, snapshot v2, live events,
// metrics, previews, redaction): every graph semantic is Go.
// It imports no engine and not sdk (sdk imports it: sdk.ReportProgress is
// this package's Report). Engines only move bytes: a leaf's Producer
// hands canonical event envelopes to a Sender (on Ray the collector actor's
// handle, in process the run itself, in tests a fake), and the run's
// Collector ingests them.
//
// # Run and Sink (one run)
//
// A Run is one run's progress, the same for every engine: its identity
// (the fence of every event), the plan's reporting policy, the limits
// profile, the Collector (full policy), the producers of in-process leaves
// (Producer; the Run is their Sender) and the publications to the run's
// Sink. Start registers the plan's topology from the compiled program
// (internal/program: its nodes, ids and labels); the engine hands leaf
// events to it (Ingest on Ray, Producer in process) and map counters (Map:
// a counter update per finished item, made an event at once for a map's
// first and final counters and otherwise at most once per flush interval,
// see mapcounters.go); Finish
// publishes the terminal state. A Sink (the PostgreSQL progress storage,
// a live display, Latest in tests) receives Publications: the summary v3,
// topology and node detail at most once per flush interval while they
// change, then once with Final set. A sink error wrapping ErrStaleFence
// stops publication and cancels the run (RunConfig.OnStale).
//
// # Producer (in the leaf)
//
// A Producer is one leaf invocation's Reporter. Report validates,
// redacts and bounds a value before anything leaves the leaf (docs/contracts.md#metrics-and-metadata, docs/contracts.md#redaction),
// encodes it as an identity-bound canonical application_progress envelope,
// and either submits it (no acknowledgement outstanding) or puts it into the
// one latest-value slot, superseding the value there. When the outstanding
// acknowledgement resolves, the slot is submitted. Started, Finish and the
// other lifecycle events are sent directly and never coalesced. Finish makes
// at most one latest-value handoff, then sends COMPLETED or FAILED, then one
// producer_report with the session's saturating counters. Report never
// blocks on delivery and never fails the leaf; NewProducer returns nil (and
// a nil *Producer reports false) for bounded-map items and for the
// terminal_only and disabled policies.
//
// # Collector (in the coordinator)
//
// The run's collector (unexported) ingests encoded events: byte caps, strict decoding
// (gen/event), the canonical check (canonical.NoFold re-encoding must equal
// the bytes), the exact run-identity fence, then the node, edge and
// retained-byte limits of its profile (limits.ProfileV1 or
// limits.ProfileTerminalV1). It keeps bounded graph state and ingress
// diagnostics and builds the schema-v2 snapshot (Snapshot); its revision is
// monotonic within one run identity and restarts on Reset.
// A terminal_only run's bounded summary v3 is built without a collector;
// Run builds the summary v3 of a full run from the collector's state.
//
// # Decisions where the contract is silent
//
// See DECISIONS.md in this directory; each is also noted at its code.
package progress
