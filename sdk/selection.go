package sdk

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/plan"
)

// Strategy is a plan's execution strategy (WithStrategy; the selection's
// requested and selected strategies).
type Strategy string

// Execution strategies.
const (
	// StrategyAuto lets materialization choose: StrategyDynamicTasks for a
	// Ray engine (ForRay), else StrategyLocal.
	StrategyAuto Strategy = "auto"
	// StrategyLocal runs in this process (package engine/local).
	StrategyLocal Strategy = "local"
	// StrategyDynamicTasks runs each leaf as a Ray task (engine/ray).
	StrategyDynamicTasks Strategy = "dynamic_tasks"
	// StrategyCompiledGraph and StrategyStaticActors are the reusable
	// strategies of the plan contract; no rayflow plan is eligible for them
	// yet, so requesting one fails with a *SelectionError.
	StrategyCompiledGraph Strategy = "compiled_graph"
	StrategyStaticActors  Strategy = "static_actors"
)

// ReportingPolicy is how a run reports progress (WithReportingPolicy).
type ReportingPolicy string

// Reporting policies a run can execute. Local runs are always
// ReportingPolicyDisabled.
const (
	// ReportingPolicyFull reports every node event (the default).
	ReportingPolicyFull ReportingPolicy = "full"
	// ReportingPolicyTerminalOnly records one terminal summary.
	ReportingPolicyTerminalOnly ReportingPolicy = "terminal_only"
	// ReportingPolicyDisabled reports nothing.
	ReportingPolicyDisabled ReportingPolicy = "disabled"
)

// SelectionError is an explicitly requested strategy the plan is not
// eligible for; it is returned before any effect.
type SelectionError struct {
	Strategy   Strategy
	Rejections []plan.Rejection
}

func (e *SelectionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rayflow: strategy %s rejected:", e.Strategy)
	for i, r := range e.Rejections {
		if i == 3 {
			fmt.Fprintf(&b, " (and %d more)", len(e.Rejections)-3)
			break
		}
		fmt.Fprintf(&b, " %s at %s (%s);", r.Code, r.Path, r.Message)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrStrategyRejected) true.
func (e *SelectionError) Is(target error) bool { return target == ErrStrategyRejected }

// Rejection messages fixed by the contract.
const (
	msgCode       = "callable code has no stable content identity"
	msgOption     = "Ray task option is valid for dynamic execution but has no reusable identity"
	msgEnv        = "RuntimeEnv field has no non-secret reusable identity"
	msgRetention  = "workflow result retention has no finite item bound"
	msgTasks      = "current workflow leaves are Ray tasks, not dedicated actors"
	msgNoLayout   = "no static actor layout is declared"
	msgDynamic    = "runtime map inputs create task instances"
	msgOwner      = "a context-free run has no owner for a reusable compiled graph"
	msgPlatform   = "the compiled-graph capability context is incomplete"
	msgOverflowed = "the plan exceeded its detailed snapshot bounds: "
)

// rejections lists every reason a reusable strategy cannot run the plan,
// sorted by (strategy, code, path).
func (m *Materialized) collectRejections(mz *materializer) []plan.Rejection {
	p := m.Plan
	var rs []plan.Rejection
	add := func(strategy Strategy, code plan.RejectionCode, path, msg string) {
		rs = append(rs, plan.Rejection{Strategy: string(strategy), Code: code, Path: path, Message: msg})
	}
	cg := StrategyCompiledGraph
	add(cg, plan.RejectionCodeUnsupportedNodeModel, "physical_topology.node_model", msgTasks)
	add(StrategyStaticActors, plan.RejectionCodeUnsupportedNodeModel, "physical_topology.node_model", msgNoLayout)
	if p.Topology.Class == plan.TopologyClassDynamic {
		add(cg, plan.RejectionCodeDynamicTopology, "topology.class", msgDynamic)
	}
	if p.Capabilities.Admission.MaximumBufferedResults == nil {
		add(cg, plan.RejectionCodeUnboundedAdmission, "capabilities.admission.maximum_buffered_results", msgRetention)
	}
	add(cg, plan.RejectionCodeOwnerLifetimeMismatch, "compatibility.compiled_graph.topology", msgOwner)
	add(cg, plan.RejectionCodeIncompatiblePlatform, "compatibility.compiled_graph.runtime", msgPlatform)
	if p.Definition.BuildRevision == nil || executableDigest(p.Definition.BuildRevision) != "" {
		add(cg, plan.RejectionCodeUnresolvedCodeIdentity, "definition.build_revision", msgCode)
	}
	for _, path := range p.Environments.Outer.UnresolvedPaths {
		add(cg, plan.RejectionCodeUnresolvedRuntimeEnv, "environments.outer."+path, msgEnv)
	}
	if p.Snapshot != nil {
		reasons := make([]string, len(p.Snapshot.Reasons))
		for i, r := range p.Snapshot.Reasons {
			reasons[i] = string(r)
		}
		add(cg, plan.RejectionCodePlanSnapshotOverflow, "snapshot", msgOverflowed+strings.Join(reasons, ", "))
		// Node-level paths no longer exist in the compacted plan.
		if hasUnstable(mz) || len(mz.optionPaths) > 0 {
			add(cg, plan.RejectionCodeUnresolvedCodeIdentity, "snapshot.omitted_nodes", msgCode)
		}
		if len(mz.envPaths) > 0 {
			add(cg, plan.RejectionCodeUnresolvedRuntimeEnv, "snapshot.omitted_environments", msgEnv)
		}
	} else {
		for _, c := range mz.callables {
			if !c.CodeIdentity.Stable {
				add(cg, plan.RejectionCodeUnresolvedCodeIdentity, "callables."+c.ID+".code_identity", msgCode)
			}
		}
		for _, path := range mz.optionPaths {
			add(cg, plan.RejectionCodeUnresolvedPlanOption, path, msgOption)
		}
		for _, path := range mz.envPaths {
			add(cg, plan.RejectionCodeUnresolvedRuntimeEnv, path, msgEnv)
		}
	}
	slices.SortFunc(rs, func(a, b plan.Rejection) int {
		return cmp.Or(cmp.Compare(a.Strategy, b.Strategy), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Path, b.Path))
	})
	return slices.CompactFunc(rs, func(a, b plan.Rejection) bool {
		return a.Strategy == b.Strategy && a.Code == b.Code && a.Path == b.Path
	})
}

func hasUnstable(mz *materializer) bool {
	for _, c := range mz.callables {
		if !c.CodeIdentity.Stable {
			return true
		}
	}
	return false
}

// selectStrategy fills m.Selection (format v2) or fails for an explicit
// request of a rejected strategy.
func (m *Materialized) selectStrategy(cfg *materializeConfig, mz *materializer) error {
	m.rejections = m.collectRejections(mz)
	eligible := []string{string(StrategyDynamicTasks), string(StrategyLocal)}
	selected := Strategy("")
	switch cfg.strategy {
	case StrategyAuto, "":
		selected = StrategyLocal
		if cfg.ray {
			selected = StrategyDynamicTasks
		}
	case StrategyLocal, StrategyDynamicTasks:
		selected = cfg.strategy
	case StrategyCompiledGraph, StrategyStaticActors:
		var own []plan.Rejection
		for _, r := range m.rejections {
			if r.Strategy == string(cfg.strategy) {
				own = append(own, r)
			}
		}
		return &SelectionError{Strategy: cfg.strategy, Rejections: own}
	default:
		return &DefinitionError{Path: "0", Code: CodeUnknownStrategy, Msg: fmt.Sprintf("unknown strategy %q (auto, local, dynamic_tasks, compiled_graph, static_actors)", cfg.strategy)}
	}
	reporting := common.ReportingPolicy(cfg.reporting)
	switch cfg.reporting {
	case ReportingPolicyFull, ReportingPolicyTerminalOnly, ReportingPolicyDisabled:
	default:
		return &DefinitionError{Path: "0", Code: CodeUnknownReportingPolicy, Msg: fmt.Sprintf("reporting policy %q is not executable (full, terminal_only, disabled)", reporting)}
	}
	m.reporting = reporting
	if selected == StrategyLocal {
		// The selection format's rule (docs/contracts.md#plan-selection): the local strategy
		// records reporting_policy disabled. The in-process engine still
		// reports under the requested policy (ReportingPolicy).
		reporting = common.ReportingPolicyDisabled
	}
	requested := cfg.strategy
	if requested == "" {
		requested = StrategyAuto
	}
	kept := m.rejections
	if len(kept) > plan.MaxRejections {
		kept = kept[:plan.MaxRejections]
	}
	m.Selection = &plan.Selection{PlanSelectionFormat: plan.SelectionFormat, PlanSelectionFormatVersion: 2,
		RequestedPolicy: string(requested), SelectedStrategy: string(selected), ReportingPolicy: reporting,
		EligibleStrategies: eligible, Rejections: kept, TotalRejections: int64(len(m.rejections)),
		RejectionsTruncated: len(m.rejections) > len(kept)}
	if err := m.Selection.Validate(); err != nil {
		return fmt.Errorf("rayflow: selection fails its schema (a rayflow bug): %w", err)
	}
	return nil
}
