package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Querier is what Verify and Cleanup read and write through (a pool, a
// connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Report is the verdict of Verify on one task's stored progress.
type Report struct {
	// Availability is the summary's availability when everything checks,
	// else MISSING (a referenced artefact is absent, or fewer records
	// than counted) or CORRUPT (bytes, digests, counts, sizes or schema
	// fail). Empty when the task has no summary.
	Availability summary.DetailAvailability
	Summary      *summary.Summary
	Problems     []string
}

func (r *Report) fail(a summary.DetailAvailability, format string, args ...any) {
	// CORRUPT outranks MISSING.
	if r.Availability != summary.DetailAvailabilityCorrupt {
		r.Availability = a
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

func (r *Report) corrupt(format string, args ...any) {
	r.fail(summary.DetailAvailabilityCorrupt, format, args...)
}

func (r *Report) missing(format string, args ...any) {
	r.fail(summary.DetailAvailabilityMissing, format, args...)
}

// Verify checks the progress stored for task pk (attempt 0: the task row's
// summary; else the archived summary of that attempt): the summary (≤ 16
// KiB before decoding, schema), and when it references detail the run
// row, the manifest (digest, schema, counts, bytes, identity), every page
// (link, digest, size, item count, schema, collection) and every node
// detail row (digest, key, schema, state, counts against the summary and
// the run's counters).
func Verify(ctx context.Context, q Querier, pk int64, attempt int) (*Report, error) {
	rep := &Report{}
	var size *int32
	var raw *string
	var err error
	if attempt == 0 {
		err = store.TaskSummarySize(ctx, q, pk).Scan(&size, &raw)
	} else {
		err = store.AttemptSummarySize(ctx, q, pk, attempt).Scan(&size, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("progressstore: reading the summary of task %d: %w", pk, err)
	}
	if size == nil {
		return rep, nil
	}
	if raw == nil {
		rep.corrupt("summary is %d bytes, over %d", *size, summary.MaxBytes)
		return rep, nil
	}
	s, err := summary.DecodeSummary([]byte(*raw))
	if err != nil {
		rep.corrupt("summary: %v", err)
		return rep, nil
	}
	rep.Summary, rep.Availability = s, s.Detail.Availability
	if s.DetailRevision == nil || s.TopologyVersion == nil || s.Storage.ManifestID == nil {
		return rep, nil
	}
	id := s.RunIdentity
	var runPK int64
	var detailRev *int64
	var cnt [6]int32
	err = store.RunCounters(ctx, q, storeRun(id)).Scan(&runPK, &detailRev, &cnt[0], &cnt[1], &cnt[2], &cnt[3], &cnt[4], &cnt[5])
	if errors.Is(err, pgx.ErrNoRows) {
		rep.missing("run %s has no storage row", id.RunID)
		return rep, nil
	} else if err != nil {
		return nil, err
	}
	if detailRev == nil || *detailRev != *s.DetailRevision {
		rep.corrupt("run detail_revision %v, summary %d", detailRev, *s.DetailRevision)
	}
	if err := verifyTopology(ctx, q, rep, s, runPK); err != nil {
		return nil, err
	}
	if err := verifyDetail(ctx, q, rep, s, runPK, cnt); err != nil {
		return nil, err
	}
	return rep, nil
}

func verifyTopology(ctx context.Context, q Querier, rep *Report, s *summary.Summary, runPK int64) error {
	var payload, digest, slot string
	var version, encoded int64
	var nodeCount, edgeCount int32
	err := store.ManifestRow(ctx, q, *s.Storage.ManifestID, runPK).
		Scan(&payload, &digest, &slot, &version, &encoded, &nodeCount, &edgeCount)
	if errors.Is(err, pgx.ErrNoRows) {
		rep.missing("manifest %s not found", *s.Storage.ManifestID)
		return nil
	} else if err != nil {
		return err
	}
	if slot != "CURRENT" {
		rep.missing("manifest %s is %s, not published", *s.Storage.ManifestID, slot)
	}
	if canonical.DomainTopologyManifest.Sum([]byte(payload)).Hex() != digest {
		rep.corrupt("manifest digest mismatch")
		return nil
	}
	m, err := topology.DecodeManifest([]byte(payload))
	if err != nil {
		rep.corrupt("manifest: %v", err)
		return nil
	}
	if m.TopologyVersion != *s.TopologyVersion || version != m.TopologyVersion || m.RunIdentity != s.RunIdentity ||
		m.NodeCount != s.NodeCounts.RetainedTopology || m.EdgeCount != s.EdgeCounts.RetainedTopology ||
		int64(nodeCount) != m.NodeCount || int64(edgeCount) != m.EdgeCount {
		rep.corrupt("manifest version/identity/counts disagree with the summary (%d nodes, %d edges; summary %d, %d)",
			m.NodeCount, m.EdgeCount, s.NodeCounts.RetainedTopology, s.EdgeCounts.RetainedTopology)
	}
	rows, err := store.ManifestPages(ctx, q, *s.Storage.ManifestID) // NODE before EDGE
	if err != nil {
		return err
	}
	defer rows.Close()
	type stored struct {
		digest, payload, coll string
		items                 int32
	}
	got := map[[2]any]stored{}
	for rows.Next() {
		var c, pd, pp, pc string
		var idx, items int32
		if err := rows.Scan(&c, &idx, &pd, &pp, &items, &pc); err != nil {
			return err
		}
		got[[2]any{c, int64(idx)}] = stored{pd, pp, pc, items}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	total := int64(len(payload))
	lost := false
	if len(got) > len(m.Pages) {
		rep.corrupt("%d page links, manifest lists %d", len(got), len(m.Pages))
	}
	for _, ref := range m.Pages {
		p, ok := got[[2]any{string(ref.Collection), ref.PageIndex}]
		if !ok {
			rep.missing("%s page %d missing", ref.Collection, ref.PageIndex)
			lost = true
			continue
		}
		total += int64(len(p.payload))
		switch {
		case p.digest != ref.Digest || canonical.DomainTopologyPage.Sum([]byte(p.payload)).Hex() != ref.Digest:
			rep.corrupt("%s page %d digest mismatch", ref.Collection, ref.PageIndex)
			continue
		case int64(len(p.payload)) != ref.EncodedBytes || int64(p.items) != ref.ItemCount || p.coll != string(ref.Collection):
			rep.corrupt("%s page %d size/items/collection mismatch", ref.Collection, ref.PageIndex)
			continue
		}
		dp, err := topology.DecodePage([]byte(p.payload))
		if err != nil {
			rep.corrupt("%s page %d: %v", ref.Collection, ref.PageIndex, err)
			continue
		}
		var n int
		switch x := dp.(type) {
		case *topology.NodePage:
			n = len(x.Records)
			if ref.Collection != topology.CollectionNode {
				rep.corrupt("page %d holds nodes", ref.PageIndex)
			}
		case *topology.EdgePage:
			n = len(x.Records)
			if ref.Collection != topology.CollectionEdge {
				rep.corrupt("page %d holds edges", ref.PageIndex)
			}
		}
		if int64(n) != ref.ItemCount {
			rep.corrupt("%s page %d has %d records, manifest says %d", ref.Collection, ref.PageIndex, n, ref.ItemCount)
		}
	}
	if !lost && total != encoded {
		rep.corrupt("topology is %d bytes, manifest row says %d", total, encoded)
	}
	return nil
}

func verifyDetail(ctx context.Context, q Querier, rep *Report, s *summary.Summary, runPK int64, cnt [6]int32) error {
	rows, err := store.RunDetailRows(ctx, q, runPK)
	if err != nil {
		return err
	}
	defer rows.Close()
	var n, events int64
	byState := map[detail.NodeState]int64{}
	for rows.Next() {
		var key, nodeID, state, payload, digest string
		var ev int32
		if err := rows.Scan(&key, &nodeID, &state, &ev, &payload, &digest); err != nil {
			return err
		}
		n++
		events += int64(ev)
		byState[detail.NodeState(state)]++
		if canonical.DomainNodeDetail.Sum([]byte(payload)).Hex() != digest {
			rep.corrupt("node %q detail digest mismatch", nodeID)
			continue
		}
		d, err := detail.DecodeNodeDetail([]byte(payload))
		if err != nil {
			rep.corrupt("node %q detail: %v", nodeID, err)
			continue
		}
		if d.NodeID != nodeID || canonical.NodeKey(nodeID) != key || string(d.State) != state || int64(len(d.RecentEvents)) != int64(ev) {
			rep.corrupt("node %q row columns disagree with its payload", nodeID)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if int64(cnt[0]) != s.NodeCounts.RetainedDetail {
		rep.corrupt("run counts %d detail rows, summary retains %d", cnt[0], s.NodeCounts.RetainedDetail)
	}
	switch {
	case n < s.NodeCounts.RetainedDetail:
		rep.missing("%d detail rows, summary retains %d", n, s.NodeCounts.RetainedDetail)
	case n > s.NodeCounts.RetainedDetail:
		rep.corrupt("%d detail rows, summary retains %d", n, s.NodeCounts.RetainedDetail)
	case int64(cnt[1]) != byState[detail.NodeStatePending] || int64(cnt[2]) != byState[detail.NodeStateRunning] ||
		int64(cnt[3]) != byState[detail.NodeStateSucceeded] || int64(cnt[4]) != byState[detail.NodeStateFailed] || int64(cnt[5]) != events:
		rep.corrupt("run counters %v disagree with the rows (%v, %d events)", cnt, byState, events)
	}
	return nil
}
