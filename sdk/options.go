package sdk

import (
	"context"
	"fmt"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// StepOption configures a step (Step, Bind): WithResources, WithRayOptions,
// WithRuntimeEnv, WithBootstrap, CodeVersion.
type StepOption struct{ apply func(*flowgraph.Node) }

// Resources are per-leaf Ray resource requests (NumCPUs, NumGPUs, Memory
// in bytes, AcceleratorType, Custom); zero fields are unset. It is the
// graph's own type: the step keeps exactly what is given.
type Resources = flowgraph.Resources

// RayOptions are Ray task options of a leaf, keyed as in Ray
// ("max_retries", "scheduling_strategy", ...). Only the keys Ray tasks
// accept are allowed; values equal to Ray's defaults are dropped from the
// plan. Resource keys are better set with WithResources.
type RayOptions map[string]any

// WithResources sets the leaf's resource requests.
func WithResources(r Resources) StepOption {
	return StepOption{func(n *flowgraph.Node) {
		// A copy per step: one option may be applied to many steps, at
		// the same time.
		res := r
		res.Custom = cloneMap(r.Custom)
		n.Step.Resources = res
	}}
}

// WithRayOptions sets Ray task options of the leaf.
func WithRayOptions(o RayOptions) StepOption {
	return StepOption{func(n *flowgraph.Node) { n.Step.RayOptions = cloneMap(o) }}
}

// WithRuntimeEnv runs the leaf in a named runtime environment profile
// registered with RegisterRuntimeEnv; the name is resolved once, when the
// flow is materialized.
func WithRuntimeEnv(profile string) StepOption {
	return StepOption{func(n *flowgraph.Node) { n.Step.RuntimeEnv = profile }}
}

// WithBootstrap runs the application's worker-start hook (RegisterBootstrap)
// once per leaf process before this step, like the seed's django=True.
func WithBootstrap() StepOption {
	return StepOption{func(n *flowgraph.Node) {
		if n.Step.Bootstrap {
			return
		}
		n.Step.Bootstrap = true
		n.Step.Invoke = withBootstrap(n.Step.Invoke)
		if v := n.Step.Values; v != nil && v.Invoke != nil {
			c := *v
			c.Invoke = withBootstrap(v.Invoke)
			n.Step.Values = &c
		}
	}}
}

func withBootstrap(invoke func(context.Context, any) (any, error)) func(context.Context, any) (any, error) {
	return func(ctx context.Context, in any) (any, error) {
		if err := runBootstrap(ctx); err != nil {
			return nil, err
		}
		return invoke(ctx, in)
	}
}

// MaxCodeVersionBytes caps a declared code version (CodeVersion).
const MaxCodeVersionBytes = 128

// CodeVersion declares the step's code version: 1 … MaxCodeVersionBytes printable
// ASCII characters without spaces (another value is an
// INVALID_CODE_VERSION definition error). It is part of the plan
// (code_version of the step's node, fingerprinted; absent when
// undeclared). A resumable map (WithResume) keeps its items' results
// across builds while the versions of the steps its items depend on are
// unchanged: bump the version when the step's results change.
func CodeVersion(v string) StepOption {
	return StepOption{func(n *flowgraph.Node) {
		n.Step.Version = v
		if err := checkVersion(v); err != nil && n.Err == nil {
			n.Err = err
		}
	}}
}

// checkVersion refuses a declared code version the plan cannot carry.
func checkVersion(v string) error {
	ok := len(v) >= 1 && len(v) <= MaxCodeVersionBytes
	for i := 0; ok && i < len(v); i++ {
		ok = v[i] >= '!' && v[i] <= '~'
	}
	if !ok {
		return &DefinitionError{Code: CodeInvalidVersion, Msg: fmt.Sprintf("CodeVersion needs 1 to %d printable ASCII characters without spaces, got %q", MaxCodeVersionBytes, v)}
	}
	return nil
}

// WithOutputPreview projects a step's successful result into one small
// JSON value for operators (full-reporting runs only, on every engine).
// project should be a package-level function.
func (f Flow[In, Out]) WithOutputPreview(project func(Out) (any, error)) Flow[In, Out] {
	n := f.nodeOf().Clone()
	if n.Kind != flowgraph.KindStep {
		n.Err = &DefinitionError{Code: CodeNotAStep, Msg: "WithOutputPreview applies to steps only"}
		return Flow[In, Out]{n}
	}
	id := identify(project)
	register(id, nil)
	registerPreview(id, project)
	n.Step.Preview = &flowgraph.Preview{Callable: id, Project: func(v any) (any, error) {
		o, err := as[Out](v)
		if err != nil {
			return nil, err
		}
		return project(o)
	}}
	return Flow[In, Out]{n}
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
