package store

import (
	"fmt"
	"sync"
	"time"
)

// FirstRun is the storage of a run's first progress publication, as the
// progress store writes it alone (QueueFirstPublication): the run row
// with its detail counters, the topology pages, the CURRENT manifest with
// its page links, and the changed detail rows.
type FirstRun struct {
	TaskPK, Attempt, Gen int64
	RunID                string
	RetentionDays        int32
	DetailRevision       int64
	Pending, Running     int32
	Succeeded, Failed    int32
	Truncated, Events    int32
	Reasons              string
	Bytes                int64
	Expires              *time.Time
	Manifest             Manifest
	Pages                []Page
	Nodes                []DetailRow
}

// Manifest is a topology manifest (rayflow_progress_manifests).
type Manifest struct {
	ID, Digest, Reasons, Payload string
	Version, Nodes, Edges        int64
	NodePages, EdgePages         int32
	EncodedBytes                 int64
}

// Page is a topology page (rayflow_progress_pages) at Index of its
// Collection.
type Page struct {
	Digest, Collection, Payload string
	Items, Index                int32
}

// DetailRow is a node detail row (rayflow_progress_nodes).
type DetailRow struct {
	Key, ID, State, Payload, Digest string
	Invocation                      *string
	Events                          int32
	Truncated                       bool
	TopologyVersion, Revision       int64
}

// FinalGroup writes the storage of several runs' deferred first
// publications in one statement of the caller's (TransitionGroup):
// data-modifying CTEs (pr_run, pr_pg, pr_mf, pr_ln, pr_nd) that create,
// for each run whose task is in the caller's locked set, its run row with
// counters, pages, CURRENT manifest with links and detail rows. Building
// the CHECK expressions, opening the indexes and planning the foreign-key
// checks of five tables is paid once per statement, not once per run.
//
// A run whose row already exists is skipped (ON CONFLICT DO NOTHING) and
// writes nothing; pr_run's task_pk column lists the runs written.
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

// Add adds run r.
func (g *FinalGroup) Add(r FirstRun) {
	pk := r.TaskPK
	g.rTask = append(g.rTask, pk)
	g.rAtt = append(g.rAtt, r.Attempt)
	g.rGen = append(g.rGen, r.Gen)
	g.rRun = append(g.rRun, r.RunID)
	g.rDays = append(g.rDays, r.RetentionDays)
	g.rRev = append(g.rRev, r.DetailRevision)
	g.rPend = append(g.rPend, r.Pending)
	g.rRunning = append(g.rRunning, r.Running)
	g.rSucc = append(g.rSucc, r.Succeeded)
	g.rFail = append(g.rFail, r.Failed)
	g.rTr = append(g.rTr, r.Truncated)
	g.rEvts = append(g.rEvts, r.Events)
	g.rReasons = append(g.rReasons, r.Reasons)
	g.rBytes = append(g.rBytes, r.Bytes)
	g.rExpires = append(g.rExpires, r.Expires)

	m := r.Manifest
	g.mTask = append(g.mTask, pk)
	g.mID = append(g.mID, m.ID)
	g.mVersion = append(g.mVersion, m.Version)
	g.mDigest = append(g.mDigest, m.Digest)
	g.mReasons = append(g.mReasons, m.Reasons)
	g.mPayload = append(g.mPayload, m.Payload)
	g.mNodes = append(g.mNodes, m.Nodes)
	g.mEdges = append(g.mEdges, m.Edges)
	g.mNodePages = append(g.mNodePages, m.NodePages)
	g.mEdgePages = append(g.mEdgePages, m.EdgePages)
	g.mEnc = append(g.mEnc, m.EncodedBytes)
	for _, p := range r.Pages {
		g.pTask = append(g.pTask, pk)
		g.pDigest = append(g.pDigest, p.Digest)
		g.pColl = append(g.pColl, p.Collection)
		g.pPayload = append(g.pPayload, p.Payload)
		g.pItems = append(g.pItems, p.Items)
		g.pIdx = append(g.pIdx, p.Index)
	}
	for _, n := range r.Nodes {
		g.nTask = append(g.nTask, pk)
		g.nTopo = append(g.nTopo, n.TopologyVersion)
		g.nRev = append(g.nRev, n.Revision)
		g.nKey = append(g.nKey, n.Key)
		g.nID = append(g.nID, n.ID)
		g.nInv = append(g.nInv, n.Invocation)
		g.nState = append(g.nState, n.State)
		g.nEv = append(g.nEv, n.Events)
		g.nTrunc = append(g.nTrunc, n.Truncated)
		g.nPayload = append(g.nPayload, n.Payload)
		g.nDigest = append(g.nDigest, n.Digest)
	}
}

// Len is the number of runs added.
func (g *FinalGroup) Len() int { return len(g.rTask) }

// ctes returns the group's data-modifying CTEs (each preceded by a comma)
// and their arguments, numbered from $base+1. locked names the caller's
// CTE of locked task rows, with columns id (the task pk) and first (the
// task has a first publication in the group): only those runs are
// written. The identity columns are checked against the fence the
// caller locked with: a run row is created only for the attempt,
// generation and run id of the group's entry.
func (g *FinalGroup) ctes(locked string, base int) (string, []any) {
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
