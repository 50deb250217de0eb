package pgstore

import (
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/store"
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

// FinalGroup collects several runs' deferred first publications, for the
// caller to write them in one statement of its own (the durable worker's
// group of terminal transitions, store.TransitionGroup): what firstSQL
// writes for one run, once per statement.
//
// A run whose row already exists is skipped and writes nothing; the
// statement lists the runs written, and the caller must not commit the
// final summary of any other (firstSQL raises RF003 for it instead).
type FinalGroup struct {
	g store.FinalGroup
}

// Add adds f's first publication (a no-op for a lock-only one); it reports
// whether f has one.
func (g *FinalGroup) Add(f *FinalWrites) bool {
	fp := f.first
	if fp == nil {
		return false
	}
	id, pl, topo := fp.id, fp.pl, fp.topo
	r := store.FirstRun{
		TaskPK: id.TaskExecutionPK, Attempt: id.AttemptNumber, Gen: id.ExecutionGeneration, RunID: id.RunID,
		RetentionDays: int32(pl.sum.Retention.DetailDays), DetailRevision: pl.detailRev,
		Pending: int32(pl.dPend), Running: int32(pl.dRun), Succeeded: int32(pl.dSucc), Failed: int32(pl.dFail),
		Truncated: int32(pl.dTrunc), Events: int32(pl.events),
		Reasons: reasonsText(pl.sum.Detail.TruncationReasons), Bytes: pl.bytes, Expires: fp.expires,
		Manifest: store.Manifest{
			ID: topo.ManifestID, Version: topo.Version, Digest: topo.ManifestDigest, Reasons: reasonsText(topo.Reasons),
			Payload: string(topo.Manifest), Nodes: topo.NodeCount, Edges: topo.EdgeCount,
			NodePages: int32(topo.NodePages), EdgePages: int32(topo.EdgePages), EncodedBytes: topo.EncodedBytes,
		},
	}
	for _, p := range topo.Pages {
		r.Pages = append(r.Pages, store.Page{Digest: p.Digest, Collection: string(p.Collection), Payload: string(p.Payload),
			Items: int32(p.Items), Index: int32(p.Index)})
	}
	for _, c := range pl.changed {
		r.Nodes = append(r.Nodes, store.DetailRow{Key: c.key, ID: c.nodeID, Invocation: c.invocation, State: string(c.state),
			Events: int32(c.events), Truncated: c.truncated, Payload: string(c.payload), Digest: c.digest,
			TopologyVersion: topo.Version, Revision: pl.detailRev})
	}
	g.g.Add(r)
	return true
}

// Len is the number of first publications added.
func (g *FinalGroup) Len() int { return g.g.Len() }

// Store is the group as the store writes it (store.TransitionGroup).
func (g *FinalGroup) Store() *store.FinalGroup { return &g.g }
