package schema_test

import (
	"encoding/json"
	"fmt"
)

func lifecycleFixtures() []fixture {
	const def = "LifecycleSnapshot"
	ok := func(name string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Valid: true}
	}
	bad := func(name, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Want: []string{want}}
	}
	outputs := func(n int) []any {
		return list(n, func(i int) any { return map[string]any{"index": i, "state": "DECLARED"} })
	}
	diags := []any{"CAPACITY_RELEASE_FAILED", "CAPACITY_RELEASE_TIMEOUT", "CANCELLATION_FAILED", "CANCELLATION_TIMEOUT", "DRAIN_FAILED", "DRAIN_TIMEOUT", "HEALTH_CHECK_FAILED", "TEARDOWN_FAILED", "TEARDOWN_TIMEOUT"}
	token := func(n int) string { // a syntactically valid token of n runes
		s := "cg-lifecycle-v1:4:"
		return s + repeat("A", n-len(s))
	}
	fs := []fixture{
		// limits at the cap and one over
		ok("outputs_at_cap", set("/outputs", outputs(64))),
		bad("outputs_over_cap", "MAX_ITEMS /outputs", set("/outputs", outputs(65))),
		ok("output_index_at_cap", set("/outputs/0/index", 63)),
		bad("output_index_over_cap", "MAX /outputs/0/index", set("/outputs/0/index", 64)),
		bad("output_index_negative", "MIN /outputs/0/index", set("/outputs/0/index", -1)),
		ok("diagnostics_at_cap", set("/cleanup_diagnostics", diags[:8])),
		bad("diagnostics_over_cap", "MAX_ITEMS /cleanup_diagnostics", set("/cleanup_diagnostics", diags)),
		bad("diagnostics_repeated", "UNIQUE_ITEMS /cleanup_diagnostics/1", set("/cleanup_diagnostics", []any{"DRAIN_FAILED", "DRAIN_FAILED"})),
		ok("run_id_at_cap_runes", set("/session_identity/run_id", repeat("é", 128))),
		bad("run_id_over_cap_runes", "MAX_RUNES /session_identity/run_id", set("/session_identity/run_id", repeat("é", 129))),
		bad("run_id_empty", "MIN_RUNES /session_identity/run_id", set("/session_identity/run_id", "")),
		ok("invocation_id_at_cap", set("/invocation_identity/invocation_id", repeat("i", 128))),
		bad("invocation_id_over_cap", "MAX_RUNES /invocation_identity/invocation_id", set("/invocation_identity/invocation_id", repeat("i", 129))),
		ok("token_at_cap", set("/pending_action/token", token(128))),
		bad("token_over_cap", "MAX_RUNES /pending_action/token", set("/pending_action/token", token(129))),
		bad("token_malformed", "PATTERN /pending_action/token", set("/pending_action/token", "cg-lifecycle-v1:0:SUBMIT")),
		ok("task_pk_at_max", set("/session_identity/task_execution_pk", json.Number("9223372036854775807"))),
		bad("task_pk_over_max", "MAX /session_identity/task_execution_pk", set("/session_identity/task_execution_pk", json.Number("9223372036854775808"))),
		bad("task_pk_zero", "MIN /session_identity/task_execution_pk", set("/session_identity/task_execution_pk", 0)),
		bad("attempt_zero", "MIN /invocation_identity/attempt_number", set("/invocation_identity/attempt_number", 0)),
		ok("generation_zero", set("/session_identity/execution_generation", 0)),
		bad("generation_negative", "MIN /session_identity/execution_generation", set("/session_identity/execution_generation", -1)),
		ok("sequence_at_max", set("/next_action_sequence", json.Number("9223372036854775807"))),
		bad("sequence_zero", "MIN /next_action_sequence", set("/next_action_sequence", 0)),
		bad("sequence_float", "TYPE /next_action_sequence", set("/next_action_sequence", json.Number("5.0"))),
		bad("sequence_bool", "TYPE /next_action_sequence", set("/next_action_sequence", true)),
		ok("declared_outputs_at_cap", set("/pending_action/declared_outputs", 64)),
		bad("declared_outputs_over_cap", "MAX /pending_action/declared_outputs", set("/pending_action/declared_outputs", 65)),
		bad("declared_outputs_zero", "MIN /pending_action/declared_outputs", set("/pending_action/declared_outputs", 0)),
		ok("deadline_zero", set("/deadlines/outer", 0)),
		ok("deadline_max_float", set("/deadlines/outer", json.Number("1.7976931348623157e308"))),
		bad("deadline_over_max_float", "MAX /deadlines/outer", set("/deadlines/outer", json.Number("1e309"))),
		bad("deadline_negative", "MIN /deadlines/drain", set("/deadlines/drain", -0.5)),
		bad("capacity_queue", "CONST /capacity/queue_capacity", set("/capacity/queue_capacity", 1)),
		bad("capacity_callers", "CONST /capacity/callers", set("/capacity/callers", 2)),
		bad("schema_version", "CONST /schema_version", set("/schema_version", 2)),
		bad("protocol_version", "CONST /protocol_version", set("/protocol_version", 0)),
		bad("session_state_unknown", "ENUM /session_state", set("/session_state", "SLEEPING")),
		bad("action_unknown", "ENUM /pending_action/kind", set("/pending_action/kind", "RESTART")),
		bad("outcome_unknown", "ENUM /primary_outcome", set("/primary_outcome", "MAYBE")),
		ok("outcome_set", set("/primary_outcome", "OWNER_LOST")),
		bad("fallback_int", "TYPE /strategy_fallback_allowed", set("/strategy_fallback_allowed", 1)),
		bad("unknown_field", "UNKNOWN_FIELD /payload", set("/payload", "x")),
		bad("unknown_nested_field", "UNKNOWN_FIELD /capacity/extra", set("/capacity/extra", 0)),
		bad("missing_field", "MISSING_FIELD /effect_state", del("/effect_state")),
		bad("missing_nullable_field", "MISSING_FIELD /pending_action", del("/pending_action")),
		bad("identity_wrong_type", "TYPE /invocation_identity", set("/invocation_identity", "inv-1")),
		bad("root_not_object", "TYPE", set("", []any{})),
		// the record byte cap (16,384), checked before decoding
		{Def: def, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		{Def: def, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		// wire rules
		{Def: def, Name: "duplicate_key", Base: "base", Bytes: replace(`"callers":1,`, `"callers":1,"callers":1,`), Want: []string{"DUPLICATE_KEY /capacity/callers"}},
		{Def: def, Name: "invalid_utf8", Base: "base", Bytes: replace(`"inv-1"`, "\"inv-\xff\""), Want: []string{"INVALID_UTF8"}},
		{Def: def, Name: "lone_surrogate", Base: "base", Bytes: replace(`"inv-1"`, `"inv-\ud800"`), Want: []string{"LONE_SURROGATE /invocation_identity/invocation_id"}},
		{Def: def, Name: "nan", Base: "base", Bytes: replace(`"outer":1700000100.25`, `"outer":NaN`), Want: []string{"NON_FINITE /deadlines/outer"}},
		{Def: def, Name: "infinity", Base: "base", Bytes: replace(`"drain":1700000070`, `"drain":-Infinity`), Want: []string{"NON_FINITE /deadlines/drain"}},
		{Def: def, Name: "surrogate_pair", Base: "base", Bytes: replace(`"inv-1"`, `"inv-\ud83d\ude00"`), Valid: true},
		{Def: def, Name: "trailing_data", Base: "base", Bytes: func(b []byte) []byte { return append(b, []byte(" {}")...) }, Want: []string{"SYNTAX"}},
	}
	for _, st := range []string{"NEW", "VALIDATING", "VALIDATED", "PREPARING", "READY", "DRAINING", "QUARANTINED", "REJECTED", "TORN_DOWN"} {
		fs = append(fs, ok(fmt.Sprintf("session_state_%s", st), set("/session_state", st)))
	}
	return fs
}
