package schema_test

import "encoding/json"

func summaryFixtures() []fixture {
	const def = "Summary"
	ok := func(name, base string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Valid: true}
	}
	bad := func(name, base, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: base, Edits: edits, Want: []string{want}}
	}
	noDetail := []edit{set("/detail_revision", nil), set("/detail/availability", "NOT_REPORTED"), set("/detail/complete", false), set("/node_counts/retained_detail", 0)}
	with := func(a []edit, b ...edit) []edit { return append(append([]edit{}, a...), b...) }
	maxInt := json.Number("9223372036854775807")
	return []fixture{
		// valid shapes
		ok("truncated", "base", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"edge_count_limit", "node_count_limit"})),
		ok("not_reported", "base", noDetail...),
		ok("disabled", "base", with(noDetail, set("/reporting_policy", "disabled"), set("/detail/availability", "DISABLED"))...),
		ok("omitted_by_policy", "base", with(noDetail, set("/reporting_policy", "terminal_only"), set("/detail/availability", "OMITTED_BY_POLICY"))...),
		ok("expired_terminal", "terminal", set("/detail/availability", "EXPIRED"), set("/detail/complete", false)),
		ok("unreported_success", "terminal", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"terminal_state_unreported"})),
		ok("expiry_at_datetime_max", "terminal", set("/timestamps/finished_at", "9999-12-01T23:59:59.999999Z"), set("/timestamps/updated_at", "9999-12-01T23:59:59.999999Z"), set("/terminal/finished_at", "9999-12-01T23:59:59.999999Z"), set("/retention/detail_days", 30), set("/retention/detail_expires_at", "9999-12-31T23:59:59.999999Z")),
		// limits at the cap and one over
		ok("percent_at_cap", "base", set("/progress_percent", 100)),
		bad("percent_over_cap", "base", "MAX /progress_percent", set("/progress_percent", 100.1)),
		bad("percent_negative", "base", "MIN /progress_percent", set("/progress_percent", -0.1)),
		bad("percent_bool", "base", "TYPE /progress_percent", set("/progress_percent", true)),
		ok("detail_days_at_cap", "terminal", set("/retention/detail_days", 30), set("/retention/detail_expires_at", "2026-08-19T10:01:00.500000Z")),
		bad("detail_days_over_cap", "terminal", "MAX /retention/detail_days", set("/retention/detail_days", 31), set("/retention/detail_expires_at", "2026-08-20T10:01:00.500000Z")),
		ok("detail_days_zero", "terminal", set("/retention/detail_days", 0), set("/retention/detail_expires_at", "2026-07-20T10:01:00.500000Z")),
		ok("limits_profile_at_cap", "base", set("/limits_profile", "p"+repeat("x", 63))),
		bad("limits_profile_over_cap", "base", "PATTERN /limits_profile", set("/limits_profile", "p"+repeat("x", 64))),
		ok("strategy_at_cap", "base", set("/selected_strategy", "s"+repeat("-", 63))),
		bad("strategy_over_cap", "base", "PATTERN /selected_strategy", set("/selected_strategy", "s"+repeat("-", 64))),
		ok("manifest_id_at_cap", "base", set("/storage/manifest_id", "M"+repeat("_", 127))),
		bad("manifest_id_over_cap", "base", "PATTERN /storage/manifest_id", set("/storage/manifest_id", "M"+repeat("_", 128))),
		bad("run_id_not_uuid", "base", "PATTERN /run_identity/run_id", set("/run_identity/run_id", "9B2F3C1E-6F0A-4D7E-8A51-2F6C0D9E4B11")),
		bad("fingerprint_upper", "base", "PATTERN /plan_fingerprint", set("/plan_fingerprint", "sha256:F865C1540454ABEA0FD2CEE073418F6D45F6F2EE43AE8AB7E7E9D88682C7D64F")),
		ok("counts_at_max", "base", set("/node_counts/declared", maxInt)),
		bad("counts_over_max", "base", "MAX /node_counts/declared", set("/node_counts/declared", json.Number("9223372036854775808"))),
		bad("topology_version_zero", "base", "MIN /topology_version", set("/topology_version", 0)),
		bad("timestamp_zero_micros", "base", "PATTERN /timestamps/updated_at", set("/timestamps/updated_at", "2026-07-20T10:00:05.000000Z")),
		bad("timestamp_offset", "base", "PATTERN /timestamps/started_at", set("/timestamps/started_at", "2026-07-20T10:00:00+00:00")),
		bad("storage_kind", "base", "CONST /storage/kind", set("/storage/kind", "file")),
		bad("schema_version", "base", "CONST /schema_version", set("/schema_version", 2)),
		bad("reason_unknown", "base", "ENUM /detail/truncation_reasons/0", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"too_big"})),
		bad("reasons_repeated", "base", "UNIQUE_ITEMS /detail/truncation_reasons/1", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"node_count_limit", "node_count_limit"})),
		{Def: def, Name: "bytes_at_cap", Base: "base", Bytes: padTo(16384), Valid: true},
		{Def: def, Name: "bytes_over_cap", Base: "base", Bytes: padTo(16385), Want: []string{"TOO_LARGE"}},
		// every cross-field rule broken once
		bad("rule_node_discovered_le_declared", "base", "RULE_NODE_DISCOVERED_LE_DECLARED /node_counts/discovered", set("/node_counts/declared", 2)),
		bad("rule_edge_discovered_le_declared", "base", "RULE_EDGE_DISCOVERED_LE_DECLARED /edge_counts/discovered", set("/edge_counts/declared", 1)),
		bad("rule_node_retained_topology_le_discovered", "base", "RULE_NODE_RETAINED_TOPOLOGY_LE_DISCOVERED /node_counts/retained_topology", set("/node_counts/retained_topology", 4)),
		bad("rule_retained_detail_le_retained_topology", "base", "RULE_RETAINED_DETAIL_LE_RETAINED_TOPOLOGY /node_counts/retained_detail", set("/node_counts/retained_topology", 2)),
		bad("rule_edge_retained_topology_le_discovered", "base", "RULE_EDGE_RETAINED_TOPOLOGY_LE_DISCOVERED /edge_counts/retained_topology", set("/edge_counts/retained_topology", 3)),
		bad("rule_retained_topology_needs_topology_version", "base", "RULE_RETAINED_TOPOLOGY_NEEDS_TOPOLOGY_VERSION /topology_version", with(noDetail, set("/topology_version", nil), set("/storage/manifest_id", nil))...),
		bad("rule_retained_detail_needs_detail_revision", "base", "RULE_RETAINED_DETAIL_NEEDS_DETAIL_REVISION /detail_revision", with(noDetail, set("/node_counts/retained_detail", 3))...),
		bad("rule_state_counts_sum_to_discovered", "base", "RULE_STATE_COUNTS_SUM_TO_DISCOVERED /node_counts", set("/node_counts/pending", 2)),
		bad("rule_state_counts_overflow", "base", "RULE_STATE_COUNTS_SUM_TO_DISCOVERED /node_counts", set("/node_counts/pending", maxInt), set("/node_counts/running", maxInt), set("/node_counts/succeeded", 5), set("/node_counts/declared", nil)),
		bad("rule_succeeded_is_complete", "terminal", "RULE_SUCCEEDED_IS_COMPLETE /state", set("/progress_percent", 99.9)),
		bad("rule_availability_matches_detail_revision", "base", "RULE_AVAILABILITY_MATCHES_DETAIL_REVISION /detail/availability", with(noDetail, set("/detail/availability", "MISSING"))...),
		bad("rule_complete_iff_available", "base", "RULE_COMPLETE_IFF_AVAILABLE /detail/complete", set("/detail/complete", false)),
		bad("rule_reasons_iff_truncated", "base", "RULE_REASONS_IFF_TRUNCATED /detail/truncation_reasons", set("/detail/truncation_reasons", []string{"node_count_limit"})),
		bad("rule_disabled_iff_policy_disabled", "base", "RULE_DISABLED_IFF_POLICY_DISABLED /detail/availability", set("/reporting_policy", "disabled")),
		bad("rule_omitted_needs_summary_only_policy", "base", "RULE_OMITTED_NEEDS_SUMMARY_ONLY_POLICY /detail/availability", with(noDetail, set("/detail/availability", "OMITTED_BY_POLICY"))...),
		bad("rule_manifest_iff_topology_version", "base", "RULE_MANIFEST_IFF_TOPOLOGY_VERSION /storage/manifest_id", set("/storage/manifest_id", nil)),
		bad("rule_expired_only_terminal", "base", "RULE_EXPIRED_ONLY_TERMINAL /detail/availability", set("/detail/availability", "EXPIRED"), set("/detail/complete", false)),
		bad("rule_detail_revision_needs_topology_version", "base", "RULE_DETAIL_REVISION_NEEDS_TOPOLOGY_VERSION /topology_version", set("/topology_version", nil), set("/storage/manifest_id", nil), set("/detail/availability", "MISSING"), set("/detail/complete", false), set("/node_counts/retained_detail", 0), set("/node_counts/retained_topology", 0), set("/edge_counts/retained_topology", 0)),
		bad("rule_available_retains_all_detail", "base", "RULE_AVAILABLE_RETAINS_ALL_DETAIL /node_counts/retained_detail", set("/node_counts/retained_detail", 2)),
		bad("rule_expiry_needs_detail_revision", "terminal", "RULE_EXPIRY_NEEDS_DETAIL_REVISION /retention/detail_expires_at", with(noDetail)...),
		bad("rule_terminal_outcome_iff_terminal_state", "base", "RULE_TERMINAL_OUTCOME_IFF_TERMINAL_STATE /terminal/outcome", set("/terminal/outcome", "SUCCEEDED")),
		bad("rule_active_has_no_finish_or_expiry", "base", "RULE_ACTIVE_HAS_NO_FINISH_OR_EXPIRY /state", set("/timestamps/finished_at", "2026-07-20T10:01:00Z")),
		bad("rule_terminal_matches_state", "terminal", "RULE_TERMINAL_MATCHES_STATE /terminal", set("/terminal/finished_at", "2026-07-20T10:01:01Z")),
		bad("rule_terminal_expiry_exact", "terminal", "RULE_TERMINAL_EXPIRY_EXACT /retention/detail_expires_at", set("/retention/detail_expires_at", "2026-07-27T10:01:01.500000Z")),
		bad("rule_timestamps_valid", "base", "RULE_TIMESTAMPS_VALID /timestamps/started_at", set("/timestamps/started_at", "2026-02-30T10:00:00Z")),
		bad("rule_timestamps_valid_over_max", "base", "RULE_TIMESTAMPS_VALID /timestamps/updated_at", set("/timestamps/updated_at", "9999-12-02T00:00:00Z")),
		bad("rule_timestamps_non_decreasing", "base", "RULE_TIMESTAMPS_NON_DECREASING /timestamps/updated_at", set("/timestamps/updated_at", "2026-07-20T09:59:59.999999Z")),
		bad("rule_reserved_revision_terminal", "base", "RULE_RESERVED_REVISION_TERMINAL /summary_revision", set("/summary_revision", maxInt)),
		bad("rule_truncation_reasons_sorted", "base", "RULE_TRUNCATION_REASONS_SORTED /detail/truncation_reasons", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"record_size_limit", "node_count_limit"})),
		bad("rule_unreported_requires_success", "base", "RULE_UNREPORTED_REQUIRES_SUCCESS /detail/truncation_reasons", set("/detail/availability", "TRUNCATED"), set("/detail/complete", false), set("/detail/truncation_reasons", []string{"terminal_state_unreported"})),
	}
}
