package sdk

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/common"
	genlifecycle "github.com/rayflow/rayflow/gen/lifecycle"
	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Version is rayflow's version, recorded in every plan's compatibility block.
const Version = "0.1.0"

// Materialized is a flow's immutable effective plan and what is derived
// from it. The plan holds no invocation data; what a run needs that must
// never be fingerprinted (the graph and its runtime bindings) stays inside.
type Materialized struct {
	// Plan is the effective plan (detailed, or the overflow form).
	Plan *plan.Plan
	// Canonical is the plan's canonical JSON v1 bytes (≤ 64 KiB).
	Canonical []byte
	// Fingerprint is "sha256:<hex>" of rayflow.workflow-plan-v1 and Canonical.
	Fingerprint string
	// DefinitionRevision is the plan's definition.revision.
	DefinitionRevision string
	// Selection is the strategy selection (format v2).
	Selection *plan.Selection

	bindings   *sdkrt.Bindings  // runtime-only: the graph and its bindings
	rejections []plan.Rejection // every rejection, before truncation
	reporting  common.ReportingPolicy
}

// ReportingPolicy is the policy the plan's runs report under, on every
// engine: the selection's reporting_policy, except for the local strategy,
// whose selection record says disabled (a rule of the selection format:
// nothing reports on Ray) while the in-process engine reports under the
// policy the plan was materialized with (WithReportingPolicy; default
// full), exactly as the Ray engine would.
func (m *Materialized) ReportingPolicy() common.ReportingPolicy {
	if m.reporting == "" && m.Selection != nil {
		return m.Selection.ReportingPolicy
	}
	return m.reporting
}

// Summary is the plan summary stored beside a run.
func (m *Materialized) Summary() map[string]any {
	count := int64(len(m.Plan.Nodes))
	if m.Plan.Snapshot != nil {
		count = m.Plan.Snapshot.ObservedNodeCount
	}
	return map[string]any{
		"plan_format": m.Plan.PlanFormat, "plan_format_version": m.Plan.PlanFormatVersion,
		"fingerprint": m.Fingerprint, "definition_name": m.Plan.Definition.Name,
		"definition_revision": m.DefinitionRevision, "topology_class": string(m.Plan.Topology.Class),
		"node_count": count,
	}
}

// definitionName is the plan's definition name ("" without a plan).
func (m *Materialized) definitionName() string {
	if m.Plan == nil {
		return ""
	}
	return m.Plan.Definition.Name
}

// CacheKey is the key under which a strategy may cache work for this plan.
func (m *Materialized) CacheKey(strategy Strategy) string {
	return "rayflow.workflow-plan:v1:" + string(strategy) + ":" + m.Fingerprint
}

// MaterializeOption configures Materialize.
type MaterializeOption func(*materializeConfig)

type materializeConfig struct {
	strategy  Strategy
	reporting ReportingPolicy
	ray       bool
	trust     TrustIdentity
	code      codeContext
}

// WithStrategy requests an execution strategy: StrategyAuto (the
// default), StrategyLocal, StrategyDynamicTasks, StrategyCompiledGraph or
// StrategyStaticActors. An explicit request of a strategy the plan is not
// eligible for fails with a *SelectionError before any effect; a value
// that is no strategy fails with a *DefinitionError of code
// CodeUnknownStrategy.
func WithStrategy(s Strategy) MaterializeOption {
	return func(c *materializeConfig) { c.strategy = s }
}

// WithReportingPolicy selects the run's progress reporting, on every
// engine: ReportingPolicyFull (the default: live events, snapshots and the
// summary), ReportingPolicyTerminalOnly (one terminal summary) or
// ReportingPolicyDisabled (one terminal summary saying so); anything else
// fails with a *DefinitionError of code CodeUnknownReportingPolicy. See
// WithProgress.
func WithReportingPolicy(p ReportingPolicy) MaterializeOption {
	return func(c *materializeConfig) { c.reporting = p }
}

// ForRay materializes for a Ray engine, so "auto" selects dynamic_tasks.
func ForRay() MaterializeOption { return func(c *materializeConfig) { c.ray = true } }

// WithTrust sets the plan's trust identity.
func WithTrust(t TrustIdentity) MaterializeOption { return func(c *materializeConfig) { c.trust = t } }

// withCodeContext replaces environment and build information (tests).
func withCodeContext(getenv func(string) string) MaterializeOption {
	return func(c *materializeConfig) { c.code.getenv, c.code.executable = getenv, nil }
}

// Materialize validates f and builds its effective plan, canonical bytes,
// fingerprint, definition revision and strategy selection. It has no
// effects: nothing runs and nothing is submitted.
func Materialize[In, Out any](f Flow[In, Out], opts ...MaterializeOption) (*Materialized, error) {
	if f.node == nil {
		return nil, &DefinitionError{Path: "0", Code: CodeEmpty, Msg: "the flow is empty (a zero sdk.Flow)"}
	}
	return materialize(f.node, opts)
}

func materialize(root *flowgraph.Node, opts []MaterializeOption) (*Materialized, error) {
	cfg := materializeConfig{strategy: StrategyAuto, reporting: ReportingPolicyFull, code: defaultCodeContext()}
	for _, o := range opts {
		o(&cfg)
	}
	prog := program.CompileFor(root, cfg.code.buildIdentity())
	if err := validateProgram(prog); err != nil {
		return nil, err
	}
	trust, err := cfg.trust.plan()
	if err != nil {
		return nil, err
	}
	outer, err := runtimeEnvIdentity(nil, trust)
	if err != nil {
		return nil, err
	}
	mz := &materializer{cfg: &cfg, prog: prog, trust: trust, outer: outer,
		profiles: map[string]plan.RuntimeEnvIdentity{}, callableRefs: map[string]string{},
		byNode: map[string]plan.EnvironmentRef{}, envSpecs: map[string]map[string]any{}}
	terminal, err := mz.visit(prog.Root, nil)
	if err != nil {
		return nil, err
	}
	p, err := mz.plan(terminal)
	if err != nil {
		return nil, err
	}
	full, err := canonical.V1Uncapped.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("rayflow: canonical plan: %w", err)
	}
	if reasons := mz.overflowReasons(p, len(full)); len(reasons) > 0 {
		p = mz.overflow(p, reasons, full)
	}
	canon, err := canonical.V1.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("rayflow: canonical plan: %w", err)
	}
	if len(canon) > plan.MaxPlanBytes {
		return nil, &DefinitionError{Path: "0", Code: CodeEmpty, Msg: fmt.Sprintf("even the overflow plan is %d bytes, over %d", len(canon), plan.MaxPlanBytes)}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("rayflow: materialized plan fails its schema (a rayflow bug): %w", err)
	}
	m := &Materialized{Plan: p, Canonical: canon, Fingerprint: canonical.DomainPlan.Sum(canon).String(),
		DefinitionRevision: p.Definition.Revision, bindings: &sdkrt.Bindings{Program: prog, RuntimeEnvs: mz.envSpecs}}
	if err := m.selectStrategy(&cfg, mz); err != nil {
		return nil, err
	}
	return m, nil
}

// materializer walks the graph once, building the plan's parts.
type materializer struct {
	cfg          *materializeConfig
	prog         *program.Program
	trust        plan.TrustIdentity
	outer        plan.RuntimeEnvIdentity
	profiles     map[string]plan.RuntimeEnvIdentity
	nodes        []plan.Node
	edges        []plan.Edge
	callables    []plan.Callable
	callableRefs map[string]string // import path → "callable:<n>"
	callableSeen []flowgraph.Callable
	actors       []plan.Actor
	relations    []plan.PlacementRelationship
	byNode       map[string]plan.EnvironmentRef
	mapLimits    []plan.MapLimit
	retention    []int64 // per-node retention bounds for maximum_buffered_results
	unbounded    bool    // some retention has no finite bound
	maps         int
	unboundedMap bool
	optionPaths  []string // UNRESOLVED_PLAN_OPTION
	envPaths     []string // UNRESOLVED_RUNTIME_ENV
	retryUnsafe  []string
	envSpecs     map[string]map[string]any // profile → spec, for Bindings
}

func inputsFrom(deps []string, none string) []string {
	if len(deps) == 0 {
		return []string{none}
	}
	in := make([]string, len(deps))
	for i, d := range deps {
		in[i] = "node:" + d + ":result"
	}
	return in
}

func (mz *materializer) addEdges(id string, deps []string) {
	for _, d := range deps {
		mz.edges = append(mz.edges, plan.Edge{Source: d + ":result", Target: id + ":input"})
	}
}

// visit adds the program node n fed by deps and returns the ids of its
// terminal nodes.
func (mz *materializer) visit(n *program.Node, deps []string) ([]string, error) {
	id := n.ID
	switch n.Kind {
	case flowgraph.KindStep:
		node, err := mz.callNode(n.Step, id, deps)
		if err != nil {
			return nil, err
		}
		mz.nodes = append(mz.nodes, node)
		mz.addEdges(id, deps)
		return []string{id}, nil
	case flowgraph.KindChain:
		d := deps
		for _, c := range n.Children {
			var err error
			if d, err = mz.visit(c, d); err != nil {
				return nil, err
			}
		}
		return d, nil
	case flowgraph.KindGroup:
		var terms []string
		for _, c := range n.Children {
			t, err := mz.visit(c, deps)
			if err != nil {
				return nil, err
			}
			terms = append(terms, t...)
		}
		cid := id + ".collect"
		mz.nodes = append(mz.nodes, &plan.OrderedCollectNode{ID: cid, Operation: "ordered_collect", NodeModel: "task",
			Inputs: inputsFrom(terms, "invocation:root"), Outputs: []string{"result"}})
		mz.addEdges(cid, terms)
		mz.retention = append(mz.retention, int64(len(terms)))
		return []string{cid}, nil
	case flowgraph.KindMap:
		return mz.mapNode(n, deps)
	}
	return nil, fmt.Errorf("rayflow: node %s: unknown kind", id)
}

func (mz *materializer) callableRef(c flowgraph.Callable) string {
	if ref, ok := mz.callableRefs[c.Name]; ok {
		return ref
	}
	ref := "callable:" + strconv.Itoa(len(mz.callables))
	mz.callableRefs[c.Name] = ref
	mz.callables = append(mz.callables, mz.cfg.code.callableEntry(ref, c))
	mz.callableSeen = append(mz.callableSeen, c)
	return ref
}

// environment resolves a step's runtime environment once.
func (mz *materializer) environment(id, profile string) (plan.EnvironmentRef, error) {
	if profile == "" {
		ref := plan.EnvironmentRef{Mode: plan.EnvironmentModeInherit, Hash: mz.outer.Digest}
		mz.byNode[id] = ref
		return ref, nil
	}
	ident, ok := mz.profiles[profile]
	if !ok {
		spec, found := lookupRuntimeEnv(profile)
		if !found {
			return plan.EnvironmentRef{}, &DefinitionError{Path: id, Code: CodeUnknownRuntimeEnv, Msg: fmt.Sprintf("runtime environment profile %q is not registered", profile)}
		}
		var err error
		if ident, err = runtimeEnvIdentity(spec, mz.trust); err != nil {
			return plan.EnvironmentRef{}, err
		}
		mz.profiles[profile] = ident
		mz.envSpecs[profile] = cloneMap(spec)
	}
	for _, p := range ident.UnresolvedPaths {
		mz.envPaths = append(mz.envPaths, "environments.by_node."+id+"."+p)
	}
	for _, p := range ident.RetryUnsafePaths {
		mz.retryUnsafe = append(mz.retryUnsafe, "environments.by_node."+id+"."+p)
	}
	ref := plan.EnvironmentRef{Mode: plan.EnvironmentModeOverride, Hash: ident.Digest}
	mz.byNode[id] = ref
	return ref, nil
}

func binding(bound int) plan.BindingSchema {
	return plan.BindingSchema{BoundPositionalCount: int64(bound), BoundKeywordNames: []string{}, KeywordPrecedence: "bound_over_invocation"}
}

func (mz *materializer) callNode(s *flowgraph.Step, id string, deps []string) (*plan.CallNode, error) {
	env, err := mz.environment(id, s.RuntimeEnv)
	if err != nil {
		return nil, err
	}
	opts, res, sched, err := mz.rayOptions(s, id)
	if err != nil {
		return nil, err
	}
	node := &plan.CallNode{ID: id, Operation: "call", NodeModel: "task",
		Callable:      plan.CallableRef{Ref: mz.callableRef(s.Callable)},
		BindingSchema: binding(s.Bound), Outputs: []string{"result"}, Bootstrap: s.Bootstrap,
		Resources: res, Scheduling: sched, RayOptions: opts, Environment: env,
		Inputs: inputsFrom(deps, "invocation:root")}
	if s.Version != "" { // absent when undeclared: plans without versions are unchanged
		v := s.Version
		node.CodeVersion = &v
	}
	if s.Preview != nil {
		node.OutputPreview = &plan.OutputPreview{Mode: "author_projection", Callable: plan.CallableRef{Ref: mz.callableRef(s.Preview.Callable)}, LimitsProfile: "v1"}
	}
	return node, nil
}

// rayDefaults are Ray's task option defaults; equal values are dropped so
// that spelling a default does not change the fingerprint.
var rayDefaults = map[string]any{
	"num_cpus": 1.0, "max_retries": 3.0, "num_returns": 1.0, "enable_task_events": true,
	"placement_group": "default", "placement_group_bundle_index": -1.0,
	"placement_group_capture_child_tasks": false, "retry_exceptions": false, "scheduling_strategy": "DEFAULT",
}

// rayOptions normalizes a step's Ray options (docs/contracts.md#the-effective-plan) and splits
// out its resources and scheduling.
func (mz *materializer) rayOptions(s *flowgraph.Step, id string) (map[string]json.RawMessage, plan.Resources, plan.Scheduling, error) {
	all := s.EffectiveRayOptions()
	out := map[string]json.RawMessage{}
	var res plan.Resources
	var sched plan.Scheduling
	coveredBy := plan.SelectorIdentityIdentityRuntimeOnly
	if mz.trust.SchedulingRevision != nil {
		coveredBy = plan.SelectorIdentityIdentityCoveredBySchedulingRevision
	}
	for _, k := range sortedKeys(all) {
		v := normalizeNumber(all[k])
		if v == nil || equalJSON(v, rayDefaults[k]) {
			continue
		}
		path := "nodes." + id + ".ray_options." + k
		switch k {
		case "label_selector", "fallback_strategy":
			sel := &plan.SelectorIdentity{EntryCount: int64(entryCount(v)), Identity: coveredBy}
			v = sel
			if k == "label_selector" {
				sched.LabelSelector = sel
			} else {
				sched.FallbackStrategy = sel
			}
			if coveredBy == plan.SelectorIdentityIdentityRuntimeOnly {
				mz.optionPaths = append(mz.optionPaths, path)
			}
		case "scheduling_strategy":
			if v != "SPREAD" {
				v = map[string]any{"present": true, "identity": "runtime_only"}
				mz.optionPaths = append(mz.optionPaths, path)
			}
			raw, err := canonical.Marshal(v)
			if err != nil {
				return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: fmt.Sprintf("%s: %v", k, err)}
			}
			sched.SchedulingStrategy = raw
		case "placement_group":
			v = map[string]any{"present": true, "identity": "runtime_only"}
			mz.optionPaths = append(mz.optionPaths, path)
		case "retry_exceptions":
			if list, ok := v.([]string); ok {
				v = map[string]any{"exception_types": list}
			}
		case "num_cpus", "num_gpus":
			f, ok := v.(float64)
			if !ok || f < 0 || math.IsInf(f, 0) {
				return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: k + " must be a non-negative number"}
			}
			if k == "num_cpus" {
				res.NumCpus = &f
			} else {
				res.NumGpus = &f
			}
		case "memory":
			f, ok := v.(float64)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt64 {
				return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: "memory must be a non-negative integer number of bytes"}
			}
			m := int64(f)
			res.Memory = &m
		case "accelerator_type":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: "accelerator_type must be a non-empty string"}
			}
			res.AcceleratorType = &s
		case "resources":
			custom, ok := toFloatMap(v)
			if !ok {
				return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: "resources must map names to non-negative amounts"}
			}
			res.Custom = &custom
		}
		raw, err := canonical.Marshal(v)
		if err != nil {
			return nil, res, sched, &DefinitionError{Path: id, Code: CodeInvalidRayOptions, Msg: fmt.Sprintf("%s: %v", k, err)}
		}
		out[k] = raw
	}
	return out, res, sched, nil
}

// normalizeNumber turns Go numbers into float64 so defaults compare by
// value (1 and 1.0 are the same option).
func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case float32:
		return float64(x)
	case map[string]int:
		m := map[string]any{}
		for k, n := range x {
			m[k] = float64(n)
		}
		return m
	}
	return v
}

func equalJSON(a, b any) bool {
	if b == nil {
		return false
	}
	x, err1 := canonical.Marshal(a)
	y, err2 := canonical.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func entryCount(v any) int {
	b, err := canonical.Marshal(v)
	if err != nil {
		return 0
	}
	var x any
	_ = json.Unmarshal(b, &x)
	switch t := x.(type) {
	case map[string]any:
		return len(t)
	case []any:
		return len(t)
	}
	return 1
}

func toFloatMap(v any) (map[string]float64, bool) {
	out := map[string]float64{}
	switch m := v.(type) {
	case map[string]float64:
		for k, f := range m {
			out[k] = f
		}
	case map[string]any:
		for k, x := range m {
			f, ok := normalizeNumber(x).(float64)
			if !ok {
				return nil, false
			}
			out[k] = f
		}
	default:
		return nil, false
	}
	for _, f := range out {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
	}
	return out, true
}

func (mz *materializer) mapNode(n *program.Node, deps []string) ([]string, error) {
	id, m := n.ID, n.Map
	mz.maps++
	bounds := plan.MapBounds{CancelTimeoutSeconds: CancelTimeoutDefault.Seconds()}
	limit := plan.MapLimit{NodeID: id, CancelTimeoutSeconds: bounds.CancelTimeoutSeconds}
	if l := m.Limits; l != nil {
		window := int64(l.MaxConcurrency)
		bounds.MaximumInFlight, limit.MaximumInFlight = &window, &window
		bounds.CancelTimeoutSeconds = l.CancelTimeout.Seconds()
		limit.CancelTimeoutSeconds = bounds.CancelTimeoutSeconds
		if l.MaxItems > 0 {
			items := int64(l.MaxItems)
			bounds.MaximumItems, limit.MaximumItems = &items, &items
		}
	}
	if k := n.Limits.BatchSize; k > 1 { // absent when unbatched: plans without batching are unchanged
		perTask := int64(k)
		bounds.MaximumItemsPerTask = &perTask
		if n.Limits.AutoBatching { // absent for fixed batching: those plans are unchanged
			auto := itemBatchingAuto
			bounds.ItemBatching = &auto
		}
	}
	if m.Resume != nil { // absent without resume: plans of other maps are unchanged
		capBytes := int64(m.Resume.MaxResultBytes)
		bounds.MaximumLedgerResultBytes = &capBytes
	}
	if bounds.MaximumItems == nil {
		mz.unboundedMap = true
	}
	mz.mapLimits = append(mz.mapLimits, limit)
	var actorID *string
	if m.Buffer != nil {
		a := id + ".result_buffer"
		actorID = &a
	}
	if m.Fold != nil {
		a := id + ".result_fold"
		actorID = &a
		retained := int64(min(m.Limits.MaxItems-1, m.Limits.MaxConcurrency-1))
		credit := "incorporated_items"
		bounds.MaximumRetainedOutOfOrder, bounds.AdmissionCreditSource = &retained, &credit
	}
	switch {
	case bounds.MaximumItems == nil:
		mz.unbounded = true
	case m.Fold != nil:
		mz.retention = append(mz.retention, int64(min(m.Limits.MaxItems, m.Limits.MaxConcurrency)))
	default:
		mz.retention = append(mz.retention, *bounds.MaximumItems)
	}
	mz.nodes = append(mz.nodes, &plan.DynamicMapNode{ID: id, Operation: "dynamic_map", NodeModel: "task_template",
		Inputs: inputsFrom(deps, "invocation:arg:0"), Outputs: []string{"result"}, Bounds: bounds, ActorLayout: actorID})
	mz.addEdges(id, deps)
	body, err := mz.visit(n.Body(), []string{id})
	if err != nil {
		return nil, err
	}
	rid := id + ".result"
	inputs := inputsFrom(body, "invocation:root")
	switch {
	case m.Buffer != nil:
		mz.nodes = append(mz.nodes, &plan.OrderedActorFinalizeNode{ID: rid, Operation: "ordered_actor_finalize", NodeModel: "actor",
			Inputs: inputs, Outputs: []string{"result"}, ActorLayout: *actorID})
		mz.bufferActor(id, *actorID, m)
	case m.Fold != nil:
		mz.nodes = append(mz.nodes, &plan.OrderedActorFoldFinalizeNode{ID: rid, Operation: "ordered_actor_fold_finalize", NodeModel: "actor",
			Inputs: inputs, Outputs: []string{"result"}, ActorLayout: *actorID})
		if err := mz.foldActor(id, *actorID, m); err != nil {
			return nil, err
		}
	default:
		mz.nodes = append(mz.nodes, &plan.OrderedDynamicCollectNode{ID: rid, Operation: "ordered_dynamic_collect", NodeModel: "owner",
			Inputs: inputs, Outputs: []string{"result"}})
	}
	mz.addEdges(rid, body)
	return []string{rid}, nil
}

// actorParts builds the parts shared by the result-buffer and fold actors.
func actorParts(a flowgraph.ActorOptions) (plan.ActorResources, plan.ActorOptions, plan.ActorPlacement) {
	strategy := plan.SchedulingStrategy(a.SchedulingStrategy)
	if strategy == "" {
		strategy = plan.SchedulingStrategyDefault
	}
	custom := map[string]float64{}
	names := []string{}
	for _, k := range sortedKeys(a.Resources) {
		custom[k] = a.Resources[k]
		names = append(names, k)
	}
	return plan.ActorResources{NumCpus: a.NumCPUs, Memory: a.Memory, Custom: custom},
		plan.ActorOptions{NumCpus: a.NumCPUs, Memory: a.Memory, Resources: custom, SchedulingStrategy: strategy,
			Lifetime: "non_detached", MaxRestarts: 0, MaxTaskRetries: 0, MaxConcurrency: 1, MaxPendingCalls: 2},
		plan.ActorPlacement{SchedulingStrategy: strategy, CustomResources: names}
}

var (
	actorCodec    = plan.ActorCodec{Name: "json", Version: 1, Measurement: "retained_serialized_bytes"}
	actorLifetime = plan.ActorLifetime{Kind: "non_detached", Owner: "workflow_coordinator", Cleanup: "best_effort", NodeLossRecovery: false}
	actorResult   = plan.ActorResult{Ordered: true, FinalizeReturns: 2, PayloadRefResolvedByCoordinator: false}
)

func (mz *materializer) bufferActor(mapID, actorID string, m *flowgraph.Map) {
	res, opts, place := actorParts(m.Buffer.Actor)
	mz.actors = append(mz.actors, &plan.ResultBufferActor{ID: actorID, Kind: "ordered_map_result_buffer", Cardinality: "one_per_workflow_invocation",
		Resources: res, Contract: plan.ResultBufferContract{Protocol: plan.ResultBufferProtocol, ProtocolVersion: 1, Codec: actorCodec,
			Bounds: plan.ResultBufferBounds{MaximumItems: int64(m.Limits.MaxItems), MaximumInFlightLeaves: int64(m.Limits.MaxConcurrency),
				MaximumSerializedBytes: m.Buffer.MaxSerializedBytes, MaximumPendingActorCalls: 2},
			Actor: opts, Placement: place, Lifetime: actorLifetime, Restart: plan.ActorRestart{}, Result: actorResult}})
	mz.relations = append(mz.relations, plan.PlacementRelationship{Source: mapID, Target: actorID, Relationship: "owns_non_detached_actor", Placement: place})
}

func (mz *materializer) foldActor(mapID, actorID string, m *flowgraph.Map) error {
	f := m.Fold
	rid := mapID + ".reducer"
	env, err := mz.environment(rid, f.Reducer.RuntimeEnv)
	if err != nil {
		return err
	}
	delete(mz.byNode, rid) // the reducer runs inside the actor, not as a node
	res, opts, place := actorParts(f.Actor)
	mz.actors = append(mz.actors, &plan.ResultFoldActor{ID: actorID, Kind: "ordered_map_result_fold", Cardinality: "one_per_workflow_invocation",
		Resources: res, Contract: plan.ResultFoldContract{Protocol: plan.ResultFoldProtocol, ProtocolVersion: 1, Codec: actorCodec,
			Bounds: plan.ResultFoldBounds{MaximumItems: int64(m.Limits.MaxItems), MaximumInFlightLeaves: int64(m.Limits.MaxConcurrency),
				MaximumSerializedBytes: f.MaxSerializedBytes, MaximumPendingActorCalls: 2,
				MaximumRetainedOutOfOrder: int64(min(m.Limits.MaxItems-1, m.Limits.MaxConcurrency-1))},
			Actor: opts, Placement: place, Lifetime: actorLifetime, Restart: plan.ActorRestart{}, Result: actorResult,
			Reducer: plan.FoldReducer{ID: rid, Callable: plan.CallableRef{Ref: mz.callableRef(f.Reducer.Callable)},
				BindingSchema: binding(0), Bootstrap: f.Reducer.Bootstrap, Environment: env},
			Initial: plan.FoldInitial{Binding: "required_invocation_value", Persisted: false}}})
	mz.relations = append(mz.relations, plan.PlacementRelationship{Source: mapID, Target: actorID, Relationship: "owns_non_detached_actor", Placement: place})
	return nil
}

// plan assembles the detailed plan.
func (mz *materializer) plan(terminal []string) (*plan.Plan, error) {
	code := mz.cfg.code
	buildRev, err := code.buildRevision()
	if err != nil {
		return nil, &DefinitionError{Path: "definition.build_revision", Code: CodeInvalidIdentity, Msg: err.Error()}
	}
	image, err := code.imageDigest()
	if err != nil {
		return nil, err
	}
	idents := make([]plan.CodeIdentity, len(mz.callables))
	for i, c := range mz.callables {
		idents[i] = c.CodeIdentity
	}
	rev, _, err := canonical.Fingerprint(canonical.DomainDefinition, map[string]any{
		"build_revision": buildRev, "callables": idents, "container_image_digest": image})
	if err != nil {
		return nil, fmt.Errorf("rayflow: definition revision: %w", err)
	}
	name := "workflow:anonymous"
	for _, c := range mz.callableSeen {
		if c.Resolvable {
			name = "workflow:" + c.Name
			break
		}
	}
	class := plan.TopologyClassStatic
	if mz.maps > 0 {
		class = plan.TopologyClassDynamic
	}
	results := make([]string, len(terminal))
	for i, t := range terminal {
		results[i] = "node:" + t + ":result"
	}
	model := plan.NodeModelRayTasks
	if len(mz.actors) > 0 {
		model = plan.NodeModelRayTasksAndActors
	}
	items := plan.LogicalItemsFixed
	switch {
	case mz.maps > 0 && mz.unboundedMap:
		items = plan.LogicalItemsUnbounded
	case mz.maps > 0:
		items = plan.LogicalItemsInputBounded
	}
	var buffered *int64
	if !mz.unbounded {
		b := int64(1)
		for _, r := range mz.retention {
			b = max(b, r)
		}
		buffered = &b
	}
	limits := mz.mapLimits
	if limits == nil {
		limits = []plan.MapLimit{}
	}
	retry, total, truncated := boundedPaths(append([]string(nil), mz.retryUnsafe...))
	transport := plan.ChannelTransportCPUSharedMemory
	goVersion, os, arch := runtime.Version(), runtime.GOOS, runtime.GOARCH
	rejection := plan.RejectionCodeIncompatiblePlatform
	p := &plan.Plan{
		PlanFormat: plan.Format, PlanFormatVersion: plan.FormatVersion,
		Definition: plan.Definition{Name: truncateRunes(name, plan.MaxStringRunes), Revision: rev.String(), BuildRevision: buildRev, ContainerImageDigest: image},
		Topology:   plan.Topology{Class: class, EntryPorts: []string{"arg:0"}, ResultPorts: results},
		Nodes:      mz.nodes, Callables: mz.callables, Edges: mz.edges,
		PhysicalTopology: plan.PhysicalTopology{NodeModel: model, Stages: []plan.Stage{}, Actors: nonNil(mz.actors), PlacementRelationships: nonNil(mz.relations)},
		Capabilities: plan.Capabilities{
			Invocations:  plan.CapabilitiesInvocations{Cardinality: "once"},
			LogicalItems: plan.CapabilitiesLogicalItems{Cardinality: items},
			Admission:    plan.Admission{MapLimits: &limits, MaximumBufferedResults: buffered},
			Transport:    plan.CapabilitiesTransport{Kind: "ray_object_store", Serialization: "json", Ordering: "preserved", ZeroCopy: false},
			Results:      plan.CapabilitiesResults{Cardinality: "one", Ownership: "outer_task", Retention: "until_resolved"},
			Effects:      plan.CapabilitiesEffects{Mode: plan.SideEffectsUnknown},
			Failure:      plan.CapabilitiesFailure{FallbackAfterSubmission: false},
			Cancellation: plan.CapabilitiesCancellation{Mode: "recursive_best_effort", DrainRequired: true},
			Owner:        plan.CapabilitiesOwner{Kind: "outer_task", Lifetime: "durable_run", Sharing: "isolated"},
			Durability:   plan.CapabilitiesDurability{Boundary: "outer_task", PerNodeRecovery: false},
		},
		Environments: plan.Environments{Outer: mz.outer, ByNode: mz.byNode},
		Security:     plan.Security{TrustIdentity: mz.trust},
		RetrySafety:  plan.RetrySafety{RetrySafe: total == 0, RetryUnsafePaths: retry, TotalRetryUnsafePaths: total, RetryUnsafePathsTruncated: truncated},
		StrategyRequirements: plan.StrategyRequirements{CompiledGraph: plan.CompiledGraphRequirements{SettingsVersion: 1,
			// Bound to the reducer's protocol: changing its meaning changes
			// this version and so every plan's fingerprint (PLAN-16).
			LifecycleProtocolVersion: genlifecycle.ProtocolVersion,
			Transport:                transport, MaximumInFlight: 1, MaximumBufferedResults: 1, OwnerConcurrency: 1}},
		Compatibility: plan.Compatibility{RayflowPlanAPI: plan.APIVersion, Rayflow: Version, Byteorder: plan.CompatibilityByteorderLittle,
			CompiledGraph: plan.CompiledGraphCompatibility{SchemaVersion: 2, PolicyVersion: 3,
				Reason: plan.CompiledGraphReasonIncompleteCapabilityContext, PlanRejectionCode: &rejection, Transport: &transport,
				// rayflow has no compiled-graph runtime yet: the Go toolchain
				// stands where the reference records Python.
				Runtime: plan.CompiledGraphRuntime{PythonVersion: nil, OperatingSystem: &os, Architecture: &arch, PythonImplementation: nil,
					DependencyProfile: &goVersion},
				Beta: true}},
	}
	return p, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
