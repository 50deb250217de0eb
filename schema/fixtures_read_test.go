package schema_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// readFixtures cover the read-service envelopes, the read error body and the
// cursor payloads (docs/contracts.md#reads-cursors-and-error-codes): every cap at its v1 value and one over,
// every cross-field rule broken once.
func readFixtures() []fixture {
	okF := func(def, name, base string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Valid: true}
	}
	bad := func(def, name, base, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Want: []string{want}}
	}
	const (
		S = "ReadSummary"
		P = "ReadPage"
		N = "ReadNode"
		E = "ReadErrorBody"
		C = "ReadCursor"
	)
	node := func(i int) any {
		return map[string]any{"callable_path": nil, "kind": "task", "label": "n", "node_id": fmt.Sprintf("n%04d", i), "ray_options": map[string]any{}, "runtime_env": map[string]any{}}
	}
	edge := func(i int) any { return map[string]any{"source": "a", "target": fmt.Sprintf("t%04d", i)} }
	nd, err := os.ReadFile(filepath.Join("testdata", "valid", "NodeDetail", "base.json"))
	if err != nil {
		panic(err)
	}
	notReported := []edit{
		set("/availability", "NOT_REPORTED"), set("/complete", false),
		set("/publication", map[string]any{"summary_revision": nil, "topology_version": nil, "detail_revision": nil}),
	}
	two := repeat("é", 128) // 256 UTF-8 bytes
	maxInt := json.Number("9223372036854775807")
	return []fixture{
		// summary read
		okF(S, "not_reported", "base", append(notReported, set("/source_schema_version", nil), set("/summary", nil))...),
		okF(S, "legacy_source", "base", set("/source_schema_version", 2)),
		okF(S, "revision_at_max", "base", set("/publication/summary_revision", maxInt), set("/summary/summary_revision", maxInt)),
		bad(S, "source_schema_version_over", "base", "MAX /source_schema_version", set("/source_schema_version", 4)),
		bad(S, "source_schema_version_zero", "base", "MIN /source_schema_version", set("/source_schema_version", 0)),
		bad(S, "schema_name", "base", "CONST /schema", set("/schema", "django-ray.workflow-progress-summary")),
		bad(S, "schema_version", "base", "CONST /schema_version", set("/schema_version", 2)),
		bad(S, "generated_at_offset", "base", "PATTERN /generated_at", set("/generated_at", "2026-07-20T10:00:06+00:00")),
		okF(S, "task_id_at_cap", "base", set("/task_id", repeat("t", 256))),
		bad(S, "task_id_over_cap", "base", "MAX_RUNES /task_id", set("/task_id", repeat("t", 257))),
		bad(S, "task_id_empty", "base", "MIN_RUNES /task_id", set("/task_id", "")),
		bad(S, "run_identity_private", "base", "UNKNOWN_FIELD /run_identity/task_execution_pk", set("/run_identity/task_execution_pk", 42)),
		bad(S, "summary_private_run_identity", "base", "UNKNOWN_FIELD /summary/run_identity/task_execution_pk", set("/summary/run_identity/task_execution_pk", 42)),
		bad(S, "summary_manifest_id", "base", "TYPE /summary/storage/manifest_id", set("/summary/storage/manifest_id", "m-1")),
		bad(S, "summary_schema_version", "base", "CONST /summary/schema_version", set("/summary/schema_version", 2)),
		bad(S, "availability_unknown", "base", "ENUM /availability", set("/availability", "GONE")),
		bad(S, "publication_topology_zero", "base", "MIN /publication/topology_version", set("/publication/topology_version", 0)),
		{Def: S, Name: "bytes_at_cap", Base: "base", Bytes: padTo(524288), Valid: true},
		{Def: S, Name: "bytes_over_cap", Base: "base", Bytes: padTo(524289), Want: []string{"TOO_LARGE"}},
		bad(S, "rule_read_complete_iff_available", "base", "RULE_READ_COMPLETE_IFF_AVAILABLE /complete", set("/complete", false)),
		bad(S, "rule_read_detail_revision_needs_topology_version", "base", "RULE_READ_DETAIL_REVISION_NEEDS_TOPOLOGY_VERSION /publication/detail_revision", append(notReported, set("/source_schema_version", nil), set("/summary", nil), set("/publication/detail_revision", 3))...),
		bad(S, "rule_summary_iff_source", "base", "RULE_SUMMARY_IFF_SOURCE /summary", set("/source_schema_version", nil)),
		bad(S, "rule_summary_matches_envelope", "base", "RULE_SUMMARY_MATCHES_ENVELOPE /summary", set("/publication/summary_revision", 6)),
		bad(S, "rule_summary_matches_envelope_run", "base", "RULE_SUMMARY_MATCHES_ENVELOPE /summary", set("/run_identity/attempt_number", 2)),

		// page read
		okF(P, "nodes_at_cap", "nodes", set("/items", list(256, node)), set("/returned_count", 256)),
		bad(P, "nodes_over_cap", "nodes", "MAX_ITEMS /items", set("/items", list(257, node)), set("/returned_count", 256)),
		bad(P, "returned_count_over_cap", "nodes", "MAX /returned_count", set("/returned_count", 257)),
		okF(P, "edges_at_cap", "edges", set("/items", list(256, edge)), set("/returned_count", 256)),
		bad(P, "edges_over_cap", "edges", "MAX_ITEMS /items", set("/items", list(257, edge)), set("/returned_count", 256)),
		okF(P, "details_at_cap", "details", set("/items", list(256, func(int) any { return json.RawMessage(nd) })), set("/returned_count", 256)),
		okF(P, "empty_last_page", "edges", set("/items", []any{}), set("/returned_count", 0)),
		okF(P, "expired", "nodes", set("/items", []any{}), set("/returned_count", 0), set("/next_cursor", nil), set("/availability", "EXPIRED"), set("/complete", false)),
		okF(P, "truncated", "nodes", set("/availability", "TRUNCATED"), set("/complete", false)),
		okF(P, "next_cursor_at_cap", "nodes", set("/next_cursor", repeat("c", 2048))),
		bad(P, "next_cursor_over_cap", "nodes", "MAX_BYTES /next_cursor", set("/next_cursor", repeat("c", 2049))),
		bad(P, "next_cursor_empty", "nodes", "MIN_RUNES /next_cursor", set("/next_cursor", "")),
		bad(P, "collection_unknown", "nodes", "UNION_TAG /collection", set("/collection", "NODE")),
		bad(P, "edge_in_node_page", "nodes", "MISSING_FIELD /items/0/node_id", set("/items/0", edge(0))),
		bad(P, "detail_item_invalid", "details", "CONST /items/0/schema_version", set("/items/0/schema_version", 1)),
		bad(P, "schema_name", "nodes", "CONST /schema", set("/schema", "rayflow.workflow-progress-node")),
		{Def: P, Name: "bytes_at_cap", Base: "nodes", Bytes: padTo(524288), Valid: true},
		{Def: P, Name: "bytes_over_cap", Base: "nodes", Bytes: padTo(524289), Want: []string{"TOO_LARGE"}},
		bad(P, "rule_node_page_count", "nodes", "RULE_NODE_PAGE_COUNT /returned_count", set("/returned_count", 3)),
		bad(P, "rule_node_page_readable", "nodes", "RULE_NODE_PAGE_READABLE /items", set("/availability", "EXPIRED"), set("/complete", false)),
		bad(P, "rule_node_page_cursor_after_items", "nodes", "RULE_NODE_PAGE_CURSOR_AFTER_ITEMS /next_cursor", set("/items", []any{}), set("/returned_count", 0)),
		bad(P, "rule_node_page_sorted", "nodes", "RULE_NODE_PAGE_SORTED /items/1", set("/items/1/node_id", "0")),
		bad(P, "rule_edge_page_count", "edges", "RULE_EDGE_PAGE_COUNT /returned_count", set("/returned_count", 0)),
		bad(P, "rule_edge_page_readable", "edges", "RULE_EDGE_PAGE_READABLE /items", set("/publication/topology_version", nil), set("/publication/detail_revision", nil)),
		bad(P, "rule_edge_page_cursor_after_items", "edges", "RULE_EDGE_PAGE_CURSOR_AFTER_ITEMS /next_cursor", set("/items", []any{}), set("/returned_count", 0), set("/next_cursor", "x")),
		bad(P, "rule_edge_page_sorted", "edges", "RULE_EDGE_PAGE_SORTED /items/1", set("/items/1", map[string]any{"source": "0", "target": "0.1"}), set("/returned_count", 2)),
		bad(P, "rule_detail_page_count", "details", "RULE_DETAIL_PAGE_COUNT /returned_count", set("/returned_count", 2)),
		bad(P, "rule_detail_page_readable", "details", "RULE_DETAIL_PAGE_READABLE /items", set("/publication/detail_revision", nil)),
		bad(P, "rule_detail_page_cursor_after_items", "details", "RULE_DETAIL_PAGE_CURSOR_AFTER_ITEMS /next_cursor", set("/items", []any{}), set("/returned_count", 0), set("/next_cursor", "x")),

		// node read
		okF(N, "absent_not_reported", "absent", notReported...),
		bad(N, "found_without_detail", "found", "MISSING_FIELD /item/node_id", del("/item/node_id")),
		bad(N, "schema_name", "found", "CONST /schema", set("/schema", "rayflow.workflow-progress-page")),
		bad(N, "found_not_bool", "absent", "TYPE /found", set("/found", 0)),
		{Def: N, Name: "bytes_at_cap", Base: "found", Bytes: padTo(524288), Valid: true},
		{Def: N, Name: "bytes_over_cap", Base: "found", Bytes: padTo(524289), Want: []string{"TOO_LARGE"}},
		bad(N, "rule_found_iff_item", "absent", "RULE_FOUND_IFF_ITEM /found", set("/found", true)),
		bad(N, "rule_found_iff_item_item", "found", "RULE_FOUND_IFF_ITEM /found", set("/found", false)),
		bad(N, "rule_found_node_readable", "found", "RULE_FOUND_NODE_READABLE /availability", set("/availability", "MISSING"), set("/complete", false)),

		// error body
		okF(E, "message_at_cap", "base", set("/message", repeat("é", 1024))),
		bad(E, "message_over_cap", "base", "MAX_BYTES /message", set("/message", repeat("é", 1024)+"x")),
		bad(E, "message_empty", "base", "MIN_RUNES /message", set("/message", "")),
		bad(E, "code_unknown", "base", "ENUM /code", set("/code", "TIMEOUT")),
		bad(E, "status_field", "base", "UNKNOWN_FIELD /status", set("/status", 409)),
		{Def: E, Name: "bytes_at_cap", Base: "base", Bytes: padTo(4096), Valid: true},
		{Def: E, Name: "bytes_over_cap", Base: "base", Bytes: padTo(4097), Want: []string{"TOO_LARGE"}},

		// cursor payload
		okF(C, "limit_at_cap", "nodes", set("/limit", 256)),
		bad(C, "limit_over_cap", "nodes", "MAX /limit", set("/limit", 257)),
		bad(C, "limit_zero", "nodes", "MIN /limit", set("/limit", 0)),
		bad(C, "v_other", "nodes", "CONST /v", set("/v", 2)),
		bad(C, "owner_upper_hex", "nodes", "PATTERN /owner", set("/owner", repeat("A", 64))),
		bad(C, "run_short", "nodes", "PATTERN /run", set("/run", repeat("2", 63))),
		bad(C, "run_identity_private", "nodes", "UNKNOWN_FIELD /run_identity/task_execution_pk", set("/run_identity/task_execution_pk", 42)),
		okF(C, "node_seen_at_cap", "nodes", set("/seen", 25000)),
		bad(C, "node_seen_over_cap", "nodes", "MAX /seen", set("/seen", 25001)),
		bad(C, "seen_zero", "nodes", "MIN /seen", set("/seen", 0)),
		okF(C, "edge_seen_at_cap", "edges", set("/seen", 100000)),
		bad(C, "edge_seen_over_cap", "edges", "MAX /seen", set("/seen", 100001)),
		okF(C, "detail_seen_at_cap", "details", set("/seen", 25000)),
		bad(C, "detail_seen_over_cap", "details", "MAX /seen", set("/seen", 25001)),
		okF(C, "page_index_at_cap", "nodes", set("/position/0", 99999)),
		bad(C, "page_index_over_cap", "nodes", "MAX /position/0", set("/position/0", 100000)),
		bad(C, "position_three", "edges", "MAX_ITEMS /position", set("/position/2", 0)),
		bad(C, "position_one", "edges", "MIN_ITEMS /position", del("/position/1")),
		okF(C, "node_after_at_cap", "nodes", set("/after", two)),
		bad(C, "node_after_over_cap", "nodes", "MAX_BYTES /after", set("/after", two+"x")),
		okF(C, "edge_after_at_cap", "edges", set("/after", []any{two, two})),
		bad(C, "edge_after_over_cap", "edges", "MAX_BYTES /after/1", set("/after/1", two+"x")),
		bad(C, "edge_after_single", "edges", "MIN_ITEMS /after", set("/after", []any{"0"})),
		bad(C, "detail_after_node_id", "details", "PATTERN /after", set("/after", "0.1")),
		bad(C, "node_cursor_detail_revision", "nodes", "TYPE /detail_revision", set("/detail_revision", 3)),
		bad(C, "detail_cursor_position", "details", "TYPE /position", set("/position", []any{0, 1})),
		bad(C, "detail_cursor_no_revision", "details", "TYPE /detail_revision", set("/detail_revision", nil)),
		bad(C, "node_cursor_filters", "nodes", "MAX_ITEMS /filters", set("/filters", []any{[]any{"state", "RUNNING"}})),
		bad(C, "detail_filters_two", "details", "MAX_ITEMS /filters", set("/filters/1", []any{"state", "RUNNING"})),
		bad(C, "detail_filter_short", "details", "MIN_ITEMS /filters/0", set("/filters/0", []any{"state"})),
		okF(C, "detail_no_filter", "details", set("/filters", []any{})),
		bad(C, "order_mismatch", "edges", "CONST /order", set("/order", "node_id_asc")),
		bad(C, "collection_unknown", "nodes", "UNION_TAG /collection", set("/collection", "topology")),
		{Def: C, Name: "bytes_at_cap", Base: "edges", Bytes: padTo(2048), Valid: true},
		{Def: C, Name: "bytes_over_cap", Base: "edges", Bytes: padTo(2049), Want: []string{"TOO_LARGE"}},
		bad(C, "rule_node_cursor_position", "nodes", "RULE_NODE_CURSOR_POSITION /position/1", set("/position/1", 256)),
		bad(C, "rule_edge_cursor_position", "edges", "RULE_EDGE_CURSOR_POSITION /position/1", set("/position/1", 256)),
		bad(C, "rule_detail_cursor_filters", "details", "RULE_DETAIL_CURSOR_FILTERS /filters/0", set("/filters/0/1", "DONE")),
		bad(C, "rule_detail_cursor_filters_key", "details", "RULE_DETAIL_CURSOR_FILTERS /filters/0", set("/filters/0/0", "kind")),
	}
}
