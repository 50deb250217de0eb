// Package reader is rayflow's progress read service (docs/contracts.md#reads-cursors-and-error-codes): the
// summary, topology nodes, topology edges, node details (optionally of one
// state) and single node reads of a durable task's current or archived
// attempt, as the gen/read envelopes, validated before they are returned.
// The HTTP API (package serve) uses it; programs may call it directly.
//
// Every read authorizes first through an [Authorizer] (principal, task,
// action): a denied principal gets ACCESS_DENIED whether or not the task
// exists. A read then runs in one read-only REPEATABLE READ transaction,
// so a page never mixes two publications.
//
// Pages: the limit defaults to 100 and is clamped to 256 (negative is
// INVALID_ARGUMENT). A response stays within 512 KiB measured as the
// contract says (ASCII, sorted keys, default separators), keeping room for
// the largest cursor, so a page of large records is shorter and carries a
// next cursor; the records one read loads total at most 1 MiB and a stored
// page or row over 1 MiB is refused (CORRUPT) before it is loaded.
// Topology pages are walked through the manifest's page links by [page
// index, offset], node details by keyset on the node key (sha256 of the
// node id) with the (run, state, node_key) index for a state filter; the
// single node read is one primary-key lookup.
//
// Cursors are opaque tokens of at most 2 KiB: base64url of the cursor
// payload (gen/read, every field of docs/contracts.md#reads-cursors-and-error-codes) and of its HMAC-SHA256 under a
// key derived from the first of [Keys] (every key verifies: rotation).
// The owner and run fields are HMACs of the task primary key and of the
// canonical run identity, so a cursor says nothing a client could use. A
// tampered, malformed or oversize cursor is INVALID_CURSOR; a cursor of
// another task, collection, filter, limit or attempt is CURSOR_MISMATCH;
// a cursor whose run, topology version or (details) detail revision was
// retired yields an EXPIRED page with no items. At a collection's last
// page the cumulative count of returned records is checked against the
// retained counter: fewer is MISSING, more is CORRUPT.
//
// Availability: the summary's, except that AVAILABLE or TRUNCATED detail
// past its detail_expires_at reads as EXPIRED (also after cleanup deleted
// the run); pages of a publication that is not AVAILABLE or TRUNCATED are
// empty. A task without a summary reads as NOT_REPORTED with the task's
// attempt and generation and, before its first claim, the nil run id.
//
// MapFailedItems (failed.go) lists the failed item of a map that each
// attempt's stored error names, for the map's failed items page.
package reader
