package sdk

// One named test per PLAN-01 … PLAN-16, the reference system's acceptance
// checks of the plan snapshot (docs/contracts.md#the-effective-plan), each
// asserting the property itself.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/sdk/canonical"
)

var sideEffects atomic.Int64

func PlanBuild(_ context.Context, n int) ([]int, error) {
	sideEffects.Add(1)
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

func PlanSquare(_ context.Context, v int) (int, error) { return v * v, nil }
func PlanCube(_ context.Context, v int) (int, error)   { return v * v * v, nil }
func PlanSum(_ context.Context, vs []int) (int, error) {
	s := 0
	for _, v := range vs {
		s += v
	}
	return s, nil
}
func PlanAdd(_ context.Context, acc, v int) (int, error)     { return acc + v, nil }
func PlanScale(_ context.Context, k int, v int) (int, error) { return k * v, nil }
func PlanPreview(v int) (any, error)                         { return map[string]any{"v": v}, nil }

func basicFlow(opts ...StepOption) Flow[int, int] {
	return Chain3(Step(PlanBuild), Map(Step(PlanSquare, opts...)).WithLimits(Limits{MaxConcurrency: 4, MaxItems: 100}), Step(PlanSum))
}

// noEnv materializes without ambient environment variables.
func noEnv(string) string { return "" }

func mustMaterialize[In, Out any](t *testing.T, f Flow[In, Out], opts ...MaterializeOption) *Materialized {
	t.Helper()
	m, err := Materialize(f, append([]MaterializeOption{withCodeContext(noEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPLAN01PreSubmitBoundary(t *testing.T) {
	before := sideEffects.Load()
	// The invalid option sits after the side-effecting first step: it must
	// be found before that step runs.
	bad := Chain3(Step(PlanBuild), Map(Step(PlanSquare, WithRayOptions(RayOptions{"runtime_env": "x"}))), Step(PlanSum))
	if _, err := Run(context.Background(), bad, 3); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("want a definition error, got %v", err)
	}
	// An explicit request of an ineligible strategy also fails first.
	_, err := Run(context.Background(), basicFlow(), 3, WithPlanOptions(WithStrategy(StrategyCompiledGraph)))
	var se *SelectionError
	if !errors.As(err, &se) || !errors.Is(err, ErrStrategyRejected) || len(se.Rejections) == 0 {
		t.Fatalf("want a SelectionError, got %v", err)
	}
	if n := sideEffects.Load() - before; n != 0 {
		t.Fatalf("%d application side effects happened before materialization failed", n)
	}
}

func TestPLAN02DeepImmutability(t *testing.T) {
	opts := RayOptions{"max_retries": 5}
	custom := map[string]float64{"accel": 1}
	f := basicFlow(WithRayOptions(opts), WithResources(Resources{Custom: custom}), WithRuntimeEnv("plan02"))
	env := RuntimeEnv{"env_vars": map[string]string{"REGION": "eu"}}
	if err := RegisterRuntimeEnv("plan02", env); err != nil {
		t.Fatal(err)
	}
	m := mustMaterialize(t, f)
	before := string(m.Canonical)
	opts["max_retries"] = 9
	custom["accel"] = 4
	env["image_uri"] = "example.com/app:latest"
	if again := mustMaterialize(t, f); string(again.Canonical) != before {
		t.Fatal("mutating option maps after building the flow changed its plan")
	}
	if string(m.Canonical) != before || m.Plan.Validate() != nil {
		t.Fatal("the materialized plan changed")
	}
}

func TestPLAN03CanonicalEqualityAcrossProcesses(t *testing.T) {
	if os.Getenv("RAYFLOW_PLAN03_CHILD") == "1" {
		m := mustMaterialize(t, groupFlow())
		fmt.Printf("FINGERPRINT %s\n", m.Fingerprint)
		return
	}
	want := mustMaterialize(t, groupFlow()).Fingerprint
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPLAN03CanonicalEqualityAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RAYFLOW_PLAN03_CHILD=1", fmt.Sprintf("GOMAXPROCS=%d", i+1), "GODEBUG=randseednop=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`FINGERPRINT (\S+)`).FindSubmatch(out)
		if m == nil || string(m[1]) != want {
			t.Fatalf("process %d fingerprint %q, this process %s", i, m, want)
		}
	}
	// Two separately built, semantically equal definitions are byte-equal.
	if a, b := mustMaterialize(t, groupFlow()), mustMaterialize(t, groupFlow()); string(a.Canonical) != string(b.Canonical) {
		t.Fatal("equal definitions differ")
	}
}

func groupFlow() Flow[int, []int] {
	return Then(Step(PlanBuild), Group(
		Then(Map(Step(PlanSquare)).WithLimits(Limits{MaxConcurrency: 2, MaxItems: 10}), Step(PlanSum)),
		Then(Map(Step(PlanCube, WithResources(Resources{NumCPUs: 0.5, Custom: map[string]float64{"b": 1, "a": 2}}))), Step(PlanSum)),
	))
}

func TestPLAN04ConservativeInvalidation(t *testing.T) {
	base := mustMaterialize(t, basicFlow()).Fingerprint
	if err := RegisterRuntimeEnv("plan04", RuntimeEnv{"env_vars": map[string]string{"A": "1"}}); err != nil {
		t.Fatal(err)
	}
	limits := Limits{MaxConcurrency: 4, MaxItems: 100}
	variant := func(m Flow[[]int, []int]) Flow[int, int] { return Chain3(Step(PlanBuild), m, Step(PlanSum)) }
	actor := ActorOptions{NumCPUs: 1, Memory: 1 << 20}
	for _, tc := range []struct {
		name string
		f    Flow[int, int]
		opts []MaterializeOption
	}{
		{"callable", variant(Map(Step(PlanCube)).WithLimits(limits)), nil},
		{"topology", Chain4(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits), Step(PlanSum), Step(PlanSquare)), nil},
		{"num_cpus", basicFlow(WithResources(Resources{NumCPUs: 2})), nil},
		{"num_gpus", basicFlow(WithResources(Resources{NumGPUs: 1})), nil},
		{"memory", basicFlow(WithResources(Resources{Memory: 1 << 30})), nil},
		{"custom resource", basicFlow(WithResources(Resources{Custom: map[string]float64{"tpu": 1}})), nil},
		{"max_retries", basicFlow(WithRayOptions(RayOptions{"max_retries": 0})), nil},
		{"scheduling", basicFlow(WithRayOptions(RayOptions{"scheduling_strategy": "SPREAD"})), nil},
		{"runtime env", basicFlow(WithRuntimeEnv("plan04")), nil},
		{"bootstrap", basicFlow(WithBootstrap()), nil},
		{"window", variant(Map(Step(PlanSquare)).WithLimits(Limits{MaxConcurrency: 5, MaxItems: 100})), nil},
		{"max items", variant(Map(Step(PlanSquare)).WithLimits(Limits{MaxConcurrency: 4, MaxItems: 101})), nil},
		{"cancel timeout", variant(Map(Step(PlanSquare)).WithLimits(Limits{MaxConcurrency: 4, MaxItems: 100, CancelTimeout: 3e9})), nil},
		{"eager map", variant(Map(Step(PlanSquare))), nil},
		{"buffer", variant(Map(Step(PlanSquare)).WithLimits(limits).WithResultBuffer(ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: actor})), nil},
		{"fold", Then(Step(PlanBuild), Reduce(Map(Step(PlanSquare)).WithLimits(limits), PlanAdd, 0, FoldOptions{MaxSerializedBytes: 1 << 20, Actor: actor})), nil},
		{"preview", Chain3(Step(PlanBuild), Map(Step(PlanSquare).WithOutputPreview(PlanPreview)).WithLimits(limits), Step(PlanSum)), nil},
		{"trust identity", basicFlow(), []MaterializeOption{WithTrust(TrustIdentity{TrustDomain: "prod"})}},
	} {
		got := mustMaterialize(t, tc.f, tc.opts...).Fingerprint
		if got == base {
			t.Errorf("%s: changing it kept the fingerprint", tc.name)
		}
	}
	for _, tc := range []struct {
		name, env, value string
	}{
		{"build revision", buildid.EnvBuildRevision, "abc123"},
		{"image digest", buildid.EnvImageDigest, "sha256:" + strings.Repeat("ab", 32)},
	} {
		m, err := Materialize(basicFlow(), withCodeContext(func(k string) string {
			if k == tc.env {
				return tc.value
			}
			return ""
		}))
		if err != nil || m.Fingerprint == base {
			t.Errorf("%s: %v (fingerprint unchanged: %v)", tc.name, err, err == nil && m.Fingerprint == base)
		}
	}
	// Spelling a Ray default is not a change.
	if same := mustMaterialize(t, basicFlow(WithRayOptions(RayOptions{"max_retries": 3, "num_returns": 1, "name": "x"}))).Fingerprint; same != base {
		t.Error("Ray defaults and the task name changed the fingerprint")
	}
}

func TestPLAN05ResolvedEnvironments(t *testing.T) {
	if err := RegisterRuntimeEnv("plan05", RuntimeEnv{"env_vars": map[string]string{"MODE": "a"}}); err != nil {
		t.Fatal(err)
	}
	f := basicFlow(WithRuntimeEnv("plan05"))
	first := mustMaterialize(t, f)
	if err := RegisterRuntimeEnv("plan05", RuntimeEnv{"env_vars": map[string]string{"MODE": "a", "EXTRA": "b"}}); err != nil {
		t.Fatal(err)
	}
	second := mustMaterialize(t, f)
	if first.Fingerprint == second.Fingerprint {
		t.Fatal("changing the profile's content reused the old fingerprint")
	}
	if ref := first.Plan.Environments.ByNode["0.1.m*"]; ref.Mode != plan.EnvironmentModeOverride {
		t.Fatalf("the step's environment is %+v, want an override", ref)
	}
	_, err := Materialize(basicFlow(WithRuntimeEnv("never-registered")))
	var de *DefinitionError
	if !errors.As(err, &de) || de.Code != CodeUnknownRuntimeEnv || de.Path != "0.1.m*" {
		t.Fatalf("unregistered profile: %v", err)
	}
}

func TestPLAN06SecretFreeIdentity(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	if err := RegisterRuntimeEnv("plan06", RuntimeEnv{"env_vars": map[string]string{"API_TOKEN": secret, "REGION": "eu-west"}}); err != nil {
		t.Fatal(err)
	}
	m := mustMaterialize(t, basicFlow(WithRuntimeEnv("plan06")))
	sum := sha256.Sum256([]byte(secret))
	for _, leak := range []string{secret, "eu-west", hex.EncodeToString(sum[:])} {
		if strings.Contains(string(m.Canonical), leak) || strings.Contains(fmt.Sprint(m.Selection), leak) {
			t.Fatalf("the plan or selection contains %q", leak)
		}
	}
	var envPaths []string
	for _, r := range m.rejections {
		if r.Code == plan.RejectionCodeUnresolvedRuntimeEnv {
			envPaths = append(envPaths, r.Path)
		}
	}
	if len(envPaths) != 1 || envPaths[0] != "environments.by_node.0.1.m*.runtime_env.env_vars" {
		t.Fatalf("diagnostics name the field, never the value: %v", envPaths)
	}
	if !hasRejection(m, StrategyCompiledGraph, plan.RejectionCodeUnresolvedRuntimeEnv) {
		t.Fatal("a secret-dependent environment must reject reusable strategies")
	}
}

func hasRejection(m *Materialized, strategy Strategy, code plan.RejectionCode) bool {
	for _, r := range m.rejections {
		if r.Strategy == string(strategy) && r.Code == code {
			return true
		}
	}
	return false
}

func TestPLAN07InvocationSeparation(t *testing.T) {
	a := mustMaterialize(t, Map(Bind(PlanScale, 2)))
	b := mustMaterialize(t, Map(Bind(PlanScale, 1000)))
	if a.Fingerprint != b.Fingerprint {
		t.Fatal("changing only the bound value changed the fingerprint")
	}
	if a.Plan.Nodes[1].(*plan.CallNode).BindingSchema.BoundPositionalCount != 1 {
		t.Fatal("the binding schema must record the bound value")
	}
	if strings.Contains(string(b.Canonical), "1000") {
		t.Fatal("a bound value entered the plan")
	}
	f := basicFlow()
	m := mustMaterialize(t, f)
	for _, in := range []int{1, 50} {
		got, err := Run(context.Background(), f, in, WithPlan(m))
		if err != nil || got != PlanSumSquares(in) {
			t.Fatalf("run(%d) = %d, %v", in, got, err)
		}
	}
	if again := mustMaterialize(t, f); again.Fingerprint != m.Fingerprint {
		t.Fatal("running with different inputs changed the fingerprint")
	}
}

func PlanSumSquares(n int) int {
	s := 0
	for i := range n {
		s += i * i
	}
	return s
}

func TestPLAN08StableCodeIdentity(t *testing.T) {
	closure := func(_ context.Context, v int) (int, error) { return v + 1, nil }
	m := mustMaterialize(t, Map(Step(closure)))
	if !hasRejection(m, StrategyCompiledGraph, plan.RejectionCodeUnresolvedCodeIdentity) {
		t.Fatal("a closure must be UNRESOLVED_CODE_IDENTITY for reusable strategies")
	}
	c := m.Plan.Callables[0]
	if c.Kind != plan.CallableKindCallableObject || c.CodeIdentity.Stable || c.CodeIdentity.Deployment != plan.CodeIdentityDeploymentWorkerRuntimeOnly {
		t.Fatalf("closure identity %+v", c)
	}
	// A package-level function of a revisioned build is stable.
	rev := func(k string) string {
		if k == "GIT_COMMIT" {
			return "0123abcd"
		}
		return ""
	}
	m, err := Materialize(Map(Step(PlanSquare)), withCodeContext(rev))
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Plan.Definition.BuildRevision; got != "environment:GIT_COMMIT:0123abcd" {
		t.Fatalf("build revision %q", got)
	}
	for _, r := range m.rejections {
		if r.Code == plan.RejectionCodeUnresolvedCodeIdentity {
			t.Fatalf("a revisioned package-level function was rejected: %+v", r)
		}
	}
	if !m.Plan.Callables[0].CodeIdentity.Stable || m.Plan.Callables[0].ImportPath != "github.com/rayflow/rayflow/sdk.PlanSquare" {
		t.Fatalf("callable %+v", m.Plan.Callables[0])
	}
	_, err = Materialize(Map(Step(PlanSquare)), withCodeContext(func(k string) string {
		if k == buildid.EnvImageDigest {
			return "sha256:tag"
		}
		return ""
	}))
	if !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("a malformed image digest must fail materialization: %v", err)
	}
}

func TestPLAN10StructuredDiagnostics(t *testing.T) {
	m := mustMaterialize(t, basicFlow())
	sel := m.Selection
	if sel.RequestedPolicy != "auto" || sel.SelectedStrategy != string(StrategyLocal) || sel.ReportingPolicy != "disabled" {
		t.Fatalf("auto selection %+v", sel)
	}
	if ray := mustMaterialize(t, basicFlow(), ForRay()); ray.Selection.SelectedStrategy != string(StrategyDynamicTasks) || ray.Selection.ReportingPolicy != "full" {
		t.Fatalf("auto on Ray %+v", ray.Selection)
	}
	for i := 1; i < len(sel.Rejections); i++ {
		a, b := sel.Rejections[i-1], sel.Rejections[i]
		if strings.Join([]string{a.Strategy, string(a.Code), a.Path}, "\x00") >= strings.Join([]string{b.Strategy, string(b.Code), b.Path}, "\x00") {
			t.Fatalf("rejections out of order: %+v then %+v", a, b)
		}
	}
	// Over 32 rejections: truncated, with the total kept.
	var steps []Flow[int, int]
	for range 40 {
		steps = append(steps, Step(PlanSquare, WithRayOptions(RayOptions{"label_selector": map[string]string{"zone": "a"}})))
	}
	many := mustMaterialize(t, Group(steps...))
	if s := many.Selection; len(s.Rejections) != plan.MaxRejections || !s.RejectionsTruncated || s.TotalRejections <= int64(plan.MaxRejections) {
		t.Fatalf("rejections %d, total %d, truncated %v", len(s.Rejections), s.TotalRejections, s.RejectionsTruncated)
	}
	// An unknown strategy or policy has its own code (it was
	// INVALID_CODE_IDENTITY).
	var de *DefinitionError
	_, err := Materialize(basicFlow(), WithStrategy("warp_drive"))
	if !errors.As(err, &de) || de.Code != CodeUnknownStrategy {
		t.Fatalf("unknown strategy: %v", err)
	}
	_, err = Materialize(basicFlow(), WithReportingPolicy("sampled"))
	if !errors.As(err, &de) || de.Code != CodeUnknownReportingPolicy {
		t.Fatalf("sampled reporting is reader-only: %v", err)
	}
}

func TestPLAN11DurableSummary(t *testing.T) {
	m := mustMaterialize(t, basicFlow())
	s := m.Summary()
	for _, k := range []string{"plan_format", "plan_format_version", "fingerprint", "definition_name", "definition_revision", "topology_class", "node_count"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	if s["fingerprint"] != m.Fingerprint || s["node_count"] != int64(len(m.Plan.Nodes)) {
		t.Fatalf("summary %v", s)
	}
	b, err := canonical.Marshal(m.Selection)
	if err != nil || len(b) > plan.MaxSelectionBytes {
		t.Fatalf("selection is %d bytes (%v)", len(b), err)
	}
	if _, err := plan.DecodeSelection(b); err != nil {
		t.Fatalf("the stored selection does not decode: %v", err)
	}
}

func TestPLAN12APIParity(t *testing.T) {
	got, err := Run(context.Background(), groupFlow(), 4)
	if err != nil || got[0] != 0+1+4+9 || got[1] != 0+1+8+27 {
		t.Fatalf("group of chains of maps = %v, %v", got, err)
	}
	m := mustMaterialize(t, groupFlow())
	ids := []string{}
	for _, n := range m.Plan.Nodes {
		ids = append(ids, nodeID(n))
	}
	want := "0.0 0.1.g0.0 0.1.g0.0.m* 0.1.g0.0.result 0.1.g0.1 0.1.g1.0 0.1.g1.0.m* 0.1.g1.0.result 0.1.g1.1 0.1.collect"
	if strings.Join(ids, " ") != want {
		t.Fatalf("node ids %v\nwant %s", ids, want)
	}
}

func nodeID(n plan.Node) string {
	b, _ := canonical.Marshal(n)
	return regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(b))[1]
}

func TestPLAN13RuntimeNodeScoping(t *testing.T) {
	m := mustMaterialize(t, basicFlow())
	if regexp.MustCompile(`\.m[0-9]`).Match(m.Canonical) {
		t.Fatal("a runtime map expansion id entered the plan")
	}
	_, err := Run(context.Background(), Map(Step(func(_ context.Context, v int) (int, error) {
		if v == 7 {
			return 0, errors.New("seven")
		}
		return v, nil
	})), []int{1, 7})
	var se *StepError
	if !errors.As(err, &se) || se.Node != "0.m1" {
		t.Fatalf("runtime errors name runtime nodes (0.m1): %v", err)
	}
}

func TestPLAN14BoundedPersistence(t *testing.T) {
	mk := func(n int) Flow[int, []int] {
		steps := make([]Flow[int, int], n)
		for i := range steps {
			steps[i] = Step(PlanSquare)
		}
		return Group(steps...)
	}
	at := mustMaterialize(t, mk(63)) // 63 steps + the collector = 64 nodes
	if at.Plan.Snapshot != nil || len(at.Plan.Nodes) != plan.MaxPlanNodes {
		t.Fatalf("64 nodes must stay detailed (%d nodes)", len(at.Plan.Nodes))
	}
	over := mustMaterialize(t, mk(64))
	s := over.Plan.Snapshot
	if s == nil || s.Reasons[0] != plan.OverflowReasonNodeLimit || s.ObservedNodeCount != 65 || len(over.Plan.Nodes) != 0 {
		t.Fatalf("65 nodes must overflow: %+v", s)
	}
	if len(over.Canonical) > plan.MaxPlanBytes || !hasRejection(over, StrategyCompiledGraph, plan.RejectionCodePlanSnapshotOverflow) {
		t.Fatal("the overflow form must be bounded and reject reusable strategies")
	}
	if got, err := Run(context.Background(), mk(64), 3); err != nil || len(got) != 64 || got[63] != 9 {
		t.Fatalf("an overflowed plan still runs locally: %v, %v", got, err)
	}
	// Byte overflow with few nodes: large Ray option values.
	big := RayOptions{"resources": map[string]float64{}}
	for i := range 250 {
		big["resources"].(map[string]float64)[fmt.Sprintf("resource-%03d-%s", i, strings.Repeat("x", 200))] = 1
	}
	bytesOver := mustMaterialize(t, basicFlow(WithRayOptions(big)))
	if s := bytesOver.Plan.Snapshot; s == nil || s.Reasons[0] != plan.OverflowReasonByteLimit || s.ObservedCanonicalBytes <= plan.MaxPlanBytes {
		t.Fatalf("a plan over 64 KiB must overflow with byte_limit: %+v", s)
	}
}

func TestPLAN15ResultBufferIdentity(t *testing.T) {
	limits := Limits{MaxConcurrency: 4, MaxItems: 100}
	buf := ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: ActorOptions{NumCPUs: 0.5, Memory: 2 << 20, SchedulingStrategy: "SPREAD"}}
	plain := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits))
	buffered := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithResultBuffer(buf))
	if plain.Fingerprint == buffered.Fingerprint {
		t.Fatal("selecting the result buffer kept the fingerprint")
	}
	pt := buffered.Plan.PhysicalTopology
	a, ok := pt.Actors[0].(*plan.ResultBufferActor)
	if !ok || pt.NodeModel != plan.NodeModelRayTasksAndActors || a.ID != "0.result_buffer" || a.Contract.Bounds.MaximumPendingActorCalls != 2 ||
		a.Contract.Bounds.MaximumSerializedBytes != 1<<20 || len(pt.PlacementRelationships) != 1 {
		t.Fatalf("buffer actor %+v", pt)
	}
	// Every contract field is fingerprinted.
	buf2 := buf
	buf2.MaxSerializedBytes++
	if mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithResultBuffer(buf2)).Fingerprint == buffered.Fingerprint {
		t.Fatal("the buffer's byte bound is not fingerprinted")
	}
	// An unselected map's manifest is unchanged by the feature's existence.
	again := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits))
	if string(again.Canonical) != string(plain.Canonical) || strings.Contains(string(plain.Canonical), "result_buffer") {
		t.Fatal("an unbuffered map's plan mentions the buffer")
	}
}

func TestPLAN16CompiledLifecycleIdentity(t *testing.T) {
	m := mustMaterialize(t, basicFlow())
	if got := m.Plan.StrategyRequirements.CompiledGraph.LifecycleProtocolVersion; got != lifecycle.ProtocolVersion {
		t.Fatalf("lifecycle_protocol_version %d, reducer protocol %d", got, lifecycle.ProtocolVersion)
	}
	run := reducer.RunIdentity{TaskExecutionPK: 1, AttemptNumber: 1, RunID: "rayflow:1"}
	s, err := reducer.NewSession(run,
		reducer.Deadlines{Outer: 100, Admission: 10, Submission: 20, Result: 30, Cancellation: 40, Drain: 50, Teardown: 60},
		reducer.Capacity{SessionOwners: 1, Callers: 1, MaximumInFlight: 1, MaximumBufferedResults: 1, OwnerConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, rej := s.Apply(reducer.Command(lifecycle.CommandValidationRequested, run, 1)); rej != nil {
		t.Fatalf("the current protocol version was rejected: %v", rej)
	}
	ev := reducer.Command(lifecycle.CommandValidationRequested, run, 1)
	ev.ProtocolVersion = 2
	if _, _, rej := s.Apply(ev); rej == nil {
		t.Fatal("the reducer accepted an unsupported protocol version")
	}
}
