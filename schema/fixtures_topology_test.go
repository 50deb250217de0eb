package schema_test

import "fmt"

// topologyFixtures cover the topology records (docs/contracts.md#topology-pages-and-manifest): every cap at
// its v1 value and one over, every cross-field rule broken once.
func topologyFixtures() []fixture {
	okF := func(def, name, base string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Valid: true}
	}
	bad := func(def, name, base, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Want: []string{want}}
	}
	node := func(i int) any {
		return map[string]any{"callable_path": nil, "kind": "task", "label": "n", "node_id": fmt.Sprintf("n%04d", i), "ray_options": map[string]any{}, "runtime_env": map[string]any{}}
	}
	edge := func(i int) any { return map[string]any{"source": "a", "target": fmt.Sprintf("t%04d", i)} }
	keys := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%03d", i)] = i
		}
		return m
	}
	page := func(c string, i, items, bytes int) any {
		return map[string]any{"collection": c, "decoded_bytes": bytes, "digest": fmt.Sprintf("%064x", i+1), "encoding": "identity", "encoded_bytes": bytes, "item_count": items, "page_index": i}
	}
	const (
		N = "TopologyNode"
		E = "TopologyEdge"
		P = "TopologyPage"
		M = "TopologyManifest"
		R = "TopologyPageRef"
	)
	two := repeat("é", 128) // 256 UTF-8 bytes, 128 code points
	return []fixture{
		// node record
		okF(N, "map_kind", "base", set("/kind", "map"), set("/callable_path", nil)),
		bad(N, "kind_unknown", "base", "ENUM /kind", set("/kind", "actor")),
		okF(N, "node_id_at_cap", "base", set("/node_id", two)),
		bad(N, "node_id_over_cap", "base", "MAX_BYTES /node_id", set("/node_id", two+"x")),
		bad(N, "node_id_empty", "base", "MIN_RUNES /node_id", set("/node_id", "")),
		okF(N, "label_at_cap", "base", set("/label", repeat("é", 256))),
		bad(N, "label_over_cap", "base", "MAX_BYTES /label", set("/label", repeat("é", 256)+"x")),
		okF(N, "callable_path_at_cap", "base", set("/callable_path", repeat("p", 512))),
		bad(N, "callable_path_over_cap", "base", "MAX_BYTES /callable_path", set("/callable_path", repeat("p", 513))),
		okF(N, "ray_options_at_cap", "base", set("/ray_options", keys(256))),
		bad(N, "ray_options_over_cap", "base", "MAX_FIELDS /ray_options", set("/ray_options", keys(257))),
		bad(N, "runtime_env_not_object", "base", "TYPE /runtime_env", set("/runtime_env", []any{})),
		okF(N, "metadata_depth_at_cap", "base", set("/runtime_env", map[string]any{"a": map[string]any{"b": []any{map[string]any{"d": []any{map[string]any{}}}}}})),
		bad(N, "rule_metadata_depth", "base", "RULE_METADATA_DEPTH /ray_options", set("/ray_options", map[string]any{"a": map[string]any{"b": []any{map[string]any{"d": []any{[]any{[]any{}}}}}}})),
		bad(N, "unknown_field", "base", "UNKNOWN_FIELD /dependencies", set("/dependencies", []any{})),
		{Def: N, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		{Def: N, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		// edge record
		okF(E, "endpoints_at_cap", "base", set("/source", two), set("/target", two)),
		bad(E, "source_over_cap", "base", "MAX_BYTES /source", set("/source", two+"x")),
		bad(E, "target_over_cap", "base", "MAX_BYTES /target", set("/target", two+"x")),
		bad(E, "target_empty", "base", "MIN_RUNES /target", set("/target", "")),
		{Def: E, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		{Def: E, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		// pages
		okF(P, "nodes_at_cap", "base", set("/records", list(256, node))),
		bad(P, "nodes_over_cap", "base", "MAX_ITEMS /records", set("/records", list(257, node))),
		okF(P, "edges_at_cap", "edges", set("/records", list(256, edge))),
		bad(P, "edges_over_cap", "edges", "MAX_ITEMS /records", set("/records", list(257, edge))),
		bad(P, "records_empty", "edges", "MIN_ITEMS /records", set("/records", []any{})),
		bad(P, "collection_unknown", "base", "UNION_TAG /collection", set("/collection", "DETAIL")),
		bad(P, "edge_in_node_page", "base", "MISSING_FIELD /records/1/node_id", set("/records/1", map[string]any{"source": "0", "target": "0.1"})),
		bad(P, "schema_version", "base", "CONST /schema_version", set("/schema_version", 2)),
		{Def: P, Name: "bytes_at_cap", Base: "base", Bytes: padTo(262144), Valid: true},
		{Def: P, Name: "bytes_over_cap", Base: "base", Bytes: padTo(262145), Want: []string{"TOO_LARGE"}},
		bad(P, "rule_node_records_sorted", "base", "RULE_NODE_RECORDS_SORTED /records/1", set("/records/1/node_id", "0")),
		bad(P, "rule_edge_records_sorted", "edges", "RULE_EDGE_RECORDS_SORTED /records/2", set("/records/2", map[string]any{"source": "0", "target": "0.11"})),
		// manifest
		okF(M, "empty", "base", set("/pages", []any{}), set("/node_count", 0), set("/edge_count", 0)),
		okF(M, "truncated", "base", set("/truncation_reasons", []any{"edge_count_limit", "node_count_limit", "record_size_limit"})),
		okF(M, "node_count_at_cap", "base", set("/node_count", 25000), set("/pages/0/item_count", 256), set("/pages", append(list(97, func(i int) any { return page("NODE", i, 256, 1000) }), page("NODE", 97, 168, 1000), page("EDGE", 0, 3, 150)))),
		bad(M, "node_count_over_cap", "base", "MAX /node_count", set("/node_count", 25001)),
		okF(M, "edge_count_at_cap", "base", set("/edge_count", 100000), set("/pages", append([]any{page("NODE", 0, 3, 400)}, list(391, func(i int) any { return page("EDGE", i, min(256, 100000-256*i), 2000) })...))),
		bad(M, "edge_count_over_cap", "base", "MAX /edge_count", set("/edge_count", 100001)),
		okF(M, "item_count_at_cap", "base", set("/pages/1/item_count", 256), set("/edge_count", 256)),
		bad(M, "item_count_over_cap", "base", "MAX /pages/1/item_count", set("/pages/1/item_count", 257), set("/edge_count", 257)),
		bad(M, "item_count_zero", "base", "MIN /pages/1/item_count", set("/pages/1/item_count", 0), set("/edge_count", 0)),
		okF(M, "page_bytes_at_cap", "base", set("/pages/0/encoded_bytes", 262144), set("/pages/0/decoded_bytes", 262144)),
		bad(M, "encoded_bytes_over_cap", "base", "MAX /pages/0/encoded_bytes", set("/pages/0/encoded_bytes", 262145), set("/pages/0/decoded_bytes", 262145)),
		bad(M, "decoded_bytes_over_cap", "base", "MAX /pages/0/decoded_bytes", set("/pages/0/encoded_bytes", 262144), set("/pages/0/decoded_bytes", 1048577)),
		okF(R, "page_index_at_cap", "base", set("/page_index", 99999)),
		bad(R, "page_index_over_cap", "base", "MAX /page_index", set("/page_index", 100000)),
		bad(R, "page_index_negative", "base", "MIN /page_index", set("/page_index", -1)),
		bad(M, "encoding_gzip", "base", "CONST /pages/0/encoding", set("/pages/0/encoding", "gzip")),
		bad(M, "digest_prefixed", "base", "PATTERN /pages/0/digest", set("/pages/0/digest", "sha256:8a3c1f1b2d0e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c")),
		bad(M, "reason_detail_side", "base", "ENUM /truncation_reasons/0", set("/truncation_reasons", []any{"detail_count_limit"})),
		bad(M, "reasons_repeated", "base", "UNIQUE_ITEMS /truncation_reasons/1", set("/truncation_reasons", []any{"node_count_limit", "node_count_limit"})),
		bad(M, "run_identity_public", "base", "MISSING_FIELD /run_identity/task_execution_pk", del("/run_identity/task_execution_pk")),
		bad(M, "topology_version_zero", "base", "MIN /topology_version", set("/topology_version", 0)),
		{Def: M, Name: "bytes_at_cap", Base: "base", Bytes: padTo(262144), Valid: true},
		{Def: M, Name: "bytes_over_cap", Base: "base", Bytes: padTo(262145), Want: []string{"TOO_LARGE"}},
		bad(M, "rule_identity_sizes_equal", "base", "RULE_IDENTITY_SIZES_EQUAL /pages/0/decoded_bytes", set("/pages/0/decoded_bytes", 401)),
		bad(M, "rule_pages_ordered", "base", "RULE_PAGES_ORDERED /pages/0", set("/pages", []any{page("EDGE", 0, 3, 150), page("NODE", 0, 3, 400)})),
		bad(M, "rule_pages_ordered_gap", "base", "RULE_PAGES_ORDERED /pages/1", set("/pages/1/page_index", 1)),
		bad(M, "rule_node_pages_match_node_count", "base", "RULE_NODE_PAGES_MATCH_NODE_COUNT /node_count", set("/node_count", 4)),
		bad(M, "rule_edge_pages_match_edge_count", "base", "RULE_EDGE_PAGES_MATCH_EDGE_COUNT /edge_count", set("/edge_count", 2)),
		bad(M, "rule_pages_within_topology_bytes", "base", "RULE_PAGES_WITHIN_TOPOLOGY_BYTES /pages", set("/node_count", 65), set("/edge_count", 0), set("/pages", list(65, func(i int) any { return page("NODE", i, 1, 262144) }))),
		bad(M, "rule_manifest_reasons_sorted", "base", "RULE_MANIFEST_REASONS_SORTED /truncation_reasons", set("/truncation_reasons", []any{"record_size_limit", "node_count_limit"})),
	}
}
