package schema_test

import "strconv"

// planFixtures cover #Plan (docs/contracts.md#the-effective-plan): every bound at the cap and one
// over, both forms, and every cross-field rule broken once.
func planFixtures() []fixture {
	const def = "Plan"
	ok := func(name string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Valid: true}
	}
	bad := func(name, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "base", Edits: edits, Want: []string{want}}
	}
	okO := func(name string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "overflow", Edits: edits, Valid: true}
	}
	badO := func(name, want string, edits ...edit) fixture {
		return fixture{Def: def, Name: name, Base: "overflow", Edits: edits, Want: []string{want}}
	}
	callNode := func(i int) any {
		id := "0." + strconv.Itoa(i+3)
		return map[string]any{
			"id": id, "operation": "call", "node_model": "task",
			"callable":       map[string]any{"ref": "callable:0"},
			"binding_schema": map[string]any{"bound_positional_count": 0, "bound_keyword_names": []any{}, "keyword_precedence": "bound_over_invocation"},
			"outputs":        []any{"result"}, "bootstrap": false, "resources": map[string]any{}, "scheduling": map[string]any{}, "ray_options": map[string]any{},
			"environment": map[string]any{"mode": "inherit", "hash": "sha256:" + repeat("a", 64)},
			"inputs":      []any{"node:0.2:result"}, "actor_layout": nil,
		}
	}
	withNodes := func(n int) []edit {
		var es []edit
		for i := 0; i < n-5; i++ {
			es = append(es, set("/nodes/"+strconv.Itoa(5+i), callNode(i)))
		}
		return es
	}
	entryPorts := func(n int) []any { return list(n, func(i int) any { return "arg:" + strconv.Itoa(i) }) }
	edges := func(n int) []any {
		return list(n, func(i int) any {
			return map[string]any{"source": "0." + strconv.Itoa(i) + ":result", "target": "0." + strconv.Itoa(i+1) + ":input"}
		})
	}
	byNode := func(n int) map[string]any {
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m["0."+strconv.Itoa(i)] = map[string]any{"mode": "override", "hash": "sha256:" + repeat("c", 64)}
		}
		return m
	}
	paths := func(n int) []any { return list(n, func(i int) any { return "runtime_env.pip." + strconv.Itoa(100+i) }) }
	custom := func(n int) map[string]any {
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m["res"+strconv.Itoa(100+i)] = 1
		}
		return m
	}
	const actor = "/physical_topology/actors/0"
	const env = "/environments/outer"
	return []fixture{
		okO("overflow_base"),
		fixture{Def: def, Name: "nodes_at_cap", Base: "base", Edits: withNodes(64), Valid: true},
		fixture{Def: def, Name: "nodes_over_cap", Base: "base", Edits: withNodes(65), Want: []string{"MAX_ITEMS /nodes"}},
		ok("entry_ports_at_cap", set("/topology/entry_ports", entryPorts(1024))),
		bad("entry_ports_over_cap", "MAX_ITEMS /topology/entry_ports", set("/topology/entry_ports", entryPorts(1025))),
		bad("entry_ports_repeated", "UNIQUE_ITEMS /topology/entry_ports/1", set("/topology/entry_ports", []any{"arg:0", "arg:0"})),
		ok("edges_at_cap", set("/edges", edges(1024))),
		bad("edges_over_cap", "MAX_ITEMS /edges", set("/edges", edges(1025))),
		ok("by_node_at_cap", set("/environments/by_node", byNode(256))),
		bad("by_node_over_cap", "MAX_FIELDS /environments/by_node", set("/environments/by_node", byNode(257))),
		ok("string_at_cap", set("/definition/build_revision", repeat("é", 2048))),
		bad("string_over_cap", "MAX_RUNES /definition/build_revision", set("/definition/build_revision", repeat("é", 2049))),
		ok("node_id_at_cap", set("/nodes/0/id", "0"+repeat(".0", 1023)+"1")),
		bad("node_id_over_cap", "MAX_RUNES /nodes/0/id", set("/nodes/0/id", "0"+repeat(".0", 1024))),
		bad("node_id_pattern", "PATTERN /nodes/0/id", set("/nodes/0/id", "partition")),
		ok("runtime_field_at_cap", set("/compatibility/compiled_graph/runtime/python_version", repeat("3", 1024))),
		bad("runtime_field_over_cap", "MAX_RUNES /compatibility/compiled_graph/runtime/python_version", set("/compatibility/compiled_graph/runtime/python_version", repeat("3", 1025))),
		ok("trust_field_at_cap", set("/security/trust_identity/trust_domain", repeat("t", 256))),
		bad("trust_field_over_cap", "MAX_RUNES /security/trust_identity/trust_domain", set("/security/trust_identity/trust_domain", repeat("t", 257))),
		bad("trust_field_empty", "MIN_RUNES /security/trust_identity/trust_domain", set("/security/trust_identity/trust_domain", "")),
		bad("trust_unknown_key", "UNKNOWN_FIELD /security/trust_identity/password", set("/security/trust_identity/password", "x")),
		ok("retry_paths_at_cap", set("/retry_safety/retry_unsafe_paths", paths(16)), set("/retry_safety/total_retry_unsafe_paths", 20), set("/retry_safety/retry_unsafe_paths_truncated", true), set("/retry_safety/retry_safe", false)),
		bad("retry_paths_over_cap", "MAX_ITEMS /retry_safety/retry_unsafe_paths", set("/retry_safety/retry_unsafe_paths", paths(17)), set("/retry_safety/total_retry_unsafe_paths", 20), set("/retry_safety/retry_unsafe_paths_truncated", true), set("/retry_safety/retry_safe", false)),
		ok("env_paths_at_cap", set(env+"/unresolved_paths", paths(16)), set(env+"/total_unresolved_paths", 16), set(env+"/reusable", false)),
		bad("env_paths_over_cap", "MAX_ITEMS /environments/outer/unresolved_paths", set(env+"/unresolved_paths", paths(17)), set(env+"/total_unresolved_paths", 17), set(env+"/reusable", false)),
		bad("env_path_pattern", "PATTERN /environments/outer/unresolved_paths/0", set(env+"/unresolved_paths", []any{"runtime env"}), set(env+"/total_unresolved_paths", 1), set(env+"/reusable", false)),
		ok("actor_custom_at_cap", set(actor+"/resources/custom", custom(32))),
		bad("actor_custom_over_cap", "MAX_FIELDS /physical_topology/actors/0/resources/custom", set(actor+"/resources/custom", custom(33))),
		bad("actor_num_cpus_zero", "MIN /physical_topology/actors/0/resources/num_cpus", set(actor+"/resources/num_cpus", 0)),
		bad("actor_pending_calls_old", "CONST /physical_topology/actors/0/contract/actor/max_pending_calls", set(actor+"/contract/actor/max_pending_calls", 1)),
		bad("actor_kind_unknown", "UNION_TAG /physical_topology/actors/0/kind", set(actor+"/kind", "static_actor")),
		bad("actor_contract_buffer_protocol", "CONST /physical_topology/actors/0/contract/protocol", set(actor+"/contract/protocol", "rayflow.workflow-map-result-buffer")),
		ok("result_buffer_actor",
			set(actor, map[string]any{"id": "0.1.result_buffer", "kind": "ordered_map_result_buffer", "cardinality": "one_per_workflow_invocation",
				"resources": map[string]any{"num_cpus": 0.25, "memory": 67108864, "custom": map[string]any{"workflow_result_buffer": 1}},
				"contract": map[string]any{"protocol": "rayflow.workflow-map-result-buffer", "protocol_version": 1,
					"codec":     map[string]any{"name": "json", "version": 1, "measurement": "retained_serialized_bytes"},
					"bounds":    map[string]any{"maximum_items": 500, "maximum_in_flight_leaves": 8, "maximum_serialized_bytes": 67108864, "maximum_pending_actor_calls": 2},
					"actor":     map[string]any{"num_cpus": 0.25, "memory": 67108864, "resources": map[string]any{"workflow_result_buffer": 1}, "scheduling_strategy": "SPREAD", "lifetime": "non_detached", "max_restarts": 0, "max_task_retries": 0, "max_concurrency": 1, "max_pending_calls": 2},
					"placement": map[string]any{"scheduling_strategy": "SPREAD", "custom_resources": []any{"workflow_result_buffer"}},
					"lifetime":  map[string]any{"kind": "non_detached", "owner": "workflow_coordinator", "cleanup": "best_effort", "node_loss_recovery": false},
					"restart":   map[string]any{"max_restarts": 0, "max_task_retries": 0},
					"result":    map[string]any{"ordered": true, "finalize_returns": 2, "payload_ref_resolved_by_coordinator": false}}}),
			set("/physical_topology/placement_relationships/0/target", "0.1.result_buffer"),
			set("/nodes/1/actor_layout", "0.1.result_buffer"),
			del("/nodes/1/bounds/maximum_retained_out_of_order"), del("/nodes/1/bounds/admission_credit_source"),
			set("/nodes/3/operation", "ordered_actor_finalize"), set("/nodes/3/actor_layout", "0.1.result_buffer")),
		// rayflow's item batching on a map node: 2 … 1024, absent means 1.
		ok("map_items_per_task_at_cap", set("/nodes/1/bounds/maximum_items_per_task", 1024)),
		ok("map_items_per_task_two", set("/nodes/1/bounds/maximum_items_per_task", 2)),
		bad("map_items_per_task_over_cap", "MAX /nodes/1/bounds/maximum_items_per_task", set("/nodes/1/bounds/maximum_items_per_task", 1025)),
		bad("map_items_per_task_one", "MIN /nodes/1/bounds/maximum_items_per_task", set("/nodes/1/bounds/maximum_items_per_task", 1)),
		bad("map_items_per_task_float", "TYPE /nodes/1/bounds/maximum_items_per_task", set("/nodes/1/bounds/maximum_items_per_task", 2.5)),
		bad("map_items_per_task_null", "TYPE /nodes/1/bounds/maximum_items_per_task", set("/nodes/1/bounds/maximum_items_per_task", nil)),
		// rayflow's resumable map: a per-item result cap of 1 … 1 MiB, absent without resume.
		ok("map_ledger_result_bytes_at_cap", set("/nodes/1/bounds/maximum_ledger_result_bytes", 1048576)),
		ok("map_ledger_result_bytes_one", set("/nodes/1/bounds/maximum_ledger_result_bytes", 1)),
		bad("map_ledger_result_bytes_over_cap", "MAX /nodes/1/bounds/maximum_ledger_result_bytes", set("/nodes/1/bounds/maximum_ledger_result_bytes", 1048577)),
		bad("map_ledger_result_bytes_zero", "MIN /nodes/1/bounds/maximum_ledger_result_bytes", set("/nodes/1/bounds/maximum_ledger_result_bytes", 0)),
		bad("map_ledger_result_bytes_null", "TYPE /nodes/1/bounds/maximum_ledger_result_bytes", set("/nodes/1/bounds/maximum_ledger_result_bytes", nil)),
		// rayflow's declared code version of a step: 1 … 128 printable ASCII characters.
		ok("call_code_version_at_cap", set("/nodes/0/code_version", repeat("v", 128))),
		ok("call_code_version_one", set("/nodes/0/code_version", "2")),
		bad("call_code_version_over_cap", "PATTERN /nodes/0/code_version", set("/nodes/0/code_version", repeat("v", 129))),
		bad("call_code_version_empty", "PATTERN /nodes/0/code_version", set("/nodes/0/code_version", "")),
		bad("call_code_version_space", "PATTERN /nodes/0/code_version", set("/nodes/0/code_version", "v 2")),
		bad("call_code_version_null", "TYPE /nodes/0/code_version", set("/nodes/0/code_version", nil)),
		bad("operation_unknown", "UNION_TAG /nodes/0/operation", set("/nodes/0/operation", "fixed_pool")),
		bad("call_actor_layout_set", "TYPE /nodes/0/actor_layout", set("/nodes/0/actor_layout", "0.0.result_buffer")),
		bad("call_bootstrap_django", "UNKNOWN_FIELD /nodes/0/bootstrap_django", set("/nodes/0/bootstrap_django", false)),
		bad("call_outputs_two", "MAX_ITEMS /nodes/0/outputs", set("/nodes/0/outputs", []any{"result", "result"})),
		bad("ray_option_unknown", "PATTERN /nodes/0/ray_options/name", set("/nodes/0/ray_options/name", "x")),
		bad("collector_resources", "UNKNOWN_FIELD /nodes/3/resources/num_cpus", set("/nodes/3/resources/num_cpus", 1)),
		bad("fold_finalize_buffer_layout", "PATTERN /nodes/3/actor_layout", set("/nodes/3/actor_layout", "0.1.result_buffer")),
		bad("topology_fixed_width", "ENUM /topology/class", set("/topology/class", "fixed_width")),
		bad("stages_reserved", "MAX_ITEMS /physical_topology/stages", set("/physical_topology/stages", []any{map[string]any{"id": "s", "replicas": 1}})),
		bad("format_name", "CONST /plan_format", set("/plan_format", "django-ray.workflow-plan")),
		bad("format_version", "CONST /plan_format_version", set("/plan_format_version", 2)),
		bad("compat_django_ray_key", "UNKNOWN_FIELD /compatibility/django_ray_plan_api", set("/compatibility/django_ray_plan_api", 1)),
		bad("strategy_maximum_in_flight", "CONST /strategy_requirements/compiled_graph/maximum_in_flight", set("/strategy_requirements/compiled_graph/maximum_in_flight", 2)),
		bad("strategy_unknown_key", "UNKNOWN_FIELD /strategy_requirements/compiled_graph/fixed_width", set("/strategy_requirements/compiled_graph/fixed_width", true)),
		bad("image_digest_upper", "PATTERN /definition/container_image_digest", set("/definition/container_image_digest", "sha256:"+repeat("A", 64))),
		badO("overflow_reasons_over_cap", "MAX_ITEMS /snapshot/reasons", set("/snapshot/reasons", []any{"node_limit", "schema_limit", "identifier_limit", "byte_limit", "node_limit"})),
		okO("overflow_reasons_at_cap", set("/snapshot/reasons", []any{"node_limit", "schema_limit", "identifier_limit", "byte_limit"})),
		{Def: def, Name: "bytes_at_cap", Base: "base", Bytes: padTo(65536), Valid: true},
		{Def: def, Name: "bytes_over_cap", Base: "base", Bytes: padTo(65537), Want: []string{"TOO_LARGE"}},
		// Cross-field rules, each broken once.
		bad("rule_detailed_form", "RULE_DETAILED_FORM /capabilities/admission/map_limits", del("/capabilities/admission/map_limits")),
		badO("rule_overflow_form", "RULE_OVERFLOW_FORM /topology/entry_port_count", del("/topology/entry_port_count")),
		bad("rule_node_model_matches_actors", "RULE_NODE_MODEL_MATCHES_ACTORS /physical_topology/node_model", set("/physical_topology/node_model", "ray_tasks")),
		bad("rule_topology_class_matches_maps", "RULE_TOPOLOGY_CLASS_MATCHES_MAPS /topology/class", set("/topology/class", "static")),
		bad("rule_env_reusable_iff_resolved", "RULE_ENV_REUSABLE_IFF_RESOLVED /environments/outer/reusable", set(env+"/reusable", false)),
		bad("rule_env_retry_safe_iff_no_unsafe_paths", "RULE_ENV_RETRY_SAFE_IFF_NO_UNSAFE_PATHS /environments/outer/retry_safe", set(env+"/retry_safe", false)),
		bad("rule_env_retry_unsafe_within_unresolved", "RULE_ENV_RETRY_UNSAFE_WITHIN_UNRESOLVED /environments/outer/total_retry_unsafe_paths",
			set(env+"/retry_safe", false), set(env+"/total_retry_unsafe_paths", 1), set(env+"/retry_unsafe_paths_truncated", true)),
		bad("rule_env_unresolved_total_covers_paths", "RULE_ENV_UNRESOLVED_TOTAL_COVERS_PATHS /environments/outer/total_unresolved_paths",
			set(env+"/unresolved_paths", paths(2)), set(env+"/total_unresolved_paths", 1), set(env+"/reusable", false)),
		bad("rule_env_unresolved_truncated_iff_more", "RULE_ENV_UNRESOLVED_TRUNCATED_IFF_MORE /environments/outer/unresolved_paths_truncated",
			set(env+"/total_unresolved_paths", 1), set(env+"/reusable", false)),
		bad("rule_env_retry_total_covers_paths", "RULE_ENV_RETRY_TOTAL_COVERS_PATHS /environments/outer/total_retry_unsafe_paths",
			set(env+"/retry_unsafe_paths", paths(2)), set(env+"/total_retry_unsafe_paths", 1), set(env+"/total_unresolved_paths", 2), set(env+"/unresolved_paths", paths(2)), set(env+"/reusable", false), set(env+"/retry_safe", false)),
		bad("rule_env_retry_truncated_iff_more", "RULE_ENV_RETRY_TRUNCATED_IFF_MORE /environments/outer/retry_unsafe_paths_truncated",
			set(env+"/retry_unsafe_paths_truncated", true)),
		bad("rule_env_paths_sorted", "RULE_ENV_PATHS_SORTED /environments/outer/unresolved_paths",
			set(env+"/unresolved_paths", []any{"b", "a"}), set(env+"/total_unresolved_paths", 2), set(env+"/reusable", false)),
		bad("rule_retry_safe_iff_no_unsafe_paths", "RULE_RETRY_SAFE_IFF_NO_UNSAFE_PATHS /retry_safety/retry_safe", set("/retry_safety/retry_safe", false)),
		bad("rule_retry_total_covers_paths", "RULE_RETRY_TOTAL_COVERS_PATHS /retry_safety/total_retry_unsafe_paths",
			set("/retry_safety/retry_unsafe_paths", paths(2)), set("/retry_safety/total_retry_unsafe_paths", 1), set("/retry_safety/retry_safe", false)),
		bad("rule_retry_truncated_iff_more", "RULE_RETRY_TRUNCATED_IFF_MORE /retry_safety/retry_unsafe_paths_truncated",
			set("/retry_safety/total_retry_unsafe_paths", 1), set("/retry_safety/retry_safe", false)),
		bad("rule_retry_paths_sorted", "RULE_RETRY_PATHS_SORTED /retry_safety/retry_unsafe_paths",
			set("/retry_safety/retry_unsafe_paths", []any{"b", "a"}), set("/retry_safety/total_retry_unsafe_paths", 2), set("/retry_safety/retry_safe", false)),
	}
}
