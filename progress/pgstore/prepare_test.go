package pgstore

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

var testID = common.RunIdentity{SchemaVersion: 1, RunID: "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab", TaskExecutionPK: 1, AttemptNumber: 1}

func nodes(n int, label string) iter.Seq[topology.Node] {
	return func(yield func(topology.Node) bool) {
		for i := range n {
			if !yield(topology.Node{NodeID: fmt.Sprintf("n%07d", i), Kind: topology.NodeKindTask, Label: label,
				RuntimeEnv: map[string]json.RawMessage{}, RayOptions: map[string]json.RawMessage{}}) {
				return
			}
		}
	}
}

func chainEdges(n int) iter.Seq[topology.Edge] {
	return func(yield func(topology.Edge) bool) {
		for i := 1; i < n; i++ {
			if !yield(topology.Edge{Source: fmt.Sprintf("n%07d", i-1), Target: fmt.Sprintf("n%07d", i)}) {
				return
			}
		}
	}
}

// fanEdges yields e edges from the first nodes to node 0..n-1 (distinct pairs).
func fanEdges(n, e int) iter.Seq[topology.Edge] {
	return func(yield func(topology.Edge) bool) {
		k := 0
		for s := 0; k < e; s++ {
			for t := 0; t < n && k < e; t++ {
				if t == s {
					continue
				}
				if !yield(topology.Edge{Source: fmt.Sprintf("n%07d", s), Target: fmt.Sprintf("n%07d", t)}) {
					return
				}
				k++
			}
		}
	}
}

func TestPrepareCaps(t *testing.T) {
	lim := V1()
	cases := []struct {
		name           string
		n, e           int
		fan            bool
		wantN, wantE   int64
		reason         summary.TruncationReason
		wantNoReasonOK bool
	}{
		{"nodes at cap", 25000, 0, false, 25000, 24999, "", true},
		{"nodes one over", 25001, 0, false, 25000, 24999, summary.TruncationReasonNodeCountLimit, false},
		{"edges at cap", 1000, 100000, true, 1000, 100000, "", true},
		{"edges one over", 1000, 100001, true, 1000, 100000, summary.TruncationReasonEdgeCountLimit, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := chainEdges(c.n)
			if c.fan {
				es = fanEdges(c.n, c.e)
			}
			top, err := PrepareTopology(testID, 1, "m-1", nodes(c.n, "x"), es, lim)
			if err != nil {
				t.Fatal(err)
			}
			if top.NodeCount != c.wantN || top.EdgeCount != c.wantE {
				t.Fatalf("retained %d/%d, want %d/%d", top.NodeCount, top.EdgeCount, c.wantN, c.wantE)
			}
			if c.wantNoReasonOK != (len(top.Reasons) == 0) || c.reason != "" && !slices.Contains(top.Reasons, c.reason) {
				t.Fatalf("reasons %v, want %q", top.Reasons, c.reason)
			}
			// The smallest node ids are kept.
			if int64(c.n) > c.wantN && (!top.Retained(fmt.Sprintf("n%07d", c.wantN-1)) || top.Retained(fmt.Sprintf("n%07d", c.wantN))) {
				t.Fatal("truncation did not keep the smallest node ids")
			}
			checkPages(t, top, lim)
		})
	}
}

// checkPages re-encodes every page and the manifest with the generated
// types and checks the greedy fill.
func checkPages(t *testing.T, top *Topology, lim Limits) {
	t.Helper()
	sawEdge := false
	for i, p := range top.Pages {
		dp, err := topology.DecodePage(p.Payload)
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		var again []byte
		switch x := dp.(type) {
		case *topology.NodePage:
			if sawEdge {
				t.Fatal("NODE page after an EDGE page")
			}
			again, _ = canonical.NoFold.Marshal(x)
		case *topology.EdgePage:
			sawEdge = true
			again, _ = canonical.NoFold.Marshal(x)
		}
		if string(again) != string(p.Payload) {
			t.Fatalf("page %d is not canonical", i)
		}
		if p.Items > lim.PageItems || len(p.Payload) > lim.PageBytes {
			t.Fatalf("page %d: %d items, %d bytes", i, p.Items, len(p.Payload))
		}
		if p.Digest != canonical.DomainTopologyPage.Sum(p.Payload).Hex() {
			t.Fatalf("page %d digest", i)
		}
	}
	if _, err := topology.DecodeManifest(top.Manifest); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifest) > lim.ManifestBytes || top.EncodedBytes > lim.TopologyBytes {
		t.Fatalf("manifest %d bytes, topology %d", len(top.Manifest), top.EncodedBytes)
	}
}

func TestPageItemsAndBytesAtCap(t *testing.T) {
	lim := V1()
	for _, c := range []struct{ n, pages int }{{256, 1}, {257, 2}} {
		top, err := PrepareTopology(testID, 1, "m-1", nodes(c.n, "x"), chainEdges(0), lim)
		if err != nil {
			t.Fatal(err)
		}
		if top.NodePages != c.pages {
			t.Fatalf("%d nodes: %d pages, want %d", c.n, top.NodePages, c.pages)
		}
		checkPages(t, top, lim)
	}
	// Byte cap: choose the page byte limit exactly at one page's size, then one below.
	top, _ := PrepareTopology(testID, 1, "m-1", nodes(10, "x"), chainEdges(0), lim)
	size := len(top.Pages[0].Payload)
	for _, c := range []struct{ limit, pages int }{{size, 1}, {size - 1, 2}} {
		l := lim
		l.PageBytes = c.limit
		top, err := PrepareTopology(testID, 1, "m-1", nodes(10, "x"), chainEdges(0), l)
		if err != nil {
			t.Fatal(err)
		}
		if top.NodePages != c.pages {
			t.Fatalf("page limit %d: %d pages, want %d", c.limit, top.NodePages, c.pages)
		}
		checkPages(t, top, l)
	}
}

func TestRecordAndTopologyBytesCaps(t *testing.T) {
	lim := V1()
	// A node record at 16 KiB is kept, one byte over is dropped (record_size_limit).
	base, _ := canonical.NoFold.Marshal(&topology.Node{NodeID: "n0000000", Kind: topology.NodeKindTask, Label: "",
		RuntimeEnv: map[string]json.RawMessage{}, RayOptions: map[string]json.RawMessage{}})
	fit := strings.Repeat("a", lim.RecordBytes-len(base))
	for _, c := range []struct {
		label string
		kept  int64
	}{{fit, 1}, {fit + "a", 0}} {
		l := lim
		top, err := PrepareTopology(testID, 1, "m-1", nodes(1, c.label), chainEdges(0), l)
		if err != nil {
			t.Fatal(err)
		}
		if top.NodeCount != c.kept || (c.kept == 0) != slices.Contains(top.Reasons, summary.TruncationReasonRecordSizeLimit) {
			t.Fatalf("label %d bytes: kept %d, reasons %v", len(c.label), top.NodeCount, top.Reasons)
		}
	}
	// Topology bytes: at the exact size nothing drops; one byte less drops the last page.
	full, _ := PrepareTopology(testID, 1, "m-1", nodes(600, "x"), chainEdges(600), lim)
	for _, c := range []struct {
		limit int64
		drop  bool
	}{{full.EncodedBytes, false}, {full.EncodedBytes - 1, true}} {
		l := lim
		l.TopologyBytes = c.limit
		top, err := PrepareTopology(testID, 1, "m-1", nodes(600, "x"), chainEdges(600), l)
		if err != nil {
			t.Fatal(err)
		}
		if c.drop != (len(top.Pages) < len(full.Pages)) || c.drop != slices.Contains(top.Reasons, summary.TruncationReasonTopologyEncodedBytes) {
			t.Fatalf("topology limit %d: %d pages of %d, reasons %v", c.limit, len(top.Pages), len(full.Pages), top.Reasons)
		}
		checkPages(t, top, l)
	}
}

func TestDuplicateNodeIsAnError(t *testing.T) {
	dup := func(yield func(topology.Node) bool) {
		for range 2 {
			if !yield(topology.Node{NodeID: "a", Kind: topology.NodeKindTask, RuntimeEnv: map[string]json.RawMessage{}, RayOptions: map[string]json.RawMessage{}}) {
				return
			}
		}
	}
	if _, err := PrepareTopology(testID, 1, "m-1", dup, chainEdges(0), V1()); err == nil {
		t.Fatal("duplicate node accepted")
	}
}
