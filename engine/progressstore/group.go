package progressstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
)

// firstPub is a deferred first publication's storage (firstSQL's values),
// kept so that a caller can write several runs' first publications with
// one statement (FirstGroup).
type firstPub struct {
	id      common.RunIdentity
	pl      *pubPlan
	topo    *Topology
	expires *time.Time
}

// Groupable reports whether the publication can be written by a
// FinalGroup statement: it is only the fenced lock (a summary-only final
// publication) or the lock and a run's first publication (firstSQL).
// Other deferred publications (a run that published before) must be sent
// as their Batch.
func (f *FinalWrites) Groupable() bool { return f.n == 1 || f.first != nil }

// Revision is the final summary's revision: the row must hold a smaller
// one (or none) and be RUNNING under the fence for the publication to
// land (fencedLockSQL's condition).
func (f *FinalWrites) Revision() int64 { return f.rev }

// FinalGroup writes the storage of several runs' deferred first
// publications in one statement of the caller's: data-modifying CTEs
// (pr_run, pr_pg, pr_mf, pr_ln, pr_nd) that create, for each run whose
// task is in the caller's locked set, its run row with counters, pages,
// CURRENT manifest with links and detail rows: what firstSQL writes for
// one run. Building the CHECK expressions, opening the indexes and
// planning the foreign-key checks of five tables is paid once per
// statement, not once per run: most of a no-op run's PostgreSQL cost.
//
// A run whose row already exists is skipped (ON CONFLICT DO NOTHING) and
// writes nothing; pr_run's task_pk column lists the runs written, and the
// caller must not commit the final summary of any other (firstSQL raises
// RF003 for it instead).
type FinalGroup struct {
	// runs
	rTask, rGen, rRev, rBytes                        []int64
	rAtt                                             []int64
	rRun                                             []string
	rDays, rPend, rRunning, rSucc, rFail, rTr, rEvts []int32
	rReasons                                         []string
	rExpires                                         []*time.Time
	// manifests
	mTask, mVersion, mEnc                []int64
	mID, mDigest, mReasons, mPayload     []string
	mNodes, mEdges                       []int64
	mNodePages, mEdgePages               []int32
	pTask                                []int64
	pDigest, pColl, pPayload             []string
	pItems, pIdx                         []int32
	nTask, nTopo, nRev                   []int64
	nKey, nID, nState, nPayload, nDigest []string
	nInv                                 []*string
	nEv                                  []int32
	nTrunc                               []bool
}

// Add adds f's first publication (a no-op for a lock-only one); it reports
// whether f has one.
func (g *FinalGroup) Add(f *FinalWrites) bool {
	fp := f.first
	if fp == nil {
		return false
	}
	id, pl, topo := fp.id, fp.pl, fp.topo
	pk := id.TaskExecutionPK
	g.rTask = append(g.rTask, pk)
	g.rAtt = append(g.rAtt, id.AttemptNumber)
	g.rGen = append(g.rGen, id.ExecutionGeneration)
	g.rRun = append(g.rRun, id.RunID)
	g.rDays = append(g.rDays, int32(pl.sum.Retention.DetailDays))
	g.rRev = append(g.rRev, pl.detailRev)
	g.rPend = append(g.rPend, int32(pl.dPend))
	g.rRunning = append(g.rRunning, int32(pl.dRun))
	g.rSucc = append(g.rSucc, int32(pl.dSucc))
	g.rFail = append(g.rFail, int32(pl.dFail))
	g.rTr = append(g.rTr, int32(pl.dTrunc))
	g.rEvts = append(g.rEvts, int32(pl.events))
	g.rReasons = append(g.rReasons, reasonsText(pl.sum.Detail.TruncationReasons))
	g.rBytes = append(g.rBytes, pl.bytes)
	g.rExpires = append(g.rExpires, fp.expires)

	g.mTask = append(g.mTask, pk)
	g.mID = append(g.mID, topo.ManifestID)
	g.mVersion = append(g.mVersion, topo.Version)
	g.mDigest = append(g.mDigest, topo.ManifestDigest)
	g.mReasons = append(g.mReasons, reasonsText(topo.Reasons))
	g.mPayload = append(g.mPayload, string(topo.Manifest))
	g.mNodes = append(g.mNodes, topo.NodeCount)
	g.mEdges = append(g.mEdges, topo.EdgeCount)
	g.mNodePages = append(g.mNodePages, int32(topo.NodePages))
	g.mEdgePages = append(g.mEdgePages, int32(topo.EdgePages))
	g.mEnc = append(g.mEnc, topo.EncodedBytes)
	for _, p := range topo.Pages {
		g.pTask = append(g.pTask, pk)
		g.pDigest = append(g.pDigest, p.Digest)
		g.pColl = append(g.pColl, string(p.Collection))
		g.pPayload = append(g.pPayload, string(p.Payload))
		g.pItems = append(g.pItems, int32(p.Items))
		g.pIdx = append(g.pIdx, int32(p.Index))
	}
	for _, r := range pl.changed {
		g.nTask = append(g.nTask, pk)
		g.nTopo = append(g.nTopo, topo.Version)
		g.nRev = append(g.nRev, pl.detailRev)
		g.nKey = append(g.nKey, r.key)
		g.nID = append(g.nID, r.nodeID)
		g.nInv = append(g.nInv, r.invocation)
		g.nState = append(g.nState, string(r.state))
		g.nEv = append(g.nEv, int32(r.events))
		g.nTrunc = append(g.nTrunc, r.truncated)
		g.nPayload = append(g.nPayload, string(r.payload))
		g.nDigest = append(g.nDigest, r.digest)
	}
	return true
}

// Len is the number of first publications added.
func (g *FinalGroup) Len() int { return len(g.rTask) }

// CTEs returns the group's data-modifying CTEs (each preceded by a comma)
// and their arguments, numbered from $base+1. locked names the caller's
// CTE of locked task rows, with columns id (the task pk) and first (the
// task has a first publication in the group): only those runs are
// written. The identity columns are checked against the fence the
// caller locked with: a run row is created only for the attempt,
// generation and run id of the group's entry.
func (g *FinalGroup) CTEs(locked string, base int) (string, []any) {
	args := []any{g.rTask, g.rAtt, g.rGen, g.rRun, g.rDays, g.rRev, g.rPend, g.rRunning, g.rSucc, g.rFail, g.rTr, g.rEvts, g.rReasons, g.rBytes, g.rExpires,
		g.pTask, g.pDigest, g.pColl, g.pPayload, g.pItems, g.pIdx,
		g.mTask, g.mID, g.mVersion, g.mDigest, g.mReasons, g.mPayload, g.mNodes, g.mEdges, g.mNodePages, g.mEdgePages, g.mEnc,
		g.nTask, g.nKey, g.nID, g.nInv, g.nState, g.nEv, g.nTrunc, g.nPayload, g.nDigest, g.nTopo, g.nRev}
	key := groupKey{locked, base}
	if sql, ok := groupSQL.Load(key); ok {
		return sql.(string), args
	}
	sql := groupCTEs(locked, base)
	groupSQL.Store(key, sql)
	return sql, args
}

// groupSQL caches groupCTEs' text by (locked, base).
var groupSQL sync.Map

type groupKey struct {
	locked string
	base   int
}

func groupCTEs(locked string, base int) string {
	p := func(i int) string { return fmt.Sprintf("$%d", base+i) }
	sql := `, pr_run AS (
  INSERT INTO rayflow_progress_runs (task_pk, attempt_number, execution_generation, run_id, detail_retention_days, detail_revision,
    detail_node_count, detail_pending_count, detail_running_count, detail_succeeded_count, detail_failed_count, detail_truncated_count,
    detail_event_count, detail_truncation_reasons, detail_encoded_bytes, detail_decoded_bytes, detail_expires_at)
  SELECT r.tk, r.att, r.gen, r.run, r.days, r.rev, r.pend + r.running + r.succ + r.fail, r.pend, r.running, r.succ, r.fail, r.tr,
    r.evts, r.reasons, r.bytes, r.bytes, r.expires
  FROM unnest(` + p(1) + `::bigint[], ` + p(2) + `::int[], ` + p(3) + `::bigint[], ` + p(4) + `::uuid[], ` + p(5) + `::int[], ` + p(6) + `::bigint[], ` +
		p(7) + `::int[], ` + p(8) + `::int[], ` + p(9) + `::int[], ` + p(10) + `::int[], ` + p(11) + `::int[], ` + p(12) + `::int[], ` +
		p(13) + `::text[], ` + p(14) + `::bigint[], ` + p(15) + `::timestamptz[])
    AS r(tk, att, gen, run, days, rev, pend, running, succ, fail, tr, evts, reasons, bytes, expires)
  JOIN ` + locked + ` l ON l.id = r.tk AND l.first
  ON CONFLICT (task_pk, attempt_number, execution_generation, run_id) DO NOTHING RETURNING id, task_pk
), pr_pg AS (
  INSERT INTO rayflow_progress_pages (run_pk, digest, collection, payload, item_count, encoded_bytes, decoded_bytes)
  SELECT pr_run.id, x.d, x.c, x.p, x.i, octet_length(x.p), octet_length(x.p)
  FROM unnest(` + p(16) + `::bigint[], ` + p(17) + `::text[], ` + p(18) + `::text[], ` + p(19) + `::text[], ` + p(20) + `::int[]) AS x(tk, d, c, p, i)
  JOIN pr_run ON pr_run.task_pk = x.tk
  RETURNING id, run_pk, digest
), pr_mf AS (
  INSERT INTO rayflow_progress_manifests (manifest_id, run_pk, topology_version, slot, manifest_digest, truncation_reasons,
    payload, node_count, edge_count, node_page_count, edge_page_count, encoded_bytes, decoded_bytes, published_at)
  SELECT m.mid, pr_run.id, m.v, 'CURRENT', m.dg, m.rs, m.pl, m.nc, m.ec, m.np, m.ep, m.eb, m.eb, now()
  FROM unnest(` + p(22) + `::bigint[], ` + p(23) + `::text[], ` + p(24) + `::bigint[], ` + p(25) + `::text[], ` + p(26) + `::text[], ` +
		p(27) + `::text[], ` + p(28) + `::bigint[], ` + p(29) + `::bigint[], ` + p(30) + `::int[], ` + p(31) + `::int[], ` + p(32) + `::bigint[])
    AS m(tk, mid, v, dg, rs, pl, nc, ec, np, ep, eb)
  JOIN pr_run ON pr_run.task_pk = m.tk
  RETURNING manifest_id, run_pk
), pr_ln AS (
  INSERT INTO rayflow_progress_manifest_pages (manifest_id, page_id, collection, page_index)
  SELECT pr_mf.manifest_id, pr_pg.id, x.c, x.i
  FROM unnest(` + p(16) + `::bigint[], ` + p(17) + `::text[], ` + p(18) + `::text[], ` + p(21) + `::int[]) AS x(tk, d, c, i)
  JOIN pr_run ON pr_run.task_pk = x.tk
  JOIN pr_pg ON pr_pg.run_pk = pr_run.id AND pr_pg.digest = x.d
  JOIN pr_mf ON pr_mf.run_pk = pr_run.id
), pr_nd AS (
  INSERT INTO rayflow_progress_nodes (run_pk, node_key, node_id, invocation_id, state, event_count, truncated,
    payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision)
  SELECT pr_run.id, n.k, n.i, n.inv, n.st, n.ec, n.tr, n.pl, n.dg, octet_length(n.pl), octet_length(n.pl), n.tv, n.dr
  FROM unnest(` + p(33) + `::bigint[], ` + p(34) + `::text[], ` + p(35) + `::text[], ` + p(36) + `::text[], ` + p(37) + `::text[], ` +
		p(38) + `::int[], ` + p(39) + `::bool[], ` + p(40) + `::text[], ` + p(41) + `::text[], ` + p(42) + `::bigint[], ` + p(43) + `::bigint[])
    AS n(tk, k, i, inv, st, ec, tr, pl, dg, tv, dr)
  JOIN pr_run ON pr_run.task_pk = n.tk
)`
	return sql
}
