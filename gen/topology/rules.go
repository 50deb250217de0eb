// Hand-written, not generated: the cross-field rules of the topology records
// (docs/contracts.md#topology-pages-and-manifest) that tools/cuegen cannot translate. The same rules are
// written in CUE in schema/topology.cue, each marked @rayflow(rule=ID);
// schema/differential_test.go breaks every rule once and checks that CUE and
// this file agree.

package topology

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/rayflow/rayflow/gen/rt"
)

// ruleNodeRecordsSorted: node ids strictly increase (code point order, which
// is UTF-8 byte order): sorted and without duplicates.
func ruleNodeRecordsSorted(x *NodePage, p *rt.Path, e *rt.Errors) {
	for i := 1; i < len(x.Records); i++ {
		if !(x.Records[i-1].NodeID < x.Records[i].NodeID) {
			e.Add(p.Key("records").Index(i), CodeRuleNodeRecordsSorted, "node records must be sorted by node_id without duplicates")
			return
		}
	}
}

// ruleEdgeRecordsSorted: (source, target) strictly increases.
func ruleEdgeRecordsSorted(x *EdgePage, p *rt.Path, e *rt.Errors) {
	for i := 1; i < len(x.Records); i++ {
		a, b := x.Records[i-1], x.Records[i]
		if !(a.Source < b.Source || a.Source == b.Source && a.Target < b.Target) {
			e.Add(p.Key("records").Index(i), CodeRuleEdgeRecordsSorted, "edge records must be sorted by (source, target) without duplicates")
			return
		}
	}
}

func ruleIdentitySizesEqual(x *PageRef, p *rt.Path, e *rt.Errors) {
	if x.EncodedBytes != x.DecodedBytes {
		e.Add(p.Key("decoded_bytes"), CodeRuleIdentitySizesEqual, "identity encoding needs encoded_bytes equal to decoded_bytes")
	}
}

// rulePagesOrdered: NODE pages 0..n-1, then EDGE pages 0..m-1.
func rulePagesOrdered(x *Manifest, p *rt.Path, e *rt.Errors) {
	nNode := 0
	for _, pg := range x.Pages {
		if pg.Collection == CollectionNode {
			nNode++
		}
	}
	for i, pg := range x.Pages {
		ok := i < nNode && pg.Collection == CollectionNode && pg.PageIndex == int64(i) ||
			i >= nNode && pg.Collection == CollectionEdge && pg.PageIndex == int64(i-nNode)
		if !ok {
			e.Add(p.Key("pages").Index(i), CodeRulePagesOrdered, "pages must be the NODE pages 0.. then the EDGE pages 0..")
			return
		}
	}
}

func sumItems(x *Manifest, c Collection) int64 {
	var n int64
	for _, pg := range x.Pages {
		if pg.Collection == c {
			n += pg.ItemCount
		}
	}
	return n
}

func ruleNodePagesMatchNodeCount(x *Manifest, p *rt.Path, e *rt.Errors) {
	if sumItems(x, CollectionNode) != x.NodeCount {
		e.Add(p.Key("node_count"), CodeRuleNodePagesMatchNodeCount, "NODE page item counts must sum to node_count")
	}
}

func ruleEdgePagesMatchEdgeCount(x *Manifest, p *rt.Path, e *rt.Errors) {
	if sumItems(x, CollectionEdge) != x.EdgeCount {
		e.Add(p.Key("edge_count"), CodeRuleEdgePagesMatchEdgeCount, "EDGE page item counts must sum to edge_count")
	}
}

func rulePagesWithinTopologyBytes(x *Manifest, p *rt.Path, e *rt.Errors) {
	var enc, dec int64
	for _, pg := range x.Pages {
		enc += pg.EncodedBytes
		dec += pg.DecodedBytes
	}
	if enc > MaxEncodedBytes || dec > MaxDecodedBytes {
		e.Add(p.Key("pages"), CodeRulePagesWithinTopologyBytes, "pages exceed the topology byte caps (%d encoded, %d decoded)", MaxEncodedBytes, MaxDecodedBytes)
	}
}

func ruleManifestReasonsSorted(x *Manifest, p *rt.Path, e *rt.Errors) {
	r := x.TruncationReasons
	if !sort.SliceIsSorted(r, func(i, j int) bool { return r[i] < r[j] }) {
		e.Add(p.Key("truncation_reasons"), CodeRuleManifestReasonsSorted, "truncation reasons must be sorted")
	}
}

// MetadataMaxDepth is the container nesting cap of generic metadata
// (runtime_env, ray_options), the metadata object itself included (docs/contracts.md#metrics-and-metadata).
const MetadataMaxDepth = 6

// MetadataDepth is the container nesting of a metadata object: the object
// is depth 1, a list or object member depth 2, and so on.
func MetadataDepth(m map[string]json.RawMessage) int {
	depth := 1
	for _, raw := range m {
		depth = max(depth, 1+rawDepth(raw))
	}
	return depth
}

// rawDepth is the container nesting of one JSON value (a scalar is 0).
func rawDepth(raw json.RawMessage) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, cur := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return depth // io.EOF; raw was accepted by the strict parser
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			cur++
			depth = max(depth, cur)
		case json.Delim('}'), json.Delim(']'):
			cur--
		}
	}
}

func ruleMetadataDepth(x *Node, p *rt.Path, e *rt.Errors) {
	if MetadataDepth(x.RuntimeEnv) > MetadataMaxDepth {
		e.Add(p.Key("runtime_env"), CodeRuleMetadataDepth, "metadata nests more than %d containers", MetadataMaxDepth)
	}
	if MetadataDepth(x.RayOptions) > MetadataMaxDepth {
		e.Add(p.Key("ray_options"), CodeRuleMetadataDepth, "metadata nests more than %d containers", MetadataMaxDepth)
	}
}
