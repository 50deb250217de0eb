package schema_test

import (
	"encoding/json"
	"fmt"
)

// eventFixtures cover the live progress events (docs/contracts.md#live-events): every kind
// has a valid base file (testdata/valid/Event/<kind>.json); caps at the
// limit and one over; every cross-field rule broken once.
func eventFixtures() []fixture {
	const V = "Event"
	okF := func(name, base string, edits ...edit) fixture {
		return fixture{Def: V, Name: name, Base: base, Edits: edits, Valid: true}
	}
	bad := func(name, base, want string, edits ...edit) fixture {
		return fixture{Def: V, Name: name, Base: base, Edits: edits, Want: []string{want}}
	}
	edge := func(i int) any { return map[string]any{"source": "0", "target": fmt.Sprintf("0.%d", i)} }
	maxInt := json.Number("9223372036854775807")
	return []fixture{
		bad("kind_unknown", "completed", "UNION_TAG /kind", set("/kind", "heartbeat")),
		bad("encoding_gzip", "completed", "CONST /encoding", set("/encoding", "gzip")),
		bad("profile_other", "completed", "CONST /limits_profile", set("/limits_profile", "terminal-v1")),
		bad("schema_version", "completed", "CONST /schema_version", set("/schema_version", 2)),
		bad("occurred_at_epoch", "completed", "TYPE /occurred_at", set("/occurred_at", 1721469601.5)),
		bad("run_identity_pk_zero", "completed", "MIN /run_identity/task_execution_pk", set("/run_identity/task_execution_pk", 0)),
		bad("payload_of_other_kind", "completed", "MISSING_FIELD /payload/error", set("/kind", "failed")),
		okF("truncated_label", "completed", set("/truncated", true), set("/payload/label", "<omitted:oversized>")),
		fixture{Def: V, Name: "wire_at_cap", Base: "completed", Bytes: padTo(32768), Valid: true},
		fixture{Def: V, Name: "wire_over_cap", Base: "completed", Bytes: padTo(32769), Want: []string{"TOO_LARGE"}},
		okF("node_id_at_cap", "completed", set("/payload/node_id", repeat("é", 128))),
		bad("node_id_over_cap", "completed", "MAX_BYTES /payload/node_id", set("/payload/node_id", repeat("é", 128)+"x")),
		bad("node_id_empty", "completed", "MIN_RUNES /payload/node_id", set("/payload/node_id", "")),
		okF("label_at_cap", "completed", set("/payload/label", repeat("l", 512))),
		bad("label_over_cap", "completed", "MAX_BYTES /payload/label", set("/payload/label", repeat("l", 513))),
		okF("error_at_cap", "failed", set("/payload/error", repeat("e", 2048))),
		bad("error_over_cap", "failed", "MAX_BYTES /payload/error", set("/payload/error", repeat("e", 2049))),
		okF("message_at_cap", "application_progress", set("/payload/message", repeat("m", 2048))),
		bad("message_over_cap", "application_progress", "MAX_BYTES /payload/message", set("/payload/message", repeat("m", 2049))),
		bad("ray_task_id_over_cap", "submitted", "MAX_BYTES /payload/ray_task_id", set("/payload/ray_task_id", repeat("a", 257))),
		okF("edges_at_cap", "edges_registered", set("/payload/edges", list(32, edge))),
		bad("edges_over_cap", "edges_registered", "MAX_ITEMS /payload/edges", set("/payload/edges", list(33, edge))),
		bad("edges_empty", "edges_registered", "MIN_ITEMS /payload/edges", set("/payload/edges", []any{})),
		bad("rule_edges_unique", "edges_registered", "RULE_EDGES_UNIQUE /payload/edges/2", set("/payload/edges/2", edge(1))),
		bad("total_zero", "application_progress", "MIN /payload/total", set("/payload/total", 0), set("/payload/current", 0)),
		okF("current_at_total", "application_progress", set("/payload/current", 3.0)),
		bad("rule_application_current_le_total", "application_progress", "RULE_APPLICATION_CURRENT_LE_TOTAL /payload/current", set("/payload/current", 3.5)),
		// CUE drops this variant's rule error from the union's error list, so
		// the rule is broken on the variant definition itself.
		{Def: "EventApplicationProgress", Name: "rule_application_metrics_shape", Base: "base", Edits: []edit{set("/payload/metrics/rows", []any{1})}, Want: []string{"RULE_APPLICATION_METRICS_SHAPE /payload/metrics/rows"}},
		bad("rule_map_completed_le_submitted", "map_progress", "RULE_MAP_COMPLETED_LE_SUBMITTED /payload/completed", set("/payload/completed", 6)),
		// rayflow's reused count of a resumable map: ≥ 1 when present.
		okF("map_reused_one", "map_progress", set("/payload/reused", 1)),
		bad("map_reused_zero", "map_progress", "MIN /payload/reused", set("/payload/reused", 0)),
		bad("map_reused_null", "map_progress", "TYPE /payload/reused", set("/payload/reused", nil)),
		bad("map_max_items_zero", "map_registered", "MIN /payload/max_items", set("/payload/max_items", 0)),
		bad("preview_rule_in_event", "output_preview", "RULE_AVAILABLE_HAS_NO_MARKER /payload/output_preview/value", set("/payload/output_preview/value", "[REDACTED]")),
		okF("settled_failed", "node_settled", set("/payload/state", "FAILED"), set("/payload/error", "boom"), set("/payload/output_preview/availability", "UNAVAILABLE")),
		bad("settled_state_running", "node_settled", "ENUM /payload/state", set("/payload/state", "RUNNING")),
		bad("rule_settled_error_iff_failed", "node_settled", "RULE_SETTLED_ERROR_IFF_FAILED /payload/error", set("/payload/error", "boom")),
		bad("rule_settled_failed_preview_without_value", "node_settled", "RULE_SETTLED_FAILED_PREVIEW_WITHOUT_VALUE /payload/output_preview/availability", set("/payload/state", "FAILED"), set("/payload/error", "boom"), set("/payload/output_preview", map[string]any{"availability": "AVAILABLE", "schema_version": 1, "value": 1})),
		bad("rule_settled_succeeded_preview_not_pending", "node_settled", "RULE_SETTLED_SUCCEEDED_PREVIEW_NOT_PENDING /payload/output_preview/availability", set("/payload/output_preview/availability", "PENDING")),
		okF("producer_saturated", "producer_report", set("/payload/saturated", true), set("/payload/offered", maxInt)),
		bad("producer_handoff_unknown", "producer_report", "ENUM /payload/terminal_handoff", set("/payload/terminal_handoff", "lost")),
		bad("rule_producer_offered_sum", "producer_report", "RULE_PRODUCER_OFFERED_SUM /payload/offered", set("/payload/offered", 10)),
		bad("rule_producer_offered_sum_overflow", "producer_report", "RULE_PRODUCER_OFFERED_SUM /payload/offered", set("/payload/offered", 5), set("/payload/superseded", maxInt), set("/payload/locally_dropped", maxInt)),
		bad("rule_producer_submitted_sum", "producer_report", "RULE_PRODUCER_SUBMITTED_SUM /payload/submitted", set("/payload/acknowledged", 4)),
		bad("plan_format_other", "initialized", "CONST /payload/plan/plan_format", set("/payload/plan/plan_format", "django-ray.workflow-plan")),
		bad("metadata_not_object", "node_registered", "TYPE /payload/ray_options", set("/payload/ray_options", nil)),
		okF("metadata_depth_at_cap", "node_registered", set("/payload/runtime_env", map[string]any{"a": []any{[]any{[]any{[]any{[]any{1}}}}}})),
		bad("rule_registered_metadata_depth", "node_registered", "RULE_REGISTERED_METADATA_DEPTH /payload/runtime_env", set("/payload/runtime_env", map[string]any{"a": []any{[]any{[]any{[]any{[]any{[]any{}}}}}}})),
		{Def: V, Name: "payload_at_cap", Base: "node_registered", Edits: []edit{set("/payload/runtime_env", map[string]any{"pad": ""})}, Bytes: padPayload(16384), Valid: true},
		{Def: V, Name: "payload_over_cap", Base: "node_registered", Edits: []edit{set("/payload/runtime_env", map[string]any{"pad": ""})}, Bytes: padPayload(16385), Want: []string{"MAX_BYTES /payload"}},
	}
}

// padPayload grows the string "pad" inside the payload until the payload
// member is n bytes.
func padPayload(n int) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
		grow := n - len(m["payload"])
		if grow < 0 {
			panic(fmt.Sprintf("payload already %d bytes", len(m["payload"])))
		}
		return replace(`"pad":""`, `"pad":"`+repeat("x", grow)+`"`)(b)
	}
}
