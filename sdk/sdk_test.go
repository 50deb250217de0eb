package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

// leafCounter counts leaf calls; each test run puts its own in the context
// so that parallel tests do not share one.
type leafCounter struct{ n atomic.Int64 }

type counterKey struct{}

func withCounter() (context.Context, *leafCounter) {
	c := &leafCounter{}
	return context.WithValue(context.Background(), counterKey{}, c), c
}

func count(ctx context.Context) {
	if c, ok := ctx.Value(counterKey{}).(*leafCounter); ok {
		c.n.Add(1)
	}
}

// Inc returns v+1.
func Inc(ctx context.Context, v int) (int, error) { count(ctx); return v + 1, nil }

// Spread returns 0..n-1.
func Spread(ctx context.Context, n int) ([]int, error) {
	count(ctx)
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s, nil
}

// SumInts adds vs.
func SumInts(ctx context.Context, vs []int) (int, error) {
	count(ctx)
	t := 0
	for _, v := range vs {
		t += v
	}
	return t, nil
}

// Add is a reducer.
func Add(ctx context.Context, acc, item int) (int, error) { count(ctx); return acc + item, nil }

// AddAll is a reducer of slices.
func AddAll(ctx context.Context, acc int, items []int) (int, error) {
	count(ctx)
	for _, v := range items {
		acc += v
	}
	return acc, nil
}

// PreviewInt is an output preview projector.
func PreviewInt(v int) (any, error) { return map[string]any{"value": v}, nil }

// Prefix is a step with a bound value.
func Prefix(ctx context.Context, prefix, s string) (string, error) {
	count(ctx)
	return prefix + s, nil
}

// defCase is one definition: code "" means it is valid and runs.
type defCase struct {
	name string
	run  func(context.Context) error
	code sdk.DefinitionCode
	path string
}

func runFlow[In, Out any](f sdk.Flow[In, Out], in In) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := sdk.Run(ctx, f, in)
		return err
	}
}

var (
	okLimits = sdk.Limits{MaxConcurrency: 2, MaxItems: 10}
	okFold   = sdk.FoldOptions{MaxSerializedBytes: 1024, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1024}}
	okBuffer = sdk.ResultBuffer{MaxSerializedBytes: 1024, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1024}}
)

// limited is Spread → Map(Inc).WithLimits(l): the map is node 0.1.
func limited(l sdk.Limits) func(context.Context) error {
	return runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(l)), 3)
}

// batched is Spread → Map(Inc).WithLimits(okLimits).WithItemBatching(k):
// the map is node 0.1.
func batched(k int) func(context.Context) error {
	return runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithItemBatching(k)), 3)
}

// autoBatched is Spread → Map(Inc).WithLimits(okLimits).WithAutoBatching(c):
// the map is node 0.1.
func autoBatched(c int) func(context.Context) error {
	return runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithAutoBatching(c)), 3)
}

// buffered is Spread → a buffered map (node 0.1).
func buffered(l sdk.Limits, b sdk.ResultBuffer) func(context.Context) error {
	return runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(l).WithResultBuffer(b)), 3)
}

// folded is Spread → a folded map (node 0.1).
func folded(l sdk.Limits, o sdk.FoldOptions) func(context.Context) error {
	return runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(l), Add, 0, o)), 3)
}

// actorCases checks the actor options of both a result buffer and a fold.
func actorCases(name string, bytes int64, a sdk.ActorOptions, code sdk.DefinitionCode) []defCase {
	return []defCase{
		{"buffer " + name, buffered(okLimits, sdk.ResultBuffer{MaxSerializedBytes: bytes, Actor: a}), code, "0.1"},
		{"fold " + name, folded(okLimits, sdk.FoldOptions{MaxSerializedBytes: bytes, Actor: a}), code, "0.1"},
	}
}

func customResources(n int) map[string]float64 {
	m := make(map[string]float64, n)
	for i := range n {
		m[fmt.Sprintf("r%02d", i)] = 1
	}
	return m
}

const testEnvProfile = "sdk-test-env"

func init() {
	if err := sdk.RegisterRuntimeEnv(testEnvProfile, sdk.RuntimeEnv{"env_vars": map[string]any{"MODE": "test"}}); err != nil {
		panic(err)
	}
}

func definitionCases() []defCase {
	const (
		invalidLimits = sdk.CodeInvalidLimits
		invalidActor  = sdk.CodeInvalidActorOptions
		invalidRay    = sdk.CodeInvalidRayOptions
		nesting       = sdk.CodeForbiddenNesting
	)
	actor := func(bytes int64) sdk.ActorOptions { return sdk.ActorOptions{NumCPUs: 1, Memory: bytes} }
	withStrategy := func(s string) sdk.ActorOptions { a := actor(1024); a.SchedulingStrategy = s; return a }
	withResources := func(r map[string]float64) sdk.ActorOptions { a := actor(1024); a.Resources = r; return a }
	withCPUs := func(c float64) sdk.ActorOptions { return sdk.ActorOptions{NumCPUs: c, Memory: 1024} }
	step := func(opts ...sdk.StepOption) func(context.Context) error {
		return runFlow(sdk.Then(sdk.Step(Inc), sdk.Step(Inc, opts...)), 1) // the second step is node 0.1
	}

	cases := []defCase{
		// Limits.
		{"MaxConcurrency 0", limited(sdk.Limits{MaxConcurrency: 0, MaxItems: 10}), invalidLimits, "0.1"},
		{"MaxConcurrency -1", limited(sdk.Limits{MaxConcurrency: -1}), invalidLimits, "0.1"},
		{"MaxConcurrency 1", limited(sdk.Limits{MaxConcurrency: 1, MaxItems: 10}), "", ""},
		{"MaxItems -1", limited(sdk.Limits{MaxConcurrency: 2, MaxItems: -1}), invalidLimits, "0.1"},
		{"MaxItems 0 (unbounded)", limited(sdk.Limits{MaxConcurrency: 2, MaxItems: 0}), "", ""},
		{"CancelTimeout negative", limited(sdk.Limits{MaxConcurrency: 2, CancelTimeout: -time.Nanosecond}), invalidLimits, "0.1"},
		{"CancelTimeout 0 (default)", limited(sdk.Limits{MaxConcurrency: 2}), "", ""},

		// Result buffer and fold byte limits.
		{"buffer MaxSerializedBytes 0", buffered(okLimits, sdk.ResultBuffer{MaxSerializedBytes: 0, Actor: actor(1)}), invalidLimits, "0.1"},
		{"buffer MaxSerializedBytes -1", buffered(okLimits, sdk.ResultBuffer{MaxSerializedBytes: -1, Actor: actor(1)}), invalidLimits, "0.1"},
		{"buffer MaxSerializedBytes 1", buffered(okLimits, sdk.ResultBuffer{MaxSerializedBytes: 1, Actor: actor(1)}), "", ""},
		{"fold MaxSerializedBytes 0", folded(okLimits, sdk.FoldOptions{MaxSerializedBytes: 0, Actor: actor(1)}), invalidLimits, "0.1"},
		{"fold MaxSerializedBytes 1", folded(okLimits, sdk.FoldOptions{MaxSerializedBytes: 1, Actor: actor(1)}), "", ""},
		{"buffer without MaxItems", buffered(sdk.Limits{MaxConcurrency: 2}, okBuffer), invalidLimits, "0.1"},
		{"buffer without WithLimits", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithResultBuffer(okBuffer)), 3), invalidLimits, "0.1"},
		{"fold without MaxItems", folded(sdk.Limits{MaxConcurrency: 2}, okFold), invalidLimits, "0.1"},
		{"fold without WithLimits", runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Step(Inc)), Add, 0, okFold)), 3), invalidLimits, "0.1"},

		// Fold and buffer together, and forbidden nesting.
		{"buffer then fold", runFlow(sdk.Then(sdk.Step(Spread),
			sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithResultBuffer(okBuffer), Add, 0, okFold)), 3), sdk.CodeFoldAndBuffer, "0.1"},
		{"fold then buffer", runFlow(sdk.Then(sdk.Step(Spread),
			sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), Add, 0, okFold).WithResultBuffer(okBuffer)), 3), sdk.CodeFoldAndBuffer, "0.1"},
		{"buffer inside a map", runFlow(sdk.Map(sdk.Then(sdk.Step(Spread),
			sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithResultBuffer(okBuffer))).WithLimits(okLimits), []int{1, 2}), nesting, "0.m*.1"},
		{"buffer inside an eager map", runFlow(sdk.Map(
			sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithResultBuffer(okBuffer)), [][]int{{1}}), nesting, "0.m*"},
		{"fold inside a map", runFlow(sdk.Map(sdk.Then(sdk.Step(Spread),
			sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), Add, 0, okFold))).WithLimits(okLimits), []int{1, 2}), nesting, "0.m*.1"},
		{"fold inside a group inside a map", runFlow(sdk.Map(sdk.Group(sdk.Step(SumInts),
			sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), Add, 0, okFold))).WithLimits(okLimits), [][]int{{1}}), nesting, "0.m*.g1"},
		{"fold whose mapper is a map", runFlow(sdk.Reduce(sdk.Map(sdk.Map(sdk.Step(Inc))).WithLimits(okLimits), AddAll, 0, okFold), [][]int{{1}}), nesting, "0.m*"},
		{"fold whose mapper contains a map", runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Then(sdk.Step(Spread),
			sdk.Map(sdk.Step(Inc)).WithLimits(okLimits))).WithLimits(okLimits), AddAll, 0, okFold)), 3), nesting, "0.1.m*.1"},
		{"fold whose mapper is a static chain and group", runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Then(sdk.Step(Inc),
			sdk.Group(sdk.Step(Inc), sdk.Step(Inc)))).WithLimits(okLimits), AddAll, 0, okFold)), 3), "", ""},
		{"plain map inside a map", runFlow(sdk.Map(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(okLimits))).WithLimits(okLimits), []int{1, 2}), "", ""},

		// Item batching: 1 … MaxItemsPerTask items per task, a single-step body.
		{"batching 0", batched(0), invalidLimits, "0.1"},
		{"batching -1", batched(-1), invalidLimits, "0.1"},
		{"batching 1", batched(1), "", ""},
		{"batching 2", batched(2), "", ""},
		{"batching at the cap", batched(sdk.MaxItemsPerTask), "", ""},
		{"batching one over the cap", batched(sdk.MaxItemsPerTask + 1), invalidLimits, "0.1"},
		{"batching before WithLimits", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithItemBatching(2).WithLimits(okLimits)), 3), "", ""},
		{"batching an eager map", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithItemBatching(2)), 3), "", ""},
		{"batching a MapSeq", runFlow(sdk.MapSeq(sdk.Step(Inc)).WithLimits(okLimits).WithItemBatching(2), slices.Values([]int{1, 2, 3})), "", ""},
		{"batching a buffered map", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithResultBuffer(okBuffer).WithItemBatching(2)), 3), "", ""},
		{"batching a folded map", runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithItemBatching(2), Add, 0, okFold)), 3), "", ""},
		{"batching a chain body", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Then(sdk.Step(Inc), sdk.Step(Inc))).WithLimits(okLimits).WithItemBatching(2)), 3), sdk.CodeInvalidBatching, "0.1"},
		{"batching a group body", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Group(sdk.Step(Inc))).WithLimits(okLimits).WithItemBatching(2)), 3), sdk.CodeInvalidBatching, "0.1"},
		{"batching a map body", runFlow(sdk.Map(sdk.Map(sdk.Step(Inc))).WithItemBatching(2), [][]int{{1}}), sdk.CodeInvalidBatching, "0"},
		{"batching 1 of a chain body", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Then(sdk.Step(Inc), sdk.Step(Inc))).WithLimits(okLimits).WithItemBatching(1)), 3), "", ""},
		{"batching a step", runFlow(sdk.Then(sdk.Step(Inc), sdk.Step(Inc).WithItemBatching(2)), 1), sdk.CodeNotAMap, "0.1"},

		// Automatic batching: a cap of 2 … MaxItemsPerTask, a single-step body.
		{"auto batching 1", autoBatched(1), invalidLimits, "0.1"},
		{"auto batching 0", autoBatched(0), invalidLimits, "0.1"},
		{"auto batching 2", autoBatched(2), "", ""},
		{"auto batching at the cap", autoBatched(sdk.MaxItemsPerTask), "", ""},
		{"auto batching one over the cap", autoBatched(sdk.MaxItemsPerTask + 1), invalidLimits, "0.1"},
		{"auto batching a MapSeq", runFlow(sdk.MapSeq(sdk.Step(Inc)).WithLimits(okLimits).WithAutoBatching(8), slices.Values([]int{1, 2, 3})), "", ""},
		{"auto batching a folded map", runFlow(sdk.Then(sdk.Step(Spread), sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits).WithAutoBatching(8), Add, 0, okFold)), 3), "", ""},
		{"auto batching a chain body", runFlow(sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Then(sdk.Step(Inc), sdk.Step(Inc))).WithLimits(okLimits).WithAutoBatching(2)), 3), sdk.CodeInvalidBatching, "0.1"},
		{"auto batching a step", runFlow(sdk.Then(sdk.Step(Inc), sdk.Step(Inc).WithAutoBatching(2)), 1), sdk.CodeNotAMap, "0.1"},

		// Builder methods on the wrong kind of flow.
		{"WithLimits on a step", runFlow(sdk.Then(sdk.Step(Inc), sdk.Step(Inc).WithLimits(okLimits)), 1), sdk.CodeNotAMap, "0.1"},
		{"WithLimits on a group", runFlow(sdk.Group(sdk.Step(Inc)).WithLimits(okLimits), 1), sdk.CodeNotAMap, "0"},
		{"WithResultBuffer on a step", runFlow(sdk.Then(sdk.Step(Inc), sdk.Step(Inc).WithResultBuffer(okBuffer)), 1), sdk.CodeNotAMap, "0.1"},
		{"Reduce on a step", runFlow(sdk.Then(sdk.Step(Inc), sdk.Reduce(sdk.Step(Spread), Add, 0, okFold)), 1), sdk.CodeNotAMap, "0.1"},
		{"WithOutputPreview on a chain", runFlow(sdk.Group(sdk.Step(Inc), sdk.Then(sdk.Step(Inc), sdk.Step(Inc)).WithOutputPreview(PreviewInt)), 1), sdk.CodeNotAStep, "0.g1"},
		{"WithOutputPreview on a map", runFlow(sdk.Map(sdk.Step(Inc)).WithOutputPreview(func([]int) (any, error) { return nil, nil }), []int{1}), sdk.CodeNotAStep, "0"},
		{"WithOutputPreview on a step", runFlow(sdk.Step(Inc).WithOutputPreview(PreviewInt), 1), "", ""},
		{"WithOutputPreview with a closure", runFlow(sdk.Step(Inc).WithOutputPreview(func(int) (any, error) { return nil, nil }), 1), sdk.CodeInvalidIdentity, "0"},

		// Ray options and runtime environments.
		{"unknown Ray option", step(sdk.WithRayOptions(sdk.RayOptions{"max_calls": 1})), invalidRay, "0.1"},
		{"known Ray option", step(sdk.WithRayOptions(sdk.RayOptions{"max_retries": 0, "scheduling_strategy": "SPREAD"})), "", ""},
		{"num_returns 2", step(sdk.WithRayOptions(sdk.RayOptions{"num_returns": 2})), invalidRay, "0.1"},
		{"num_returns 1", step(sdk.WithRayOptions(sdk.RayOptions{"num_returns": 1})), "", ""},
		{"negative resources", step(sdk.WithResources(sdk.Resources{NumCPUs: -1})), invalidRay, "0.1"},
		{"zero custom resource", step(sdk.WithResources(sdk.Resources{Custom: map[string]float64{"gpu_slot": 0}})), invalidRay, "0.1"},
		{"custom resource CPU (Ray's own)", step(sdk.WithResources(sdk.Resources{Custom: map[string]float64{"CPU": 1}})), invalidRay, "0.1"},
		{"custom resource GPU (Ray's own)", step(sdk.WithResources(sdk.Resources{Custom: map[string]float64{"GPU": 1}})), invalidRay, "0.1"},
		{"custom resource cpu (not Ray's)", step(sdk.WithResources(sdk.Resources{Custom: map[string]float64{"cpu": 1}})), "", ""},
		{"Ray option resources with CPU", step(sdk.WithRayOptions(sdk.RayOptions{"resources": map[string]any{"CPU": 1}})), invalidRay, "0.1"},
		{"Ray option resources", step(sdk.WithRayOptions(sdk.RayOptions{"resources": map[string]any{"slot": 1}})), "", ""},
		{"unregistered runtime env", step(sdk.WithRuntimeEnv("sdk-test-missing")), sdk.CodeUnknownRuntimeEnv, "0.1"},
		{"registered runtime env", step(sdk.WithRuntimeEnv(testEnvProfile)), "", ""},
		{"reducer with an unregistered runtime env", folded(okLimits, sdk.FoldOptions{MaxSerializedBytes: 1024,
			Actor: actor(1024), RuntimeEnv: "sdk-test-missing"}), sdk.CodeUnknownRuntimeEnv, "0.1.reducer"},
		{"reducer with a registered runtime env", folded(okLimits, sdk.FoldOptions{MaxSerializedBytes: 1024,
			Actor: actor(1024), RuntimeEnv: testEnvProfile}), "", ""},

		// Missing functions and empty flows.
		{"nil step function", runFlow(sdk.Then(sdk.Step(Inc), sdk.Step[int, int](nil)), 1), sdk.CodeNotAStep, "0.1"},
		{"nil bound function", runFlow(sdk.Group(sdk.Step(Inc), sdk.Bind[string, int, int](nil, "x")), 1), sdk.CodeNotAStep, "0.g1"},
		{"nil reducer", runFlow(sdk.Reduce[[]int, int, int](sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), nil, 0, okFold), []int{1}), sdk.CodeNotAStep, "0"},
		{"empty group", runFlow(sdk.Then(sdk.Step(Inc), sdk.Group[int, int]()), 1), sdk.CodeEmpty, "0.1"},
		{"zero flow", runFlow(sdk.Flow[int, int]{}, 1), sdk.CodeEmpty, "0"},
	}

	// Actor options, on both a result buffer and a fold.
	for _, c := range []struct {
		name  string
		bytes int64
		actor sdk.ActorOptions
		code  sdk.DefinitionCode
	}{
		{"actor NumCPUs 0", 1024, withCPUs(0), invalidActor},
		{"actor NumCPUs -1", 1024, withCPUs(-1), invalidActor},
		{"actor NumCPUs NaN", 1024, withCPUs(math.NaN()), invalidActor},
		{"actor NumCPUs +Inf", 1024, withCPUs(math.Inf(1)), invalidActor},
		{"actor NumCPUs 0.0001", 1024, withCPUs(0.0001), ""},
		{"actor NumCPUs smallest positive", 1024, withCPUs(math.SmallestNonzeroFloat64), ""},
		{"actor Memory = MaxSerializedBytes", 4096, actor(4096), ""},
		{"actor Memory = MaxSerializedBytes-1", 4096, actor(4095), invalidActor},
		{"actor Memory 0", 4096, actor(0), invalidActor},
		{"actor 32 custom resources", 1024, withResources(customResources(32)), ""},
		{"actor 33 custom resources", 1024, withResources(customResources(33)), invalidActor},
		{"actor custom resource 0", 1024, withResources(map[string]float64{"r": 0}), invalidActor},
		{"actor custom resource empty name", 1024, withResources(map[string]float64{"": 1}), invalidActor},
		{"actor custom resource CPU (Ray's own)", 1024, withResources(map[string]float64{"CPU": 1}), invalidActor},
		{"actor scheduling SPREAD", 1024, withStrategy("SPREAD"), ""},
		{"actor scheduling DEFAULT", 1024, withStrategy("DEFAULT"), ""},
		{"actor scheduling empty", 1024, withStrategy(""), ""},
		{"actor scheduling RANDOM", 1024, withStrategy("RANDOM"), invalidActor},
		{"actor scheduling lower-case spread", 1024, withStrategy("spread"), invalidActor},
	} {
		cases = append(cases, actorCases(c.name, c.bytes, c.actor, c.code)...)
	}
	return cases
}

// TestDefinitionErrors runs every definition through sdk.Run: an invalid one
// fails with a *DefinitionError naming its code and node path before any
// leaf runs; a valid one runs.
func TestDefinitionErrors(t *testing.T) {
	t.Parallel()
	for _, c := range definitionCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, leaves := withCounter()
			err := c.run(ctx)
			if c.code == "" {
				if err != nil {
					t.Fatalf("a valid definition failed: %v", err)
				}
				if leaves.n.Load() == 0 {
					t.Fatal("a valid definition ran no leaf")
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalidDefinition) {
				t.Fatalf("errors.Is(err, ErrInvalidDefinition) is false for %v", err)
			}
			var de *sdk.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("want a *sdk.DefinitionError, got %T %v", err, err)
			}
			if de.Code != c.code || de.Path != c.path {
				t.Fatalf("got %s at %q, want %s at %q (%v)", de.Code, de.Path, c.code, c.path, err)
			}
			if !strings.Contains(err.Error(), "node "+c.path+":") || !strings.Contains(err.Error(), string(c.code)) {
				t.Fatalf("the message %q does not name the node and the code", err)
			}
			if n := leaves.n.Load(); n != 0 {
				t.Fatalf("%d leaves ran before the definition error", n)
			}
		})
	}
}

// A DefinitionError is also what Validate returns, with the same path.
func TestValidateMatchesRun(t *testing.T) {
	t.Parallel()
	f := sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc)).WithLimits(sdk.Limits{MaxConcurrency: 0}))
	var de *sdk.DefinitionError
	if err := sdkrt.Validate(sdkrt.Graph(f)); !errors.As(err, &de) || de.Path != "0.1" || de.Code != sdk.CodeInvalidLimits {
		t.Fatalf("Validate = %v", err)
	}
	if err := sdkrt.Validate(sdkrt.Graph(sdk.Step(Inc))); err != nil {
		t.Fatalf("Validate of a valid step = %v", err)
	}
}

func TestRequireRay(t *testing.T) {
	t.Parallel()
	ctx, leaves := withCounter()
	_, err := sdk.Run(ctx, sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc))), 5, sdk.RequireRay())
	if !errors.Is(err, sdk.ErrRayRequired) {
		t.Fatalf("want ErrRayRequired, got %v", err)
	}
	if n := leaves.n.Load(); n != 0 {
		t.Fatalf("%d leaves ran although a Ray engine was required", n)
	}
	// Without RequireRay the same flow runs locally.
	got, err := sdk.Run(ctx, sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Inc))), 5)
	if err != nil || len(got) != 5 || got[4] != 5 {
		t.Fatalf("local run = %v, %v", got, err)
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	f := sdk.Bind(Prefix, "bound:")
	ctx, leaves := withCounter()
	got, err := sdk.Run(ctx, sdk.Map(f), []string{"a", "b"})
	if err != nil || len(got) != 2 || got[0] != "bound:a" || got[1] != "bound:b" {
		t.Fatalf("got %q, %v", got, err)
	}
	if leaves.n.Load() != 2 {
		t.Fatalf("%d calls, want 2", leaves.n.Load())
	}
	s := sdkrt.Graph(f).Step
	if s.Bound != 1 || s.BoundValue != "bound:" || !s.Callable.Resolvable || !strings.HasSuffix(s.Callable.Name, "sdk_test.Prefix") {
		t.Fatalf("bound step = %+v", s)
	}
	// Binding another value makes another flow; the first keeps its value.
	other := sdk.Bind(Prefix, "other:")
	if got, _ := sdk.Run(context.Background(), other, "x"); got != "other:x" {
		t.Fatalf("got %q", got)
	}
	if got, _ := sdk.Run(context.Background(), f, "x"); got != "bound:x" {
		t.Fatalf("got %q", got)
	}
}

type receiver struct{ add int }

func (r receiver) Add(_ context.Context, v int) (int, error) { return v + r.add, nil }

func identity[T any](_ context.Context, v T) (T, error) { return v, nil }

// VarFunc is a package-level variable holding a function literal: a
// closure, not resolvable by name.
var VarFunc = func(_ context.Context, v int) (int, error) { return v, nil }

func TestCallableIdentity(t *testing.T) {
	t.Parallel()
	closure := func(_ context.Context, v int) (int, error) { return v, nil }
	for _, c := range []struct {
		name       string
		flow       sdk.Flow[int, int]
		resolvable bool
		suffix     string
	}{
		{"package-level function", sdk.Step(Inc), true, "/sdk_test.Inc"},
		{"closure", sdk.Step(closure), false, ".func"},
		{"package-level variable", sdk.Step(VarFunc), false, ".func"},
		{"method value", sdk.Step(receiver{add: 1}.Add), false, "-fm"},
		{"generic instantiation", sdk.Step(identity[int]), false, "]"},
	} {
		cl := sdkrt.Graph(c.flow).Step.Callable
		if cl.Resolvable != c.resolvable || !strings.Contains(cl.Name, c.suffix) {
			t.Errorf("%s: callable %+v, want resolvable=%v and a name containing %q", c.name, cl, c.resolvable, c.suffix)
		}
		// Runtime-only identity still runs locally.
		if got, err := sdk.Run(context.Background(), c.flow, 1); err != nil || got < 1 {
			t.Errorf("%s: local run = %v, %v", c.name, got, err)
		}
	}
	f := sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(okLimits), Add, 0, okFold)
	if r := sdkrt.Graph(f).Map.Fold.Reducer.Callable; !r.Resolvable || !strings.HasSuffix(r.Name, "/sdk_test.Add") {
		t.Errorf("reducer callable %+v", r)
	}
	if p := sdkrt.Graph(sdk.Step(Inc).WithOutputPreview(PreviewInt)).Step.Preview.Callable; !p.Resolvable || !strings.HasSuffix(p.Name, "/sdk_test.PreviewInt") {
		t.Errorf("preview callable %+v", p)
	}
}

// The bootstrap hook is process-wide, so only this test uses WithBootstrap.
var bootstrap struct {
	calls atomic.Int64
	done  atomic.Bool
}

// Bootstrapped fails unless the bootstrap hook finished before it ran.
func Bootstrapped(ctx context.Context, v int) (int, error) {
	count(ctx)
	if !bootstrap.done.Load() {
		return 0, errors.New("the leaf ran before the bootstrap hook finished")
	}
	return v, nil
}

func TestWithBootstrapRunsTheHookOncePerProcess(t *testing.T) {
	t.Parallel()
	// Each run of the test (-count) is a fresh process as far as the hook
	// is concerned: it counts this run's hook calls only.
	bootstrap.calls.Store(0)
	bootstrap.done.Store(false)
	t.Cleanup(sdk.ResetBootstrap)
	sdk.RegisterBootstrap(func(context.Context) error {
		bootstrap.calls.Add(1)
		time.Sleep(20 * time.Millisecond) // concurrent leaves must wait for it
		bootstrap.done.Store(true)
		return nil
	})
	f := sdk.Then(sdk.Step(Spread), sdk.Map(sdk.Step(Bootstrapped, sdk.WithBootstrap(), sdk.WithBootstrap())).
		WithLimits(sdk.Limits{MaxConcurrency: 16}))
	if !sdkrt.Graph(f).Children[1].Children[0].Step.Bootstrap {
		t.Fatal("the step is not marked Bootstrap")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			ctx, leaves := withCounter()
			if _, err := sdk.Run(ctx, f, 64); err != nil {
				errs <- err
			} else if leaves.n.Load() != 65 {
				errs <- fmt.Errorf("%d leaves ran, want 65", leaves.n.Load())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := sdk.Run(context.Background(), f, 3); err != nil {
		t.Fatal(err)
	}
	if n := bootstrap.calls.Load(); n != 1 {
		t.Fatalf("the bootstrap hook ran %d times, want once per process", n)
	}
}

// Reporter reports whether its progress report was accepted.
func Reporter(ctx context.Context, _ int) (bool, error) {
	return sdk.ReportProgress(ctx, 1, 2, "half way", map[string]any{"rows": 10}), nil
}

// A local run reports as a Ray run does: ReportProgress is accepted in a
// step under full, never in map items, never under terminal_only or
// disabled, never outside a run.
func TestReportProgressLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got, err := sdk.Run(ctx, sdk.Step(Reporter), 0); err != nil || !got {
		t.Fatalf("a local step's ReportProgress under full = %v, %v; want true", got, err)
	}
	for _, pol := range []string{"terminal_only", "disabled"} {
		if got, err := sdk.Run(ctx, sdk.Step(Reporter), 0, sdk.WithPlanOptions(sdk.WithReportingPolicy(sdk.ReportingPolicy(pol)))); err != nil || got {
			t.Fatalf("a local step's ReportProgress under %s = %v, %v; want false", pol, got, err)
		}
	}
	got, err := sdk.Run(ctx, sdk.Map(sdk.Step(Reporter)).WithLimits(okLimits), []int{1, 2, 3})
	if err != nil || len(got) != 3 || got[0] || got[1] || got[2] {
		t.Fatalf("local map items' ReportProgress = %v, %v; want all false", got, err)
	}
	if sdk.ReportProgress(ctx, 0, 0, "", nil) {
		t.Fatal("ReportProgress outside any run returned true")
	}
}
