package ray

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/sdk"
)

// The engine over a fake runtime gives the local engine's results.
func TestFakeRuntimeRuns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, _ := newFakeEngine()
	got, err := runOn(ctx, e, chainFlow, 4, noProgress)
	if err != nil || got != "n=110" {
		t.Fatalf("chain: %q, %v", got, err)
	}
	g, err := runOn(ctx, e, groupFlow, 5, noProgress)
	if err != nil || g != 6+10+12 {
		t.Fatalf("group: %d, %v", g, err)
	}
	f := mapFlow(sdk.Limits{MaxConcurrency: 3, MaxItems: 50})
	in := JobsSpec{N: 20, FailAt: -1}
	m, err := runOn(ctx, e, f, in, noProgress)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sdk.Run(ctx, f, in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Fatalf("map (-local +fake):\n%s", diff)
	}
	// Errors keep their chain through the engine as through the leaf.
	for _, tc := range []struct {
		name string
		flow sdk.Flow[int, int]
		in   int
	}{
		{"typed wrapped", billingFlow, 2},
		{"sentinel wrapped", sdk.Then(sdk.Step(Inc), billingFlow), -3},
		{"panic", panicsFlow, 3},
	} {
		_, remote := runOn(ctx, e, tc.flow, tc.in, noProgress)
		_, local := sdk.Run(ctx, tc.flow, tc.in)
		compareErrors(t, tc.name, local, remote)
	}
	items := sdk.Map(billingFlow).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10})
	_, remote := runOn(ctx, e, items, []int{1, -5}, noProgress)
	var se *sdk.StepError
	if !errors.As(remote, &se) || !strings.HasPrefix(se.Node, "0.m") {
		t.Fatalf("a map item's error: %v", remote)
	}
	// A closed engine refuses at once.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := runOn(ctx, e, chainFlow, 1, noProgress); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// ReadVar returns the variable a runtime environment profile sets.
func ReadVar(_ context.Context, name string) (string, error) { return os.Getenv(name), nil }

const testEnvProfile = "rayflow-engine-test-env"

func init() {
	if err := sdk.RegisterRuntimeEnv(testEnvProfile, sdk.RuntimeEnv{"env_vars": map[string]string{"RAYFLOW_TEST_PROFILE_VAR": "from-the-profile"}}); err != nil {
		panic(err)
	}
}

var envFlow = sdk.Step(ReadVar, sdk.WithRuntimeEnv(testEnvProfile))

// allowedRayOptions asks sdk for the Ray options it accepts (from the
// message that refuses an unknown one), so that the walk below cannot
// miss an option sdk accepts.
func allowedRayOptions(t *testing.T) []string {
	t.Helper()
	_, err := sdk.Materialize(sdk.Step(Inc, sdk.WithRayOptions(sdk.RayOptions{"no_such_option": 1})))
	_, list, ok := strings.Cut(err.Error(), "(allowed: ")
	if !ok {
		t.Fatalf("no allowed list in %v", err)
	}
	return strings.Split(strings.TrimSuffix(list, ")"), ", ")
}

// Every plan field that affects execution is honoured by the Ray engine
// (it reaches the runtime's submission) or refused at definition time:
// nothing fingerprinted is dropped.
func TestPlanFieldsHonouredOrRefused(t *testing.T) {
	t.Parallel()
	type tc struct {
		opt     string // the Ray option key ("" for a non-option field)
		flow    sdk.Flow[int, int]
		refused string // the refusal's message, "" when honoured
		// check inspects the submission of an honoured field.
		check func(t *testing.T, task leafTask)
	}
	opt := func(k string, v any, refused string) tc {
		check := func(t *testing.T, task leafTask) {
			t.Helper()
			got, ok := task.Options[k]
			if !ok {
				t.Fatalf("%s was not submitted (options %v)", k, task.Options)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(v)
			if string(gj) != string(wj) {
				t.Fatalf("%s submitted as %s, want %s", k, gj, wj)
			}
		}
		return tc{opt: k, flow: sdk.Step(Inc, sdk.WithRayOptions(sdk.RayOptions{k: v})), refused: refused, check: check}
	}
	cases := map[string]tc{
		"num_cpus":                            opt("num_cpus", 0.5, ""),
		"num_gpus":                            opt("num_gpus", 1.0, ""),
		"memory":                              opt("memory", 1<<20, ""),
		"accelerator_type":                    opt("accelerator_type", "A100", ""),
		"resources":                           opt("resources", map[string]float64{"disk": 1}, ""),
		"max_retries":                         opt("max_retries", 0, ""),
		"retry_exceptions":                    opt("retry_exceptions", true, ""),
		"retry_exceptions list":               opt("retry_exceptions", []string{"ValueError"}, "retry_exceptions must be true or false"),
		"scheduling_strategy":                 opt("scheduling_strategy", "SPREAD", ""),
		"scheduling_strategy obj":             opt("scheduling_strategy", map[string]any{"node_id": "x"}, `scheduling_strategy must be "DEFAULT" or "SPREAD"`),
		"enable_task_events":                  opt("enable_task_events", false, ""),
		"label_selector":                      opt("label_selector", map[string]string{"zone": "us-1"}, ""),
		"label_selector bad":                  opt("label_selector", map[string]any{"zone": 1}, "label_selector must map label names to strings"),
		"fallback_strategy":                   opt("fallback_strategy", []map[string]any{{"label_selector": map[string]string{"zone": "us-2"}}}, ""),
		"fallback_strategy bad":               opt("fallback_strategy", []map[string]any{{"num_cpus": 1}}, "only label_selector entries"),
		"placement_group":                     opt("placement_group", "pg-1", "placement_group cannot be given from Go"),
		"placement_group_bundle_index":        opt("placement_group_bundle_index", 0, "needs a placement group"),
		"placement_group_capture_child_tasks": opt("placement_group_capture_child_tasks", true, "needs a placement group"),
		"_generator_backpressure_num_objects": opt("_generator_backpressure_num_objects", 4, "generator tasks"),
		"num_returns":                         opt("num_returns", 2, "num_returns must be 1"),
		"resources field": {flow: sdk.Step(Inc, sdk.WithResources(sdk.Resources{NumCPUs: 0.25, Memory: 4096, Custom: map[string]float64{"gpu_slot": 1}})),
			check: func(t *testing.T, task leafTask) {
				want := map[string]any{"num_cpus": 0.25, "memory": int64(4096), "resources": map[string]float64{"gpu_slot": 1}}
				got := map[string]any{"num_cpus": task.Options["num_cpus"], "memory": task.Options["memory"], "resources": task.Options["resources"]}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("resources submitted as %v (-want +got):\n%s", task.Options, diff)
				}
			}},
		"runtime env profile": {flow: sdk.Step(Inc, sdk.WithRuntimeEnv(testEnvProfile)),
			check: func(t *testing.T, task leafTask) {
				env, _ := task.Options["runtime_env"].(map[string]any)
				if vars, _ := env["env_vars"].(map[string]string); vars["RAYFLOW_TEST_PROFILE_VAR"] != "from-the-profile" {
					t.Fatalf("runtime_env submitted as %v", task.Options["runtime_env"])
				}
			}},
		"bootstrap": {flow: sdk.Step(Inc, sdk.WithBootstrap()),
			check: func(t *testing.T, task leafTask) {
				if !task.Bootstrap {
					t.Fatal("bootstrap was not submitted")
				}
			}},
		"bound value": {flow: sdk.Bind(AddBound, 100),
			check: func(t *testing.T, task leafTask) {
				if string(task.Bound) != "100" {
					t.Fatalf("bound value submitted as %q", task.Bound)
				}
			}},
	}
	// Display-only options are neither fingerprinted nor applied.
	displayOnly := map[string]bool{"name": true, "_labels": true}
	for _, k := range allowedRayOptions(t) {
		found := displayOnly[k]
		for _, c := range cases {
			found = found || c.opt == k
		}
		if !found {
			t.Errorf("Ray option %s is accepted by sdk but not walked by this test", k)
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := sdk.Materialize(c.flow, sdk.ForRay(), noProgress)
			if c.refused != "" {
				var de *sdk.DefinitionError
				if !errors.As(err, &de) || de.Code != sdk.CodeInvalidRayOptions || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("want a definition-time refusal mentioning %q, got %v", c.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e, rt := newFakeEngine()
			if _, err := sdkhost.RunPlan(context.Background(), m, 1, sdk.WithEngine(e)); err != nil {
				t.Fatal(err)
			}
			tasks := rt.submitted()
			if len(tasks) != 1 {
				t.Fatalf("%d submissions", len(tasks))
			}
			c.check(t, tasks[0])
			if want := planDigest(m.Plan); tasks[0].Digest != want {
				t.Fatalf("digest %q submitted, the plan's is %q", tasks[0].Digest, want)
			}
		})
	}
	// The fold reducer's runtime environment and the plan's digest reach
	// the fold actor (the reducer runs in its leaf process).
	fold := sdk.Reduce(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 1, MaxItems: 2}), Concat, "",
		sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: tinyActor, RuntimeEnv: testEnvProfile})
	fm, err := sdk.Materialize(fold, sdk.ForRay(), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	fe, frt := newFakeEngine()
	_, _ = sdkhost.RunPlan(context.Background(), fm, []Rev{{I: 0}}, sdk.WithEngine(fe))
	if len(frt.actors) != 1 {
		t.Fatalf("%d actors created", len(frt.actors))
	}
	a := frt.actors[0]
	env, _ := a.Options["runtime_env"].(map[string]any)
	if vars, _ := env["env_vars"].(map[string]string); vars["RAYFLOW_TEST_PROFILE_VAR"] != "from-the-profile" || a.Digest != planDigest(fm.Plan) {
		t.Fatalf("fold actor options %v, digest %q", a.Options, a.Digest)
	}
	// The plan's executable digest reaches every leaf (checked by its
	// handshake); a revision-identified plan sends none.
	m, err := sdk.Materialize(chainFlow, sdk.ForRay(), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	if d := planDigest(m.Plan); os.Getenv("RAYFLOW_BUILD_REVISION") == "" && !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("a test binary's plan has no executable digest: %q", d)
	}
}

// On Ray a step's runtime environment is applied: the leaf reads the
// variable its profile sets (it is not set in this process).
func TestRuntimeEnvOnRay(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	got, err := runOn(ctx, testEngine, envFlow, "RAYFLOW_TEST_PROFILE_VAR")
	if err != nil || got != "from-the-profile" {
		t.Fatalf("the leaf read %q (%v), want from-the-profile", got, err)
	}
	if local, _ := sdk.Run(ctx, sdk.Step(ReadVar), "RAYFLOW_TEST_PROFILE_VAR"); local != "" {
		t.Fatalf("the variable is set in the test process: %q", local)
	}
	// label_selector and fallback_strategy reach Ray (which would refuse a
	// malformed one): a selector every node matches schedules the leaf.
	sel := sdk.Step(Inc, sdk.WithRayOptions(sdk.RayOptions{
		"label_selector":    map[string]string{"ray.io/node-id": "!no-such-node"},
		"fallback_strategy": []map[string]any{{"label_selector": map[string]string{"ray.io/node-id": "!other"}}},
	}))
	if n, err := runOn(ctx, testEngine, sel, 1); err != nil || n != 2 {
		t.Fatalf("with a label selector: %d, %v", n, err)
	}
}

// noProgress runs a plan on the fake runtime, which has no actors, without
// the full policy's collector actor.
var noProgress = sdk.WithReportingPolicy(sdk.ReportingPolicyDisabled)
