package schema_test

func planSelectionFixtures() []fixture {
	const def = "PlanSelection"
	ok := func(name string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Valid: true}
	}
	bad := func(name, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Want: []string{want}}
	}
	rej := func(i int) any {
		return map[string]any{"code": "UNRESOLVED_CODE_IDENTITY", "message": "callable code has no stable content identity", "path": "callables.callable:" + string(rune('0'+i%10)), "strategy": "compiled_graph"}
	}
	strategies := func(n int) []any { return list(n, func(i int) any { return "s" + string(rune('a'+i)) }) }
	return []fixture{
		ok("local_disabled", set("/selected_strategy", "local"), set("/reporting_policy", "disabled"), set("/requested_policy", "local")),
		ok("truncated", set("/rejections", list(32, rej)), set("/total_rejections", 40), set("/rejections_truncated", true)),
		ok("rejections_at_cap", set("/rejections", list(32, rej)), set("/total_rejections", 32)),
		bad("rejections_over_cap", "MAX_ITEMS /rejections", set("/rejections", list(33, rej)), set("/total_rejections", 33)),
		ok("eligible_at_cap", set("/eligible_strategies", append(strategies(7), "dynamic_tasks"))),
		bad("eligible_over_cap", "MAX_ITEMS /eligible_strategies", set("/eligible_strategies", append(strategies(8), "dynamic_tasks"))),
		bad("eligible_empty", "MIN_ITEMS /eligible_strategies", set("/eligible_strategies", []any{}), set("/selected_strategy", "x")),
		bad("eligible_repeated", "UNIQUE_ITEMS /eligible_strategies/2", set("/eligible_strategies", []any{"dynamic_tasks", "local", "local"})),
		ok("strategy_name_at_cap", set("/requested_policy", "a"+repeat("_", 63))),
		bad("strategy_name_over_cap", "PATTERN /requested_policy", set("/requested_policy", "a"+repeat("_", 64))),
		bad("strategy_name_hyphen", "PATTERN /requested_policy", set("/requested_policy", "dynamic-tasks")),
		bad("code_unknown", "ENUM /rejections/0/code", set("/rejections/0/code", "NOPE")),
		ok("path_at_cap", set("/rejections/0/path", repeat("p", 2048))),
		bad("path_over_cap", "MAX_RUNES /rejections/0/path", set("/rejections/0/path", repeat("p", 2049))),
		bad("total_bool", "TYPE /total_rejections", set("/total_rejections", true)),
		bad("format_v1_key_set", "MISSING_FIELD /reporting_policy", del("/reporting_policy"), set("/plan_selection_format_version", 1)),
		bad("format_name", "CONST /plan_selection_format", set("/plan_selection_format", "django-ray.workflow-plan-selection")),
		bad("rejection_extra_field", "UNKNOWN_FIELD /rejections/0/severity", set("/rejections/0/severity", "high")),
		{Def: def, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		{Def: def, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		bad("rule_selected_is_eligible", "RULE_SELECTED_IS_ELIGIBLE /selected_strategy", set("/selected_strategy", "static_actors")),
		bad("rule_total_covers_rejections", "RULE_TOTAL_COVERS_REJECTIONS /total_rejections", set("/total_rejections", 1), set("/rejections_truncated", false)),
		bad("rule_truncated_iff_more", "RULE_TRUNCATED_IFF_MORE /rejections_truncated", set("/rejections_truncated", true)),
		bad("rule_local_reports_nothing", "RULE_LOCAL_REPORTS_NOTHING /reporting_policy", set("/selected_strategy", "local")),
	}
}
