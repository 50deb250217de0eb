package pgstore

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Limits are the storage caps applied when preparing a publication. V1 is
// docs/contracts.md#limits-profiles; a profile may only narrow them.
type Limits struct {
	Nodes          int   // retained topology nodes (25,000)
	Edges          int   // retained topology edges (100,000)
	PageItems      int   // items per page (256)
	PageBytes      int   // encoded bytes per page (256 KiB)
	ManifestBytes  int   // manifest payload (256 KiB)
	TopologyBytes  int64 // manifest + pages (16 MiB)
	RecordBytes    int   // one node/edge/detail record (16 KiB)
	DetailRows     int   // normalized detail rows (25,000)
	DetailBytes    int64 // current detail (8 MiB)
	CombinedBytes  int64 // topology + detail (32 MiB)
	RecentEvents   int   // recent events run-wide (32)
	RetentionDays  int   // terminal detail retention (7, 0–30)
	SummaryMaxSize int   // summary canonical bytes (16 KiB)
}

// V1 returns the v1 limits of docs/contracts.md#limits-profiles.
func V1() Limits {
	return Limits{Nodes: topology.MaxNodes, Edges: topology.MaxEdges, PageItems: topology.PageItems,
		PageBytes: topology.PageMaxBytes, ManifestBytes: topology.ManifestMaxBytes, TopologyBytes: topology.MaxEncodedBytes,
		RecordBytes: topology.NodeMaxBytes, DetailRows: 25000, DetailBytes: 8 << 20, CombinedBytes: 32 << 20,
		RecentEvents: 32, RetentionDays: 7, SummaryMaxSize: summary.MaxBytes}
}

// Validate checks that every field is within 1 … its v1 cap.
func (l Limits) Validate() error {
	v := V1()
	chk := func(name string, x, max int64) error {
		if x < 1 || x > max {
			return fmt.Errorf("progressstore: limit %s = %d outside 1…%d", name, x, max)
		}
		return nil
	}
	return errors.Join(chk("nodes", int64(l.Nodes), int64(v.Nodes)), chk("edges", int64(l.Edges), int64(v.Edges)),
		chk("page_items", int64(l.PageItems), int64(v.PageItems)), chk("page_bytes", int64(l.PageBytes), int64(v.PageBytes)),
		chk("manifest_bytes", int64(l.ManifestBytes), int64(v.ManifestBytes)), chk("topology_bytes", l.TopologyBytes, v.TopologyBytes),
		chk("record_bytes", int64(l.RecordBytes), int64(v.RecordBytes)), chk("detail_rows", int64(l.DetailRows), int64(v.DetailRows)),
		chk("detail_bytes", l.DetailBytes, v.DetailBytes), chk("combined_bytes", l.CombinedBytes, v.CombinedBytes),
		chk("recent_events", int64(l.RecentEvents), int64(v.RecentEvents)), chk("summary_bytes", int64(l.SummaryMaxSize), int64(v.SummaryMaxSize)),
		func() error {
			if l.RetentionDays < 0 || l.RetentionDays > 30 {
				return fmt.Errorf("progressstore: retention %d days outside 0…30", l.RetentionDays)
			}
			return nil
		}())
}

// Page is one prepared topology page.
type Page struct {
	Collection topology.Collection
	Index      int
	Items      int
	Payload    []byte // canonical {"collection","records","schema_version":1}
	Digest     string // bare hex, docs/contracts.md#digests-and-fingerprints page domain
}

// Topology is one prepared topology version: its pages and manifest.
type Topology struct {
	Version        int64
	ManifestID     string
	NodeCount      int64 // retained in pages
	EdgeCount      int64
	NodePages      int
	EdgePages      int
	Pages          []Page
	Manifest       []byte
	ManifestDigest string
	EncodedBytes   int64 // manifest + pages
	Reasons        []summary.TruncationReason
	// retained holds the node ids of the retained topology (≤ Limits.Nodes).
	retained map[string]struct{}
}

// Retained reports whether the node is in the prepared topology.
func (t *Topology) Retained(nodeID string) bool { _, ok := t.retained[nodeID]; return ok }

// ErrInvalidTopology is wrapped by preparation errors (duplicates).
var ErrInvalidTopology = errors.New("progressstore: invalid topology")

// nodeHeap is a max-heap by node id holding the smallest ids seen.
type nodeRec struct {
	id  string
	raw []byte
}
type nodeHeap []nodeRec

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return h[i].id > h[j].id }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(nodeRec)) }
func (h *nodeHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

type edgeRec struct{ s, t string }

func edgeCmp(a, b edgeRec) int { return cmp.Or(strings.Compare(a.s, b.s), strings.Compare(a.t, b.t)) }

type edgeHeap []edgeRec

func (h edgeHeap) Len() int           { return len(h) }
func (h edgeHeap) Less(i, j int) bool { return edgeCmp(h[i], h[j]) > 0 }
func (h edgeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *edgeHeap) Push(x any)        { *h = append(*h, x.(edgeRec)) }
func (h *edgeHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// PrepareTopology builds topology version v of run id from the observed
// nodes and edges, each sequence consumed once in any order. It keeps the
// lim.Nodes smallest node ids (node_count_limit) whose canonical record is
// within lim.RecordBytes (record_size_limit), then the lim.Edges smallest
// edges between retained nodes (edge_count_limit); edges with an endpoint
// not retained are dropped. Memory is O(lim.Nodes + lim.Edges), whatever
// was observed. Pages are filled greedily (NODE pages, then EDGE pages);
// while the manifest is over lim.ManifestBytes or manifest + pages over
// lim.TopologyBytes, the last page is dropped (topology_encoded_bytes and
// topology_decoded_bytes). Duplicates among retained records are errors.
// extra are topology-side reasons already known (the collector's).
func PrepareTopology(id common.RunIdentity, v int64, manifestID string, nodes iter.Seq[topology.Node], edges iter.Seq[topology.Edge], lim Limits, extra ...summary.TruncationReason) (*Topology, error) {
	reasons := map[summary.TruncationReason]bool{}
	for _, r := range extra {
		reasons[r] = true
	}
	nh := make(nodeHeap, 0, min(lim.Nodes, 1024))
	inHeap := map[string]struct{}{}
	for n := range nodes {
		if len(n.NodeID) > 256 {
			reasons[summary.TruncationReasonRecordSizeLimit] = true
			continue
		}
		if len(nh) == lim.Nodes && n.NodeID > nh[0].id {
			reasons[summary.TruncationReasonNodeCountLimit] = true
			continue
		}
		if _, dup := inHeap[n.NodeID]; dup {
			return nil, fmt.Errorf("%w: duplicate node %q", ErrInvalidTopology, n.NodeID)
		}
		raw, err := canonical.NoFold.Marshal(&n)
		if err != nil {
			return nil, fmt.Errorf("progressstore: node %q: %w", n.NodeID, err)
		}
		if len(raw) > lim.RecordBytes {
			reasons[summary.TruncationReasonRecordSizeLimit] = true
			continue
		}
		if len(nh) == lim.Nodes {
			old := heap.Pop(&nh).(nodeRec)
			delete(inHeap, old.id)
			reasons[summary.TruncationReasonNodeCountLimit] = true
		}
		heap.Push(&nh, nodeRec{id: n.NodeID, raw: raw})
		inHeap[n.NodeID] = struct{}{}
	}
	eh := make(edgeHeap, 0, min(lim.Edges, 1024))
	inEdges := map[edgeRec]struct{}{}
	for e := range edges {
		r := edgeRec{e.Source, e.Target}
		_, okS := inHeap[r.s]
		_, okT := inHeap[r.t]
		if !okS || !okT {
			continue
		}
		if len(eh) == lim.Edges && edgeCmp(r, eh[0]) > 0 {
			reasons[summary.TruncationReasonEdgeCountLimit] = true
			continue
		}
		if _, dup := inEdges[r]; dup {
			return nil, fmt.Errorf("%w: duplicate edge %q → %q", ErrInvalidTopology, r.s, r.t)
		}
		if len(eh) == lim.Edges {
			delete(inEdges, heap.Pop(&eh).(edgeRec))
			reasons[summary.TruncationReasonEdgeCountLimit] = true
		}
		heap.Push(&eh, r)
		inEdges[r] = struct{}{}
	}
	inEdges = nil
	ns := []nodeRec(nh)
	slices.SortFunc(ns, func(a, b nodeRec) int { return strings.Compare(a.id, b.id) })
	es := []edgeRec(eh)
	slices.SortFunc(es, edgeCmp)

	t := &Topology{Version: v, ManifestID: manifestID, retained: inHeap}
	var nodePages, edgePages []Page
	nodePages = fill(topology.CollectionNode, len(ns), func(i int) []byte { return ns[i].raw }, lim)
	edgePages = fill(topology.CollectionEdge, len(es), func(i int) []byte {
		b, _ := canonical.NoFold.Marshal(&topology.Edge{Source: es[i].s, Target: es[i].t})
		return b
	}, lim)
	pages := append(nodePages, edgePages...)
	for {
		t.Pages = pages
		if err := t.buildManifest(id, reasons); err != nil {
			return nil, err
		}
		if len(t.Manifest) <= lim.ManifestBytes && t.EncodedBytes <= lim.TopologyBytes || len(pages) == 0 {
			break
		}
		pages = pages[:len(pages)-1]
		reasons[summary.TruncationReasonTopologyEncodedBytes] = true
		reasons[summary.TruncationReasonTopologyDecodedBytes] = true
	}
	if len(t.Manifest) > lim.ManifestBytes || t.EncodedBytes > lim.TopologyBytes {
		return nil, fmt.Errorf("progressstore: an empty manifest is %d bytes, over the limits", len(t.Manifest))
	}
	// Nodes dropped with their pages leave the retained set.
	if t.NodeCount < int64(len(ns)) {
		for _, n := range ns[t.NodeCount:] {
			delete(t.retained, n.id)
		}
	}
	return t, nil
}

// fill packs n canonical records greedily into pages.
func fill(c topology.Collection, n int, rec func(int) []byte, lim Limits) []Page {
	head := []byte(`{"collection":"` + string(c) + `","records":[`)
	const tail = `],"schema_version":1}`
	var pages []Page
	var buf bytes.Buffer
	items := 0
	flush := func() {
		if items == 0 {
			return
		}
		buf.WriteString(tail)
		p := Page{Collection: c, Index: len(pages), Items: items, Payload: bytes.Clone(buf.Bytes())}
		p.Digest = canonical.DomainTopologyPage.Sum(p.Payload).Hex()
		pages = append(pages, p)
		buf.Reset()
		items = 0
	}
	for i := range n {
		r := rec(i)
		if items > 0 && (items == lim.PageItems || buf.Len()+1+len(r)+len(tail) > lim.PageBytes) {
			flush()
		}
		if items == 0 {
			buf.Write(head)
		} else {
			buf.WriteByte(',')
		}
		buf.Write(r)
		items++
	}
	flush()
	return pages
}

func (t *Topology) buildManifest(id common.RunIdentity, reasons map[summary.TruncationReason]bool) error {
	m := topology.Manifest{RunIdentity: id, SchemaVersion: 1, TopologyVersion: t.Version, Pages: []topology.PageRef{},
		TruncationReasons: []topology.TruncationReason{}}
	t.NodeCount, t.EdgeCount, t.NodePages, t.EdgePages, t.EncodedBytes = 0, 0, 0, 0, 0
	for _, p := range t.Pages {
		m.Pages = append(m.Pages, topology.PageRef{Collection: p.Collection, DecodedBytes: int64(len(p.Payload)), Digest: p.Digest,
			Encoding: "identity", EncodedBytes: int64(len(p.Payload)), ItemCount: int64(p.Items), PageIndex: int64(p.Index)})
		if p.Collection == topology.CollectionNode {
			t.NodeCount += int64(p.Items)
			t.NodePages++
		} else {
			t.EdgeCount += int64(p.Items)
			t.EdgePages++
		}
		t.EncodedBytes += int64(len(p.Payload))
	}
	m.NodeCount, m.EdgeCount = t.NodeCount, t.EdgeCount
	t.Reasons = t.Reasons[:0]
	for r := range reasons {
		t.Reasons = append(t.Reasons, r)
	}
	slices.Sort(t.Reasons)
	for _, r := range t.Reasons {
		m.TruncationReasons = append(m.TruncationReasons, topology.TruncationReason(r))
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("progressstore: manifest: %w", err)
	}
	b, err := canonical.NoFold.Marshal(&m)
	if err != nil {
		return err
	}
	t.Manifest = b
	t.ManifestDigest = canonical.DomainTopologyManifest.Sum(b).Hex()
	t.EncodedBytes += int64(len(b))
	return nil
}

// reasonsText joins reasons as stored in the database (sorted, unique, comma-joined).
func reasonsText[R ~string](rs []R) string {
	ss := make([]string, len(rs))
	for i, r := range rs {
		ss[i] = string(r)
	}
	slices.Sort(ss)
	return strings.Join(slices.Compact(ss), ",")
}
