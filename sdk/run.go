package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Engine executes a validated workflow graph. The local engine is built
// in; the Ray engine (engine/ray) implements this interface too.
type Engine interface {
	// Name identifies the engine ("local", "ray").
	Name() string
	// IsRay reports whether the engine runs leaves on Ray.
	IsRay() bool
	Run(ctx context.Context, root *flowgraph.Node, input any) (any, error)
}

// RunOption configures Run.
type RunOption func(*runConfig)

type runConfig struct {
	engine     Engine
	requireRay bool
	sequential bool
}

// WithEngine runs the flow on e (for example a Ray engine).
func WithEngine(e Engine) RunOption { return func(c *runConfig) { c.engine = e } }

// RequireRay makes Run fail with ErrRayRequired instead of running locally
// when no Ray engine is configured.
func RequireRay() RunOption { return func(c *runConfig) { c.requireRay = true } }

// Sequential runs a local flow one leaf at a time, in order (debugging).
func Sequential() RunOption { return func(c *runConfig) { c.sequential = true } }

// PanicError is a leaf that panicked.
type PanicError = flowgraph.PanicError

// Run validates f, then runs it on in and returns its result. Without
// WithEngine it runs in this process (goroutines); an invalid definition
// fails with a *DefinitionError before any leaf runs.
func Run[In, Out any](ctx context.Context, f Flow[In, Out], in In, opts ...RunOption) (Out, error) {
	var zero Out
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	if f.node == nil {
		return zero, &DefinitionError{Path: "0", Code: CodeEmpty, Msg: "the flow is empty (a zero sdk.Flow)"}
	}
	if err := Validate(f.node); err != nil {
		return zero, err
	}
	var (
		out any
		err error
	)
	switch {
	case cfg.engine != nil:
		if cfg.requireRay && !cfg.engine.IsRay() {
			return zero, ErrRayRequired
		}
		out, err = cfg.engine.Run(ctx, f.node, in)
	case cfg.requireRay:
		return zero, ErrRayRequired
	default:
		out, err = local.Run(ctx, f.node, in, local.Options{Sequential: cfg.sequential})
	}
	if err != nil {
		return zero, err
	}
	return as[Out](out)
}

// bootstrap is the application's worker-start hook (RegisterBootstrap).
var bootstrap struct {
	sync.Mutex
	hook func(context.Context) error
	once sync.Once
	err  error
}

// RegisterBootstrap sets the hook that runs once per process before the
// first step marked WithBootstrap (on Ray: once per leaf process).
func RegisterBootstrap(hook func(context.Context) error) {
	bootstrap.Lock()
	defer bootstrap.Unlock()
	bootstrap.hook = hook
}

// runBootstrap runs the hook once; later calls return its first result.
func runBootstrap(ctx context.Context) error {
	bootstrap.once.Do(func() {
		bootstrap.Lock()
		hook := bootstrap.hook
		bootstrap.Unlock()
		if hook == nil {
			bootstrap.err = errors.New("rayflow: a step needs WithBootstrap but no hook is registered (sdk.RegisterBootstrap)")
			return
		}
		if err := hook(ctx); err != nil {
			bootstrap.err = fmt.Errorf("rayflow: bootstrap hook: %w", err)
		}
	})
	return bootstrap.err
}
