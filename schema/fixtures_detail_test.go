package schema_test

import (
	"encoding/json"
	"fmt"
)

// detailFixtures cover node detail v2 and the output preview envelope
// (docs/contracts.md#node-detail, docs/contracts.md#metrics-and-metadata, docs/contracts.md#output-previews).
func detailFixtures() []fixture {
	okF := func(def, name string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Valid: true}
	}
	bad := func(def, name, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Want: []string{want}}
	}
	const (
		O = "OutputPreview"
		G = "NodeProgress"
		F = "NodeFanout"
		D = "NodeDetail"
	)
	nest := func(n int) any { // n nested lists around "x"
		var v any = "x"
		for range n {
			v = []any{v}
		}
		return v
	}
	metrics := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("m%02d", i)] = i
		}
		return m
	}
	ev := func(i int) any {
		return map[string]any{"event": "map_progress", "label": "items", "state": "RUNNING", "timestamp": fmt.Sprintf("2026-07-20T10:00:%02dZ", i)}
	}
	running := []edit{set("/state", "RUNNING"), set("/finished_at", nil), set("/output_preview", map[string]any{"availability": "PENDING", "schema_version": 1, "value": nil}), set("/progress/current", 1), set("/progress/percent", 33.3)}
	with := func(a []edit, b ...edit) []edit { return append(append([]edit{}, a...), b...) }
	var out []fixture
	// preview envelope: every status, value only for AVAILABLE/REDACTED
	for _, s := range []string{"NOT_REQUESTED", "PENDING", "TOO_LARGE", "UNSUPPORTED", "FAILED", "UNAVAILABLE", "OMITTED_BY_POLICY"} {
		out = append(out, okF(O, "status_"+s, set("/availability", s), set("/value", nil)))
		out = append(out, bad(O, "rule_preview_value_only_when_carried_"+s, "RULE_PREVIEW_VALUE_ONLY_WHEN_CARRIED /value", set("/availability", s), set("/value", 0)))
	}
	out = append(out,
		okF(O, "available_null", set("/value", nil)),
		okF(O, "available_scalar", set("/value", "A-1")),
		okF(O, "redacted_scalar", set("/availability", "REDACTED"), set("/value", "[REDACTED]")),
		okF(O, "redacted_nested", set("/availability", "REDACTED"), set("/value", map[string]any{"a": []any{map[string]any{"token": "[REDACTED]"}}})),
		okF(O, "redacted_key", set("/availability", "REDACTED"), set("/value", map[string]any{"[REDACTED]": 1})),
		okF(O, "available_marker_substring", set("/value", "x[REDACTED]x")),
		bad(O, "status_unknown", "ENUM /availability", set("/availability", "HIDDEN")),
		bad(O, "schema_version", "CONST /schema_version", set("/schema_version", 2)),
		bad(O, "value_missing", "MISSING_FIELD /value", del("/value")),
		bad(O, "unknown_field", "UNKNOWN_FIELD /reason", set("/reason", "x")),
		okF(O, "depth_at_cap", set("/value", nest(4))),
		bad(O, "rule_preview_value_depth", "RULE_PREVIEW_VALUE_DEPTH /value", set("/value", nest(5))),
		bad(O, "rule_preview_value_depth_object", "RULE_PREVIEW_VALUE_DEPTH /value", set("/value", map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{}}}}})),
		bad(O, "rule_redacted_has_marker", "RULE_REDACTED_HAS_MARKER /value", set("/availability", "REDACTED"), set("/value", "secret-free")),
		bad(O, "rule_available_has_no_marker", "RULE_AVAILABLE_HAS_NO_MARKER /value", set("/value", []any{1, []any{"[REDACTED]"}})),
		bad(O, "rule_available_has_no_marker_key", "RULE_AVAILABLE_HAS_NO_MARKER /value", set("/value", map[string]any{"[REDACTED]": "x"})),
	)
	// progress and metrics (docs/contracts.md#metrics-and-metadata)
	out = append(out,
		okF(G, "total_zero", set("/total", 0), set("/current", 0), set("/percent", 100)),
		okF(G, "percent_rounded_up", set("/current", 2), set("/percent", 66.7)),
		okF(G, "metrics_at_cap", set("/metrics", metrics(32))),
		bad(G, "metrics_over_cap", "MAX_FIELDS /metrics", set("/metrics", metrics(33))),
		okF(G, "metric_key_at_cap", set("/metrics", map[string]any{repeat("é", 32): 1})),
		bad(G, "rule_metrics_shape_key_over_cap", "RULE_METRICS_SHAPE /metrics/"+repeat("é", 32)+"x", set("/metrics", map[string]any{repeat("é", 32) + "x": 1})),
		bad(G, "rule_metrics_shape_key_empty", "RULE_METRICS_SHAPE /metrics/", set("/metrics", map[string]any{"": 1})),
		okF(G, "metric_string_at_cap", set("/metrics/stage", repeat("é", 128))),
		bad(G, "rule_metrics_shape_string_over_cap", "RULE_METRICS_SHAPE /metrics/stage", set("/metrics/stage", repeat("é", 128)+"x")),
		bad(G, "rule_metrics_shape_object", "RULE_METRICS_SHAPE /metrics/stage", set("/metrics/stage", map[string]any{})),
		okF(G, "metric_int_at_cap", set("/metrics/rows", json.Number("9223372036854775807")), set("/metrics/x", json.Number("-9223372036854775808"))),
		bad(G, "rule_metrics_shape_int_over_cap", "RULE_METRICS_SHAPE /metrics/rows", set("/metrics/rows", json.Number("9223372036854775808"))),
		okF(G, "message_at_cap", set("/message", repeat("é", 1024))),
		bad(G, "message_over_cap", "MAX_BYTES /message", set("/message", repeat("é", 1024)+"x")),
		bad(G, "percent_over_cap", "MAX /percent", set("/percent", 100.1)),
		bad(G, "rule_progress_percent_matches", "RULE_PROGRESS_PERCENT_MATCHES /percent", set("/percent", 33.4)),
		bad(G, "rule_progress_percent_matches_zero_total", "RULE_PROGRESS_PERCENT_MATCHES /percent", set("/total", 0), set("/current", 0), set("/percent", 0)),
		bad(G, "rule_progress_current_le_total", "RULE_PROGRESS_CURRENT_LE_TOTAL /current", set("/current", 4), set("/percent", 100)),
	)
	// fanout
	out = append(out,
		okF(F, "unbounded", set("/max_items", nil), set("/max_concurrency", nil)),
		bad(F, "max_items_zero", "MIN /max_items", set("/max_items", 0)),
		// rayflow's reused count of a resumable map: ≥ 1 when present.
		okF(F, "reused_items_one", set("/reused_items", 1)),
		bad(F, "reused_items_zero", "MIN /reused_items", set("/reused_items", 0)),
		bad(F, "reused_items_null", "TYPE /reused_items", set("/reused_items", nil)),
		bad(F, "rule_fanout_in_flight", "RULE_FANOUT_IN_FLIGHT /in_flight_items", set("/in_flight_items", 1)),
		bad(F, "rule_fanout_within_max_items", "RULE_FANOUT_WITHIN_MAX_ITEMS /submitted_items", set("/max_items", 4)),
	)
	// node detail
	out = append(out,
		okF(D, "running", running...),
		okF(D, "pending", with(running, set("/state", "PENDING"), set("/started_at", nil), set("/execution", nil), set("/progress", nil), set("/output_preview/availability", "NOT_REQUESTED"))...),
		okF(D, "failed", set("/state", "FAILED"), set("/error", "ValueError: bad row"), set("/output_preview", map[string]any{"availability": "UNAVAILABLE", "schema_version": 1, "value": nil})),
		okF(D, "map_drained", set("/fanout", map[string]any{"completed_items": 10, "in_flight_items": 0, "input_exhausted": true, "max_concurrency": 4, "max_items": 10, "submitted_items": 10})),
		okF(D, "invocation_identity", set("/invocation_identity", map[string]any{"schema_version": 1, "task_execution_pk": 42, "attempt_number": 1, "execution_generation": 0, "run_id": "9b2f3c1e-6f0a-4d7e-8a51-2f6c0d9e4b11", "invocation_id": "inv-1"})),
		okF(D, "events_at_cap", set("/recent_events", list(32, ev))),
		bad(D, "events_over_cap", "MAX_ITEMS /recent_events", set("/recent_events", list(33, ev))),
		okF(D, "event_label_at_cap", set("/recent_events/0/label", repeat("l", 512))),
		bad(D, "event_label_over_cap", "MAX_BYTES /recent_events/0/label", set("/recent_events/0/label", repeat("l", 513))),
		bad(D, "event_unknown", "ENUM /recent_events/0/event", set("/recent_events/0/event", "edges_registered")),
		okF(D, "node_id_at_cap", set("/node_id", repeat("é", 128))),
		bad(D, "node_id_over_cap", "MAX_BYTES /node_id", set("/node_id", repeat("é", 128)+"x")),
		okF(D, "error_at_cap", set("/state", "FAILED"), set("/error", repeat("e", 2048)), set("/output_preview/availability", "FAILED"), set("/output_preview/value", nil)),
		bad(D, "error_over_cap", "MAX_BYTES /error", set("/state", "FAILED"), set("/error", repeat("e", 2049)), set("/output_preview/availability", "FAILED"), set("/output_preview/value", nil)),
		okF(D, "ray_id_at_cap", set("/execution/ray_task_id", repeat("a", 256))),
		bad(D, "ray_id_over_cap", "MAX_BYTES /execution/ray_task_id", set("/execution/ray_task_id", repeat("a", 257))),
		bad(D, "ray_id_empty", "MIN_RUNES /execution/ray_worker_id", set("/execution/ray_worker_id", "")),
		bad(D, "resource_negative", "MIN /execution/assigned_resources/CPU", set("/execution/assigned_resources/CPU", -1)),
		bad(D, "schema_version_1", "CONST /schema_version", set("/schema_version", 1)),
		bad(D, "preview_missing", "MISSING_FIELD /output_preview", del("/output_preview")),
		fixture{Def: D, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		fixture{Def: D, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		bad(D, "rule_pending_not_started", "RULE_PENDING_NOT_STARTED /state", with(running, set("/state", "PENDING"))...),
		bad(D, "rule_running_started_not_finished", "RULE_RUNNING_STARTED_NOT_FINISHED /state", with(running, set("/started_at", nil))...),
		bad(D, "rule_succeeded_finished_without_error", "RULE_SUCCEEDED_FINISHED_WITHOUT_ERROR /state", set("/finished_at", nil)),
		bad(D, "rule_succeeded_progress_complete", "RULE_SUCCEEDED_PROGRESS_COMPLETE /progress/percent", set("/progress/current", 2), set("/progress/percent", 66.7)),
		bad(D, "rule_succeeded_fanout_drained", "RULE_SUCCEEDED_FANOUT_DRAINED /fanout", set("/fanout", map[string]any{"completed_items": 9, "in_flight_items": 1, "input_exhausted": true, "max_concurrency": 4, "max_items": 10, "submitted_items": 10})),
		bad(D, "rule_failed_finished_with_error", "RULE_FAILED_FINISHED_WITH_ERROR /state", set("/state", "FAILED"), set("/output_preview/availability", "FAILED"), set("/output_preview/value", nil)),
		bad(D, "rule_terminal_preview_not_pending", "RULE_TERMINAL_PREVIEW_NOT_PENDING /output_preview/availability", set("/output_preview/availability", "PENDING"), set("/output_preview/value", nil)),
		bad(D, "rule_preview_value_only_on_success", "RULE_PREVIEW_VALUE_ONLY_ON_SUCCESS /output_preview/availability", set("/state", "FAILED"), set("/error", "boom")),
		okF(D, "started_is_finished", set("/finished_at", "2026-07-20T10:00:01Z"), set("/recent_events/1/timestamp", "2026-07-20T10:00:01Z")),
		bad(D, "rule_started_not_after_finished", "RULE_STARTED_NOT_AFTER_FINISHED /finished_at", set("/finished_at", "2026-07-20T10:00:00.999999Z")),
		okF(D, "events_same_second", set("/recent_events/1/timestamp", "2026-07-20T10:00:01.000001Z")),
		okF(D, "events_equal_time", set("/recent_events/1/timestamp", "2026-07-20T10:00:01Z")),
		bad(D, "rule_recent_events_ordered", "RULE_RECENT_EVENTS_ORDERED /recent_events/1", set("/recent_events/0/timestamp", "2026-07-20T10:00:01.500000Z"), set("/recent_events/1/timestamp", "2026-07-20T10:00:01Z")),
		bad(D, "rule_recent_events_ordered_invalid_date", "RULE_RECENT_EVENTS_ORDERED /recent_events/1", set("/recent_events/1/timestamp", "2026-02-30T10:00:04Z")),
		// docs/contracts.md#output-previews shape limits of the preview value
		okF(O, "items_at_cap", set("/value", map[string]any{"a": list(16, func(i int) any { return i }), "b": list(14, func(i int) any { return i })})),
		bad(O, "rule_preview_value_shape", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", map[string]any{"a": list(16, func(i int) any { return i }), "b": list(15, func(i int) any { return i })})),
		okF(O, "list_at_cap", set("/value", list(16, func(i int) any { return i }))),
		bad(O, "rule_preview_value_shape_list", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", list(17, func(i int) any { return i }))),
		okF(O, "object_at_cap", set("/value", metrics(15))),
		bad(O, "rule_preview_value_shape_object", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", metrics(16))),
		okF(O, "key_at_cap", set("/value", map[string]any{repeat("é", 32): 1})),
		bad(O, "rule_preview_value_shape_key", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", map[string]any{repeat("é", 32) + "x": 1})),
		bad(O, "rule_preview_value_shape_key_empty", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", map[string]any{"": 1})),
		okF(O, "string_at_cap", set("/value", []any{repeat("é", 128)})),
		bad(O, "rule_preview_value_shape_string", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", []any{repeat("é", 128) + "x"})),
		okF(O, "integer_at_cap", set("/value", []any{json.Number("9007199254740991"), json.Number("-9007199254740991")})),
		bad(O, "rule_preview_value_shape_integer", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", json.Number("9007199254740992"))),
		bad(O, "rule_preview_value_shape_negative", "RULE_PREVIEW_VALUE_SHAPE /value", set("/value", map[string]any{"n": json.Number("-9007199254740992")})),
		okF(O, "large_float", set("/value", json.Number("9007199254740993.5"))),
	)
	return out
}
