package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Sink is the PostgreSQL progress.Sink of one run (one run identity). Its
// Publish calls are not concurrent (progress.Sink's contract); it keeps
// the last committed state (≤ Limits.DetailRows rows of digests) to write
// only what changed.
type Sink struct {
	pool *pgxpool.Pool
	lim  Limits

	mu        sync.Mutex
	id        *common.RunIdentity
	runPK     int64
	topo      *Topology // last committed topology
	detailRev int64
	prev      map[string]prevRow // node_key → committed row
	stale     bool
	summary   []byte // last accepted summary (nil: none yet)
	defer_    bool   // DeferFinal
	final     *FinalWrites
	// Stats of the last Publish (for benchmarks and tests).
	last PublishStats
}

type prevRow struct {
	digest    string
	state     detail.NodeState
	events    int
	truncated bool
	bytes     int64
}

// PublishStats describes one publication.
type PublishStats struct {
	Prepare    time.Duration
	Stage      time.Duration
	Publish    time.Duration
	Statements int // SQL statements sent, BEGIN and COMMIT included
	Pages      int // pages of the staged topology (0 when unchanged)
	Upserted   int
	Deleted    int
	Skipped    bool // the task was CANCELLING: nothing written
	// Canonical bytes written (a deferred final publication: queued for
	// the caller's batch) by artefact: the summary, the staged topology
	// (pages and manifest), the detail rows upserted. For the
	// rayflow_progress_publication_bytes metric.
	SummaryBytes, TopologyBytes, DetailBytes int64
}

// written records the bytes of a publication's artefacts in s.last.
func (s *Sink) written(sum []byte, staged *Topology, rows []detailRow) {
	s.last.SummaryBytes, s.last.TopologyBytes, s.last.DetailBytes = int64(len(sum)), 0, 0
	if staged != nil {
		s.last.TopologyBytes = staged.EncodedBytes
	}
	for _, r := range rows {
		s.last.DetailBytes += int64(len(r.payload))
	}
}

// NewSink returns the sink of one run on pool with limits lim (V1() when
// zero).
func NewSink(pool *pgxpool.Pool, lim Limits) (*Sink, error) {
	if lim == (Limits{}) {
		lim = V1()
	}
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	return &Sink{pool: pool, lim: lim, prev: map[string]prevRow{}}, nil
}

// LastStats returns the statistics of the last Publish.
func (s *Sink) LastStats() PublishStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// LastSummary returns the bytes of the last summary this sink stored
// (nil when none was): what the task row holds unless something else
// wrote it since. The lifecycle derives the terminal envelope from it
// without reading the row first (it checks the row under the fence).
func (s *Sink) LastSummary() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summary
}

// DeferFinal makes the run's final publication (progress.Publication.Final)
// wait for the caller: Publish prepares it and stages its topology, but
// sends nothing under the task lock; TakeFinal then returns its writes for
// the caller to send in one batch with its own fenced terminal statement
// (the durable worker's terminal transition), which stores the final
// summary on the task row: one round trip and one transaction for both. A final publication whose detail rows go by COPY
// (a run's first publication of many rows) is written as usual.
func (s *Sink) DeferFinal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defer_ = true
}

// TakeFinal returns the deferred final publication, once (nil when none).
func (s *Sink) TakeFinal() *FinalWrites {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.final
	s.final = nil
	return f
}

// FinalWrites are a deferred final publication: a batch whose statements
// run under the run's fence (the first one locks the task row and aborts
// the batch's implicit transaction with SQLSTATE RF001 when the fence no
// longer matches the task RUNNING). The caller appends its own statements,
// sends the batch, reads Len results first, and calls Committed when the
// batch committed.
type FinalWrites struct {
	batch   *pgx.Batch
	n       int
	summary []byte
	state   summary.State // the summary's state and revision
	rev     int64
	expect  []byte
	commit  func()
	first   *firstPub // a run's first publication (firstSQL), for FinalGroup
}

// Batch is the batch to append to and send.
func (f *FinalWrites) Batch() *pgx.Batch { return f.batch }

// Len is the number of the publication's own statements (first in Batch).
func (f *FinalWrites) Len() int { return f.n }

// Summary is the final summary: the batch locks the task row (fenced)
// but leaves its summary to the caller's statement, which must store this
// one (the terminal transition does).
func (f *FinalWrites) Summary() []byte { return f.summary }

// IsTerminal reports whether Summary already is the terminal summary of
// state (TerminalEnvelope would return it unchanged).
func (f *FinalWrites) IsTerminal(state summary.TerminalState) bool {
	return string(f.state) == string(state) && f.rev == summary.ReservedRevision
}

// Expect is the summary the task row holds until then (nil: none).
func (f *FinalWrites) Expect() []byte { return f.expect }

// Committed records the publication as the sink's last one.
func (f *FinalWrites) Committed() { f.commit() }

// SQLSTATEs of rayflow_require (migration 0004): a fenced statement of a
// pipelined batch matched no row; a staged topology failed verification.
const (
	FenceSQLState  = "RF001"
	stagedSQLState = "RF002"
)

// IsFenceError reports whether err is a batch aborted by a fenced
// statement that matched no row (SQLSTATE RF001).
func IsFenceError(err error) bool { return isSQLState(err, FenceSQLState) }

func isSQLState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// errCancelling: the fence matches a CANCELLING task; Publish skips.
var errCancelling = errors.New("progressstore: the task is cancelling")

// ErrRevision is returned when a summary's revision is not above the stored one.
var ErrRevision = errors.New("progressstore: summary_revision does not advance")

// storeRun is id as the store's statements carry it.
func storeRun(id common.RunIdentity) store.Run {
	return store.Run{TaskPK: id.TaskExecutionPK, Attempt: id.AttemptNumber, Gen: id.ExecutionGeneration, RunID: id.RunID}
}

// storeDetail is rows as the store writes them, all of topology version
// topo and detail revision rev.
func storeDetail(rows []detailRow, topo, rev int64) []store.DetailRow {
	out := make([]store.DetailRow, len(rows))
	for i, r := range rows {
		out[i] = store.DetailRow{Key: r.key, ID: r.nodeID, Invocation: r.invocation, State: string(r.state),
			Events: int32(r.events), Truncated: r.truncated, Payload: string(r.payload), Digest: r.digest,
			TopologyVersion: topo, Revision: rev}
	}
	return out
}

// storeManifest is t's manifest as the store writes it, with its pages.
func storeManifest(t *Topology) (store.Manifest, []store.Page) {
	pages := make([]store.Page, len(t.Pages))
	for i, p := range t.Pages {
		pages[i] = store.Page{Digest: p.Digest, Collection: string(p.Collection), Payload: string(p.Payload),
			Items: int32(p.Items), Index: int32(p.Index)}
	}
	return store.Manifest{ID: t.ManifestID, Version: t.Version, Digest: t.ManifestDigest, Reasons: reasonsText(t.Reasons),
		Payload: string(t.Manifest), Nodes: t.NodeCount, Edges: t.EdgeCount, NodePages: int32(t.NodePages),
		EdgePages: int32(t.EdgePages), EncodedBytes: t.EncodedBytes}, pages
}

// Publish stores p (docs/contracts.md#publication).
func (s *Sink) Publish(ctx context.Context, p *progress.Publication) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale {
		return fmt.Errorf("progressstore: run %s: %w", p.Identity.RunID, progress.ErrStaleFence)
	}
	if s.id == nil {
		id := p.Identity
		s.id = &id
	} else if *s.id != p.Identity {
		return fmt.Errorf("progressstore: a sink serves one run identity (%s), got %s", s.id.RunID, p.Identity.RunID)
	}
	s.last = PublishStats{}
	var err error
	if p.Summary.ReportingPolicy != common.ReportingPolicyFull || p.Summary.TopologyVersion == nil {
		err = s.publishSummaryOnly(ctx, p)
	} else {
		err = s.publishFull(ctx, p)
	}
	if errors.Is(err, progress.ErrStaleFence) {
		s.stale = true
	}
	if errors.Is(err, errCancelling) {
		s.last.Skipped = true
		return nil
	}
	return err
}

// encodeSummary validates sum and returns its canonical bytes (≤ 16 KiB).
func (s *Sink) encodeSummary(sum *summary.Summary) ([]byte, error) {
	if err := sum.Validate(); err != nil {
		return nil, fmt.Errorf("progressstore: summary: %w", err)
	}
	b, err := canonical.NoFold.Marshal(sum)
	if err != nil {
		return nil, err
	}
	if len(b) > s.lim.SummaryMaxSize {
		return nil, fmt.Errorf("progressstore: summary is %d bytes, over %d", len(b), s.lim.SummaryMaxSize)
	}
	return b, nil
}

// fenceError classifies a conditional update that changed no row.
func fenceError(ctx context.Context, q store.Reader, id common.RunIdentity, rev int64) error {
	state, cur, err := store.RunTaskState(ctx, q, storeRun(id))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("progressstore: task %d attempt %d generation %d run %s: %w", id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID, progress.ErrStaleFence)
	case err != nil:
		return fmt.Errorf("progressstore: checking the fence: %w", err)
	case state == "CANCELLING":
		// The run still owns its task but is being cancelled: nothing is
		// written (docs/contracts.md#publication writes only while RUNNING) and the run is not told
		// its fence is stale; the lifecycle archives the terminal envelope
		// derived from the last accepted summary.
		return errCancelling
	case state != "RUNNING":
		return fmt.Errorf("progressstore: task %d is %s: %w", id.TaskExecutionPK, state, progress.ErrStaleFence)
	default:
		return fmt.Errorf("%w: stored %v, publication %d", ErrRevision, cur, rev)
	}
}

// publishSummaryOnly is the summary-only writer (terminal_only, disabled,
// or a full run before any topology).
func (s *Sink) publishSummaryOnly(ctx context.Context, p *progress.Publication) error {
	sum := p.Summary
	if sum.ReportingPolicy != common.ReportingPolicyFull {
		sum.TopologyVersion, sum.DetailRevision, sum.Storage.ManifestID = nil, nil, nil
	}
	b, err := s.encodeSummary(&sum)
	if err != nil {
		return err
	}
	s.written(b, nil, nil)
	id := p.Identity
	if p.Final && s.defer_ {
		batch := &pgx.Batch{}
		store.QueueFencedLock(batch, storeRun(id), sum.SummaryRevision)
		s.final = &FinalWrites{batch: batch, n: 1, summary: b, state: sum.State, rev: sum.SummaryRevision, expect: s.summary, commit: func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.summary = b
		}}
		s.last.Statements = 1
		return nil
	}
	t0 := time.Now()
	tag, err := store.UpdateSummary(ctx, s.pool, storeRun(id), string(b), sum.SummaryRevision)
	s.last.Statements = 1
	s.last.Publish = time.Since(t0)
	if err != nil {
		return fmt.Errorf("progressstore: publishing the summary: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fenceError(ctx, s.pool, id, sum.SummaryRevision)
	}
	s.summary = b
	return nil
}

func (s *Sink) publishFull(ctx context.Context, p *progress.Publication) error {
	t0 := time.Now()
	sum := p.Summary
	id := p.Identity
	// 1. Prepare the topology when it changed (or was never committed).
	topo := s.topo
	staged := false
	if topo == nil || p.TopologyChanged || topo.Version != *sum.TopologyVersion {
		var extra []summary.TruncationReason
		for _, r := range sum.Detail.TruncationReasons {
			if r == summary.TruncationReasonNodeCountLimit || r == summary.TruncationReasonEdgeCountLimit {
				extra = append(extra, r)
			}
		}
		t, err := PrepareTopology(id, *sum.TopologyVersion, *sum.Storage.ManifestID, slices.Values(p.Nodes), slices.Values(p.Edges), s.lim, extra...)
		if err != nil {
			return err
		}
		topo, staged = t, true
	}
	// A run's first publication of a small topology is one batch: the
	// fenced summary update, then one statement creating the run row with
	// its counters, the pages, the manifest (CURRENT at once) and the
	// detail rows (see DECISIONS.md).
	if s.runPK == 0 && staged && len(topo.Pages) <= inlinePages && topo.EncodedBytes <= inlineBytes {
		pl, err := s.plan(sum, p.Details, topo)
		if err != nil {
			return err
		}
		if len(pl.changed) <= copyMinRows {
			s.last.Prepare = time.Since(t0)
			err := s.publishFirst(ctx, id, topo, pl, p.Final)
			if !errors.Is(err, errRunExists) {
				return err
			}
			t0 = time.Now()
		}
	}
	// 2. The run row (created once; an existing one is reloaded so deltas
	// stay exact when a sink is recreated for the same run) and the staged
	// topology as the run's one PENDING manifest: one batch (one round trip,
	// one implicit transaction), outside the task lock (docs/contracts.md#publication step 2).
	prepared := time.Since(t0)
	t1 := time.Now()
	runPK, fresh := s.runPK, false
	if newRun := runPK == 0; newRun || staged {
		b := &pgx.Batch{}
		if newRun {
			store.QueueRunInsert(b, storeRun(id), sum.Retention.DetailDays)
		}
		if staged {
			queueStage(b, id, topo)
		}
		s.last.Statements += b.Len()
		br := s.pool.SendBatch(ctx, b)
		var err error
		read := 0
		if newRun {
			var inserted bool
			var one int64
			if err = br.QueryRow().Scan(&runPK, &inserted, &one); err == nil {
				fresh = inserted
			}
			read++
		}
		for ; err == nil && read < b.Len(); read++ {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		switch {
		case IsFenceError(err):
			return fenceError(ctx, s.pool, id, sum.SummaryRevision)
		case err != nil && staged:
			return fmt.Errorf("progressstore: run row and staging topology %s: %w", topo.ManifestID, err)
		case err != nil:
			return fmt.Errorf("progressstore: run row: %w", err)
		}
		if staged {
			s.last.Pages = len(topo.Pages)
		}
		if newRun && !fresh {
			if err := s.reload(ctx, runPK); err != nil {
				return err
			}
			s.last.Statements += 2
		}
	}
	s.last.Stage = time.Since(t1)
	t0 = time.Now()
	pl, err := s.plan(sum, p.Details, topo)
	if err != nil {
		return err
	}
	changed, dropped, next, detailRev, sum, sb := pl.changed, pl.dropped, pl.next, pl.detailRev, pl.sum, pl.sb
	dPend, dRun, dSucc, dFail, dTrunc, events, bytes := pl.dPend, pl.dRun, pl.dSucc, pl.dFail, pl.dTrunc, pl.events, pl.bytes
	s.last.Prepare = prepared + time.Since(t0)

	// 3. The publication (docs/contracts.md#publication steps 3–7): one batch, one implicit
	// transaction. Its first statement locks the task row and checks the
	// fence (aborting everything with RF001 when it no longer matches);
	// then the run (counters by deltas), the manifests (the staged one
	// verified and promoted), the detail rows. A run's first publication
	// of many rows sends them by COPY, in an explicit transaction.
	t2 := time.Now()
	var expires *time.Time
	if sum.Retention.DetailExpiresAt != nil {
		if t, err := time.Parse(time.RFC3339Nano, *sum.Retention.DetailExpiresAt); err == nil {
			expires = &t
		}
	}
	byCopy := fresh && len(changed) > copyMinRows
	deferred := p.Final && s.defer_ && !byCopy
	b := &pgx.Batch{}
	if deferred {
		store.QueueFencedLock(b, storeRun(id), sum.SummaryRevision)
	} else {
		store.QueueFencedSummary(b, storeRun(id), string(sb), sum.SummaryRevision)
	}
	store.QueueRunDetail(b, store.RunDetail{RunPK: runPK, Revision: detailRev, Pending: dPend, Running: dRun, Succeeded: dSucc,
		Failed: dFail, Truncated: dTrunc, Events: events, Reasons: reasonsText(sum.Detail.TruncationReasons), Bytes: bytes,
		RetentionDays: sum.Retention.DetailDays, Expires: expires})
	if staged {
		m, _ := storeManifest(topo)
		store.QueuePromote(b, runPK, m)
	}
	if len(changed) > 0 && !byCopy {
		store.QueueUpsertDetail(b, runPK, topo.Version, detailRev, storeDetail(changed, topo.Version, detailRev))
	}
	if len(dropped) > 0 {
		store.QueueDeleteDetail(b, runPK, dropped)
	}
	s.last.Statements += b.Len()
	var stagedTopo *Topology
	if staged {
		stagedTopo = topo
	}
	s.written(sb, stagedTopo, changed)
	committed := func() {
		s.last.Publish = time.Since(t2)
		s.last.Upserted, s.last.Deleted = len(changed), len(dropped)
		s.runPK, s.topo, s.detailRev, s.prev = runPK, topo, detailRev, next
		s.summary = sb
	}
	if deferred {
		s.final = &FinalWrites{batch: b, n: b.Len(), summary: sb, state: sum.State, rev: sum.SummaryRevision, expect: s.summary, commit: func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			committed()
		}}
		return nil
	}
	if byCopy {
		err = s.publishCopy(ctx, b, runPK, topo.Version, detailRev, changed)
	} else {
		err = store.SendBatch(ctx, s.pool, b)
	}
	switch {
	case IsFenceError(err):
		return fenceError(ctx, s.pool, id, sum.SummaryRevision)
	case isSQLState(err, stagedSQLState):
		return fmt.Errorf("progressstore: staged manifest %s failed verification: %w", topo.ManifestID, err)
	case err != nil:
		return fmt.Errorf("progressstore: publication: %w", err)
	}
	committed()
	return nil
}

// A first publication whose topology has at most inlinePages pages and
// inlineBytes bytes writes it under the task lock, without staging.
const (
	inlinePages = 8
	inlineBytes = 256 << 10
)

// errRunExists: the first publication found the run row already there
// (a sink recreated for a run that published); the general path reloads it.
var errRunExists = errors.New("progressstore: the run row exists")

// publishFirst writes a run's first publication (see firstSQL) after the
// fenced summary update, in one batch; deferred when final and the sink
// defers its final publication.
func (s *Sink) publishFirst(ctx context.Context, id common.RunIdentity, topo *Topology, pl *pubPlan, final bool) error {
	t2 := time.Now()
	sum := pl.sum
	var expires *time.Time
	if sum.Retention.DetailExpiresAt != nil {
		if t, err := time.Parse(time.RFC3339Nano, *sum.Retention.DetailExpiresAt); err == nil {
			expires = &t
		}
	}
	np, n := len(topo.Pages), len(pl.changed)
	deferred := final && s.defer_
	b := &pgx.Batch{}
	if deferred {
		store.QueueFencedLock(b, storeRun(id), sum.SummaryRevision)
	} else {
		store.QueueFencedSummary(b, storeRun(id), string(pl.sb), sum.SummaryRevision)
	}
	m, pages := storeManifest(topo)
	store.QueueFirstPublication(b, store.FirstRun{TaskPK: id.TaskExecutionPK, Attempt: id.AttemptNumber, Gen: id.ExecutionGeneration,
		RunID: id.RunID, RetentionDays: int32(sum.Retention.DetailDays), DetailRevision: pl.detailRev,
		Pending: int32(pl.dPend), Running: int32(pl.dRun), Succeeded: int32(pl.dSucc), Failed: int32(pl.dFail),
		Truncated: int32(pl.dTrunc), Events: int32(pl.events), Reasons: reasonsText(sum.Detail.TruncationReasons),
		Bytes: pl.bytes, Expires: expires, Manifest: m, Pages: pages,
		Nodes: storeDetail(pl.changed, topo.Version, pl.detailRev)})
	s.last.Statements += b.Len()
	s.written(pl.sb, topo, pl.changed)
	var runPK int64
	committed := func() {
		s.last.Publish = time.Since(t2)
		s.last.Pages = np
		s.last.Upserted = n
		s.runPK, s.topo, s.detailRev, s.prev = runPK, topo, pl.detailRev, pl.next
		s.summary = pl.sb
	}
	if deferred {
		s.final = &FinalWrites{batch: b, n: b.Len(), summary: pl.sb, state: sum.State, rev: sum.SummaryRevision, expect: s.summary, commit: func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			committed() // the run's last publication: runPK is not needed again
		}, first: &firstPub{id: id, pl: pl, topo: topo, expires: expires}}
		return nil
	}
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		var one int64
		err = br.QueryRow().Scan(&runPK, &one)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case IsFenceError(err):
		return fenceError(ctx, s.pool, id, sum.SummaryRevision)
	case isSQLState(err, "RF003"):
		return errRunExists
	case err != nil:
		return fmt.Errorf("progressstore: first publication: %w", err)
	}
	committed()
	return nil
}

// copyMinRows: a run's first publication of more detail rows than this
// sends them by COPY (several times cheaper per row than the upsert, but
// two more round trips and an explicit transaction).
const copyMinRows = 1000

// publishCopy sends b then COPYs the run's first detail rows, in one
// explicit transaction.
func (s *Sink) publishCopy(ctx context.Context, b *pgx.Batch, runPK, topoVersion, detailRev int64, rows []detailRow) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after commit a no-op
	s.last.Statements += 3                        // BEGIN, COPY, COMMIT
	br := tx.SendBatch(ctx, b)
	for i := 0; err == nil && i < b.Len(); i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := store.CopyDetail(ctx, tx, runPK, topoVersion, detailRev, storeDetail(rows, topoVersion, detailRev), time.Now()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// pubPlan is what one publication writes, relative to the sink's last
// committed state.
type pubPlan struct {
	changed                                   []detailRow // sorted by key
	dropped                                   []string    // sorted
	next                                      map[string]prevRow
	detailRev                                 int64
	sum                                       summary.Summary // adjusted to what is stored
	sb                                        []byte          // its canonical bytes
	dPend, dRun, dSucc, dFail, dTrunc, events int
	bytes                                     int64
}

// plan selects the detail rows of details under topo, diffs them against
// the last committed ones and adjusts sum to what is stored.
func (s *Sink) plan(sum summary.Summary, details []detail.NodeDetail, topo *Topology) (*pubPlan, error) {
	rows, dreasons, err := prepareDetail(details, topo, s.lim)
	if err != nil {
		return nil, err
	}
	// Changed rows, dropped rows, deltas.
	var changed []detailRow
	next := make(map[string]prevRow, len(rows))
	var dPend, dRun, dSucc, dFail, dTrunc, events int
	var bytes int64
	count := func(st detail.NodeState, tr bool, sign int) {
		switch st {
		case detail.NodeStatePending:
			dPend += sign
		case detail.NodeStateRunning:
			dRun += sign
		case detail.NodeStateSucceeded:
			dSucc += sign
		case detail.NodeStateFailed:
			dFail += sign
		}
		if tr {
			dTrunc += sign
		}
	}
	for _, r := range rows {
		pr := prevRow{digest: r.digest, state: r.state, events: r.events, truncated: r.truncated, bytes: int64(len(r.payload))}
		next[r.key] = pr
		events += r.events
		bytes += pr.bytes
		old, ok := s.prev[r.key]
		if ok && old.digest == r.digest {
			continue
		}
		changed = append(changed, r)
		if ok {
			count(old.state, old.truncated, -1)
		}
		count(r.state, r.truncated, +1)
	}
	var dropped []string
	for k, old := range s.prev {
		if _, ok := next[k]; !ok {
			dropped = append(dropped, k)
			count(old.state, old.truncated, -1)
		}
	}
	slices.Sort(dropped)
	slices.SortFunc(changed, func(a, b detailRow) int { return strings.Compare(a.key, b.key) })
	detailRev := s.detailRev
	if len(changed) > 0 || len(dropped) > 0 || detailRev == 0 {
		detailRev++
	}
	// 2. Adjust the summary to what is stored.
	reasons := map[summary.TruncationReason]bool{}
	for _, r := range sum.Detail.TruncationReasons {
		reasons[r] = true
	}
	for _, r := range topo.Reasons {
		reasons[r] = true
	}
	for r := range dreasons {
		reasons[r] = true
	}
	sum.NodeCounts.RetainedTopology = min(topo.NodeCount, sum.NodeCounts.Discovered)
	sum.EdgeCounts.RetainedTopology = min(topo.EdgeCount, sum.EdgeCounts.Discovered)
	sum.NodeCounts.RetainedDetail = int64(len(rows))
	sum.DetailRevision = &detailRev
	if sum.NodeCounts.RetainedDetail < sum.NodeCounts.Discovered && !reasons[summary.TruncationReasonTerminalStateUnreported] && len(reasons) == 0 {
		reasons[summary.TruncationReasonRecordSizeLimit] = true
	}
	sum.Detail.TruncationReasons = sum.Detail.TruncationReasons[:0:0]
	for r := range reasons {
		sum.Detail.TruncationReasons = append(sum.Detail.TruncationReasons, r)
	}
	slices.Sort(sum.Detail.TruncationReasons)
	if len(reasons) > 0 {
		sum.Detail.Availability, sum.Detail.Complete = summary.DetailAvailabilityTruncated, false
	} else {
		sum.Detail.Availability, sum.Detail.Complete = summary.DetailAvailabilityAvailable, true
	}
	sb, err := s.encodeSummary(&sum)
	if err != nil {
		return nil, err
	}
	return &pubPlan{changed: changed, dropped: dropped, next: next, detailRev: detailRev, sum: sum, sb: sb,
		dPend: dPend, dRun: dRun, dSucc: dSucc, dFail: dFail, dTrunc: dTrunc, events: events, bytes: bytes}, nil
}

// reload reads the committed state of an existing run row.
func (s *Sink) reload(ctx context.Context, runPK int64) error {
	rev, err := store.RunDetailRevision(ctx, s.pool, runPK)
	if err != nil {
		return fmt.Errorf("progressstore: reloading run %d: %w", runPK, err)
	}
	if rev != nil {
		s.detailRev = *rev
	}
	rows, err := store.RunDetailDigests(ctx, s.pool, runPK)
	if err != nil {
		return fmt.Errorf("progressstore: reloading run %d: %w", runPK, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, digest, state string
		var ev, n int32
		var tr bool
		if err := rows.Scan(&key, &digest, &state, &ev, &tr, &n); err != nil {
			return err
		}
		s.prev[key] = prevRow{digest: digest, state: detail.NodeState(state), events: int(ev), truncated: tr, bytes: int64(n)}
	}
	return rows.Err()
}

// queueStage queues t as the run's PENDING manifest (replacing an older
// pending one) with its pages.
func queueStage(b *pgx.Batch, id common.RunIdentity, t *Topology) {
	m, pages := storeManifest(t)
	store.QueueStage(b, storeRun(id), m, pages)
}
