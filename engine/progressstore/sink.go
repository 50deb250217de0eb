package progressstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
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

// errCancelling: the fence matches a CANCELLING task; Publish skips.
var errCancelling = errors.New("progressstore: the task is cancelling")

// ErrRevision is returned when a summary's revision is not above the stored one.
var ErrRevision = errors.New("progressstore: summary_revision does not advance")

const fenceSQL = `id = $1 AND attempt_number = $2 AND execution_generation = $3 AND workflow_run_id = $4::uuid`

// Publish stores p (§5.7).
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

// updateSummarySQL is the conditional summary update (§5.7 step 6); as the
// transaction's first statement it also locks the task row (step 3).
const updateSummarySQL = `UPDATE rayflow_tasks SET workflow_progress_summary_json = $5, progress_summary_revision = $6
 WHERE ` + fenceSQL + ` AND state = 'RUNNING' AND (progress_summary_revision IS NULL OR progress_summary_revision < $6)`

// fenceError classifies a conditional update that changed no row.
func fenceError(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id common.RunIdentity, rev int64) error {
	var state string
	var cur *int64
	err := q.QueryRow(ctx, `SELECT state, progress_summary_revision FROM rayflow_tasks WHERE `+fenceSQL,
		id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID).Scan(&state, &cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("progressstore: task %d attempt %d generation %d run %s: %w", id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID, progress.ErrStaleFence)
	case err != nil:
		return fmt.Errorf("progressstore: checking the fence: %w", err)
	case state == "CANCELLING":
		// The run still owns its task but is being cancelled: nothing is
		// written (§5.7 writes only while RUNNING) and the run is not told
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
	id := p.Identity
	t0 := time.Now()
	tag, err := s.pool.Exec(ctx, updateSummarySQL, id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID, string(b), sum.SummaryRevision)
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
	// The run row (created once; an existing one is reloaded so deltas
	// stay exact when a sink is recreated for the same run).
	runPK, fresh := s.runPK, false
	if runPK == 0 {
		var inserted bool
		if err := s.pool.QueryRow(ctx, `INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_retention_days)
 SELECT id, attempt_number, execution_generation, workflow_run_id, $5 FROM rayflow_tasks WHERE `+fenceSQL+`
 ON CONFLICT (task_pk, attempt_number, execution_generation, run_id) DO UPDATE SET updated_at = now() RETURNING id, xmax = 0`,
			id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID, sum.Retention.DetailDays).Scan(&runPK, &inserted); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fenceError(ctx, s.pool, id, sum.SummaryRevision)
			}
			return fmt.Errorf("progressstore: run row: %w", err)
		}
		s.last.Statements++
		if !inserted {
			if err := s.reload(ctx, runPK); err != nil {
				return err
			}
			s.last.Statements += 2
		}
		fresh = inserted
	}
	rows, dreasons, err := prepareDetail(p.Details, topo, s.lim)
	if err != nil {
		return err
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
		return err
	}
	s.last.Prepare = time.Since(t0)

	// 3. Stage the topology as the run's one PENDING manifest, outside the lock.
	t1 := time.Now()
	if staged {
		n, err := stage(ctx, s.pool, runPK, topo)
		s.last.Statements += n
		if err != nil {
			return err
		}
		s.last.Pages = len(topo.Pages)
	}
	s.last.Stage = time.Since(t1)

	// 4. One transaction: task (fence + summary), run, manifests, detail rows.
	t2 := time.Now()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("progressstore: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after commit a no-op
	s.last.Statements += 2
	b := &pgx.Batch{}
	b.Queue(updateSummarySQL, id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID, string(sb), sum.SummaryRevision)
	var expires *time.Time
	if sum.Retention.DetailExpiresAt != nil {
		if t, err := time.Parse(time.RFC3339Nano, *sum.Retention.DetailExpiresAt); err == nil {
			expires = &t
		}
	}
	b.Queue(`UPDATE rayflow_progress_runs SET detail_revision = $2, detail_node_count = detail_node_count + $3 + $4 + $5 + $6,
 detail_pending_count = detail_pending_count + $3, detail_running_count = detail_running_count + $4,
 detail_succeeded_count = detail_succeeded_count + $5, detail_failed_count = detail_failed_count + $6,
 detail_truncated_count = detail_truncated_count + $7, detail_event_count = $8, detail_truncation_reasons = $9,
 detail_encoded_bytes = $10, detail_decoded_bytes = $10, detail_retention_days = $11, detail_expires_at = $12, updated_at = now()
 WHERE id = $1`, runPK, detailRev, dPend, dRun, dSucc, dFail, dTrunc, events, reasonsText(sum.Detail.TruncationReasons), bytes,
		sum.Retention.DetailDays, expires)
	if staged {
		b.Queue(`DELETE FROM rayflow_progress_manifests WHERE run_pk = $1 AND slot = 'CURRENT'`, runPK)
		b.Queue(`UPDATE rayflow_progress_manifests SET slot = 'CURRENT', published_at = now()
 WHERE manifest_id = $1 AND run_pk = $2 AND slot = 'PENDING' AND manifest_digest = $3 AND encoded_bytes = $4
   AND node_count = $5 AND edge_count = $6
   AND (SELECT count(*) FROM rayflow_progress_manifest_pages WHERE manifest_id = $1) = node_page_count + edge_page_count`,
			topo.ManifestID, runPK, topo.ManifestDigest, topo.EncodedBytes, topo.NodeCount, topo.EdgeCount)
	}
	if len(changed) > 0 && !fresh {
		n := len(changed)
		keys, ids, states, payloads, digests := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		invs, evs, truncs := make([]*string, n), make([]int32, n), make([]bool, n)
		for i, r := range changed {
			keys[i], ids[i], states[i], payloads[i], digests[i] = r.key, r.nodeID, string(r.state), string(r.payload), r.digest
			invs[i], evs[i], truncs[i] = r.invocation, int32(r.events), r.truncated
		}
		b.Queue(`INSERT INTO rayflow_progress_nodes AS n (run_pk, node_key, node_id, invocation_id, state, event_count, truncated,
   payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision)
 SELECT $1, k, i, inv, st, ec, tr, pl, dg, octet_length(pl), octet_length(pl), $2, $3
 FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bool[], $10::text[], $11::text[]) AS x(k, i, inv, st, ec, tr, pl, dg)
 ON CONFLICT (run_pk, node_key) DO UPDATE SET invocation_id = excluded.invocation_id, state = excluded.state,
   event_count = excluded.event_count, truncated = excluded.truncated, payload = excluded.payload, digest = excluded.digest,
   encoded_bytes = excluded.encoded_bytes, decoded_bytes = excluded.decoded_bytes,
   last_topology_version = excluded.last_topology_version, last_detail_revision = excluded.last_detail_revision, updated_at = now()`,
			runPK, topo.Version, detailRev, keys, ids, invs, states, evs, truncs, payloads, digests)
	}
	if len(dropped) > 0 {
		b.Queue(`DELETE FROM rayflow_progress_nodes WHERE run_pk = $1 AND node_key = ANY($2::text[])`, runPK, dropped)
	}
	s.last.Statements += b.Len()
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err == nil && tag.RowsAffected() == 0 {
		br.Close()
		tx.Rollback(ctx) //nolint:errcheck
		return fenceError(ctx, s.pool, id, sum.SummaryRevision)
	}
	for i := 1; err == nil && i < b.Len(); i++ {
		tag, err = br.Exec()
		if err == nil && staged && i == 3 && tag.RowsAffected() != 1 {
			err = fmt.Errorf("progressstore: staged manifest %s failed verification", topo.ManifestID)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(changed) > 0 && fresh {
		// The run's first rows: COPY is several times cheaper than the upsert.
		now := time.Now()
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"rayflow_progress_nodes"}, []string{"run_pk", "node_key", "node_id", "invocation_id", "state",
			"event_count", "truncated", "payload", "digest", "encoded_bytes", "decoded_bytes", "last_topology_version", "last_detail_revision",
			"created_at", "updated_at"},
			pgx.CopyFromSlice(len(changed), func(i int) ([]any, error) {
				r := changed[i]
				return []any{runPK, r.key, r.nodeID, r.invocation, string(r.state), int32(r.events), r.truncated, string(r.payload), r.digest,
					int32(len(r.payload)), int32(len(r.payload)), topo.Version, detailRev, now, now}, nil
			}))
		s.last.Statements++
	}
	if err != nil {
		return fmt.Errorf("progressstore: publication: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("progressstore: commit: %w", err)
	}
	s.last.Publish = time.Since(t2)
	s.last.Upserted, s.last.Deleted = len(changed), len(dropped)
	s.runPK, s.topo, s.detailRev, s.prev = runPK, topo, detailRev, next
	s.summary = sb
	return nil
}

// reload reads the committed state of an existing run row.
func (s *Sink) reload(ctx context.Context, runPK int64) error {
	var rev *int64
	if err := s.pool.QueryRow(ctx, `SELECT detail_revision FROM rayflow_progress_runs WHERE id = $1`, runPK).Scan(&rev); err != nil {
		return fmt.Errorf("progressstore: reloading run %d: %w", runPK, err)
	}
	if rev != nil {
		s.detailRev = *rev
	}
	rows, err := s.pool.Query(ctx, `SELECT node_key, digest, state, event_count, truncated, encoded_bytes FROM rayflow_progress_nodes WHERE run_pk = $1`, runPK)
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

// stage writes t as run's PENDING manifest (replacing an older pending
// one) with its pages, in its own transaction; it returns the statements sent.
func stage(ctx context.Context, pool *pgxpool.Pool, runPK int64, t *Topology) (int, error) {
	n := len(t.Pages)
	digests, colls, payloads := make([]string, n), make([]string, n), make([]string, n)
	items, idx := make([]int32, n), make([]int32, n)
	for i, p := range t.Pages {
		digests[i], colls[i], payloads[i], items[i], idx[i] = p.Digest, string(p.Collection), string(p.Payload), int32(p.Items), int32(p.Index)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 1, fmt.Errorf("progressstore: staging: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM rayflow_progress_manifests WHERE run_pk = $1 AND slot = 'PENDING'`, runPK)
	b.Queue(`INSERT INTO rayflow_progress_pages (run_pk, digest, collection, payload, item_count, encoded_bytes, decoded_bytes)
 SELECT $1, d, c, p, i, octet_length(p), octet_length(p) FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS x(d, c, p, i)
 ON CONFLICT (run_pk, digest) DO NOTHING`, runPK, digests, colls, payloads, items)
	b.Queue(`INSERT INTO rayflow_progress_manifests (manifest_id, run_pk, topology_version, slot, manifest_digest, truncation_reasons,
   payload, node_count, edge_count, node_page_count, edge_page_count, encoded_bytes, decoded_bytes)
 VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
		t.ManifestID, runPK, t.Version, t.ManifestDigest, reasonsText(t.Reasons), string(t.Manifest), t.NodeCount, t.EdgeCount,
		t.NodePages, t.EdgePages, t.EncodedBytes)
	b.Queue(`INSERT INTO rayflow_progress_manifest_pages (manifest_id, page_id, collection, page_index)
 SELECT $1, p.id, x.c, x.i FROM unnest($3::text[], $4::text[], $5::int[]) AS x(d, c, i)
 JOIN rayflow_progress_pages p ON p.run_pk = $2 AND p.digest = x.d`, t.ManifestID, runPK, digests, colls, idx)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 2 + b.Len(), fmt.Errorf("progressstore: staging topology %s: %w", t.ManifestID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 2 + b.Len(), fmt.Errorf("progressstore: staging commit: %w", err)
	}
	return 2 + b.Len(), nil
}
