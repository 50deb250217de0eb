// Hand-written, not generated: the cross-field rules of #Plan,
// #PlanRuntimeEnvIdentity and #PlanRetrySafety (docs/contracts.md#the-effective-plan) that
// tools/cuegen cannot translate. The same rules are written in CUE in
// schema/plan.cue, each marked @rayflow(rule=ID); schema/differential_test.go
// breaks each once and checks that CUE and this file agree.

package plan

import (
	"sort"

	"github.com/rayflow/rayflow/gen/rt"
)

// totalCovers reports a path total smaller than the listed paths.
func totalCovers(paths []string, total int64, p *rt.Path, e *rt.Errors, code, what string) {
	if total < int64(len(paths)) {
		e.Add(p, code, "%s is less than the number of listed paths", what)
	}
}

func ruleEnvReusableIffResolved(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if x.Reusable != (x.TotalUnresolvedPaths == 0) {
		e.Add(p.Key("reusable"), CodeRuleEnvReusableIffResolved, "reusable must be true exactly when total_unresolved_paths is 0")
	}
}

func ruleEnvRetrySafeIffNoUnsafePaths(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if x.RetrySafe != (x.TotalRetryUnsafePaths == 0) {
		e.Add(p.Key("retry_safe"), CodeRuleEnvRetrySafeIffNoUnsafePaths, "retry_safe must be true exactly when total_retry_unsafe_paths is 0")
	}
}

func ruleEnvRetryUnsafeWithinUnresolved(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if x.TotalRetryUnsafePaths > x.TotalUnresolvedPaths {
		e.Add(p.Key("total_retry_unsafe_paths"), CodeRuleEnvRetryUnsafeWithinUnresolved, "total_retry_unsafe_paths exceeds total_unresolved_paths")
	}
}

func ruleEnvUnresolvedTotalCoversPaths(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	totalCovers(x.UnresolvedPaths, x.TotalUnresolvedPaths, p.Key("total_unresolved_paths"), e, CodeRuleEnvUnresolvedTotalCoversPaths, "total_unresolved_paths")
}

func ruleEnvUnresolvedTruncatedIffMore(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if x.UnresolvedPathsTruncated != (x.TotalUnresolvedPaths > int64(len(x.UnresolvedPaths))) {
		e.Add(p.Key("unresolved_paths_truncated"), CodeRuleEnvUnresolvedTruncatedIffMore, "unresolved_paths_truncated must be true exactly when the total exceeds the listed paths")
	}
}

func ruleEnvRetryTotalCoversPaths(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	totalCovers(x.RetryUnsafePaths, x.TotalRetryUnsafePaths, p.Key("total_retry_unsafe_paths"), e, CodeRuleEnvRetryTotalCoversPaths, "total_retry_unsafe_paths")
}

func ruleEnvRetryTruncatedIffMore(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if x.RetryUnsafePathsTruncated != (x.TotalRetryUnsafePaths > int64(len(x.RetryUnsafePaths))) {
		e.Add(p.Key("retry_unsafe_paths_truncated"), CodeRuleEnvRetryTruncatedIffMore, "retry_unsafe_paths_truncated must be true exactly when the total exceeds the listed paths")
	}
}

func ruleEnvPathsSorted(x *RuntimeEnvIdentity, p *rt.Path, e *rt.Errors) {
	if !sort.StringsAreSorted(x.UnresolvedPaths) {
		e.Add(p.Key("unresolved_paths"), CodeRuleEnvPathsSorted, "paths must be sorted")
	}
	if !sort.StringsAreSorted(x.RetryUnsafePaths) {
		e.Add(p.Key("retry_unsafe_paths"), CodeRuleEnvPathsSorted, "paths must be sorted")
	}
}

func ruleRetrySafeIffNoUnsafePaths(x *RetrySafety, p *rt.Path, e *rt.Errors) {
	if x.RetrySafe != (x.TotalRetryUnsafePaths == 0) {
		e.Add(p.Key("retry_safe"), CodeRuleRetrySafeIffNoUnsafePaths, "retry_safe must be true exactly when total_retry_unsafe_paths is 0")
	}
}

func ruleRetryTotalCoversPaths(x *RetrySafety, p *rt.Path, e *rt.Errors) {
	totalCovers(x.RetryUnsafePaths, x.TotalRetryUnsafePaths, p.Key("total_retry_unsafe_paths"), e, CodeRuleRetryTotalCoversPaths, "total_retry_unsafe_paths")
}

func ruleRetryTruncatedIffMore(x *RetrySafety, p *rt.Path, e *rt.Errors) {
	if x.RetryUnsafePathsTruncated != (x.TotalRetryUnsafePaths > int64(len(x.RetryUnsafePaths))) {
		e.Add(p.Key("retry_unsafe_paths_truncated"), CodeRuleRetryTruncatedIffMore, "retry_unsafe_paths_truncated must be true exactly when the total exceeds the listed paths")
	}
}

func ruleRetryPathsSorted(x *RetrySafety, p *rt.Path, e *rt.Errors) {
	if !sort.StringsAreSorted(x.RetryUnsafePaths) {
		e.Add(p.Key("retry_unsafe_paths"), CodeRuleRetryPathsSorted, "paths must be sorted")
	}
}

// ruleDetailedForm: without a snapshot the plan is in detailed form: at
// least one node, no port counts, per-map admission limits and no physical
// overflow summary.
func ruleDetailedForm(x *Plan, p *rt.Path, e *rt.Errors) {
	if x.Snapshot != nil {
		return
	}
	c := CodeRuleDetailedForm
	if len(x.Nodes) == 0 {
		e.Add(p.Key("nodes"), c, "a detailed plan has at least one node")
	}
	tp := p.Key("topology")
	if x.Topology.EntryPortCount != nil {
		e.Add(tp.Key("entry_port_count"), c, "entry_port_count belongs to the overflow form")
	}
	if x.Topology.ResultPortCount != nil {
		e.Add(tp.Key("result_port_count"), c, "result_port_count belongs to the overflow form")
	}
	ap := p.Key("capabilities").Key("admission")
	if x.Capabilities.Admission.MapLimits == nil {
		e.Add(ap.Key("map_limits"), c, "a detailed plan lists map_limits")
	}
	if x.Capabilities.Admission.MapCount != nil {
		e.Add(ap.Key("map_count"), c, "map_count belongs to the overflow form")
	}
	if x.Capabilities.Admission.AllMapsBounded != nil {
		e.Add(ap.Key("all_maps_bounded"), c, "all_maps_bounded belongs to the overflow form")
	}
	if x.PhysicalTopology.OverflowSummary != nil {
		e.Add(p.Key("physical_topology").Key("overflow_summary"), c, "overflow_summary belongs to the overflow form")
	}
}

// ruleOverflowForm: with a snapshot the plan is compacted: no nodes,
// callables, edges, ports, per-node environments or physical details, and
// counts instead.
func ruleOverflowForm(x *Plan, p *rt.Path, e *rt.Errors) {
	if x.Snapshot == nil {
		return
	}
	c := CodeRuleOverflowForm
	for _, l := range []struct {
		key string
		n   int
	}{{"nodes", len(x.Nodes)}, {"callables", len(x.Callables)}, {"edges", len(x.Edges)}} {
		if l.n != 0 {
			e.Add(p.Key(l.key), c, "an overflow plan omits %s", l.key)
		}
	}
	tp := p.Key("topology")
	if len(x.Topology.EntryPorts) != 0 {
		e.Add(tp.Key("entry_ports"), c, "an overflow plan omits entry_ports")
	}
	if len(x.Topology.ResultPorts) != 0 {
		e.Add(tp.Key("result_ports"), c, "an overflow plan omits result_ports")
	}
	if x.Topology.EntryPortCount == nil {
		e.Add(tp.Key("entry_port_count"), c, "an overflow plan counts its entry ports")
	}
	if x.Topology.ResultPortCount == nil {
		e.Add(tp.Key("result_port_count"), c, "an overflow plan counts its result ports")
	}
	ap := p.Key("capabilities").Key("admission")
	if x.Capabilities.Admission.MapLimits != nil {
		e.Add(ap.Key("map_limits"), c, "an overflow plan omits map_limits")
	}
	if x.Capabilities.Admission.MapCount == nil {
		e.Add(ap.Key("map_count"), c, "an overflow plan counts its maps")
	}
	if x.Capabilities.Admission.AllMapsBounded == nil {
		e.Add(ap.Key("all_maps_bounded"), c, "an overflow plan says whether all maps are bounded")
	}
	if len(x.Environments.ByNode) != 0 {
		e.Add(p.Key("environments").Key("by_node"), c, "an overflow plan omits per-node environments")
	}
	pp := p.Key("physical_topology")
	if len(x.PhysicalTopology.Actors) != 0 {
		e.Add(pp.Key("actors"), c, "an overflow plan omits actor details")
	}
	if len(x.PhysicalTopology.PlacementRelationships) != 0 {
		e.Add(pp.Key("placement_relationships"), c, "an overflow plan omits placement relationships")
	}
}

// ruleNodeModelMatchesActors: ray_tasks_and_actors exactly when the plan
// has a map actor (listed, or counted in the overflow summary).
func ruleNodeModelMatchesActors(x *Plan, p *rt.Path, e *rt.Errors) {
	pt := &x.PhysicalTopology
	has := len(pt.Actors) > 0
	if pt.OverflowSummary != nil {
		has = pt.OverflowSummary.ActorCount > 0
	}
	if (pt.NodeModel == NodeModelRayTasksAndActors) != has {
		e.Add(p.Key("physical_topology").Key("node_model"), CodeRuleNodeModelMatchesActors, "node_model must be ray_tasks_and_actors exactly when the plan has map actors")
	}
}

// ruleTopologyClassMatchesMaps: a detailed plan is dynamic exactly when it
// has a dynamic map.
func ruleTopologyClassMatchesMaps(x *Plan, p *rt.Path, e *rt.Errors) {
	if x.Snapshot != nil {
		return
	}
	has := false
	for _, n := range x.Nodes {
		if _, ok := n.(*DynamicMapNode); ok {
			has = true
		}
	}
	if (x.Topology.Class == TopologyClassDynamic) != has {
		e.Add(p.Key("topology").Key("class"), CodeRuleTopologyClassMatchesMaps, "class must be dynamic exactly when the plan has a dynamic map")
	}
}
