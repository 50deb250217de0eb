package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Engine executes a materialized workflow. The local engine is built in;
// the Ray engine (engine/ray) implements this interface too.
type Engine interface {
	// Name identifies the engine ("local", "ray").
	Name() string
	// IsRay reports whether the engine runs leaves on Ray.
	IsRay() bool
	// Run executes m's graph on input. It is called only after m was
	// materialized and its strategy selected.
	Run(ctx context.Context, m *Materialized, input any) (any, error)
}

// RunOption configures Run.
type RunOption func(*runConfig)

type runConfig struct {
	engine      Engine
	requireRay  bool
	sequential  bool
	noRoundTrip bool
	plan        *Materialized
	planOpts    []MaterializeOption
	identity    *RunIdentity
}

// WithEngine runs the flow on e (for example a Ray engine).
func WithEngine(e Engine) RunOption { return func(c *runConfig) { c.engine = e } }

// RequireRay makes Run fail with ErrRayRequired instead of running locally
// when no Ray engine is configured.
func RequireRay() RunOption { return func(c *runConfig) { c.requireRay = true } }

// Sequential runs a local flow one leaf at a time, in order (debugging).
func Sequential() RunOption { return func(c *runConfig) { c.sequential = true } }

// WithoutCodecRoundTrip skips, in a local run, the value codec round trip
// that makes it predict a Ray run: by default every value crossing a step
// boundary (the run's input where a step receives it, each step's output,
// a bound value per call, a fold's accumulator) is encoded and decoded
// into a fresh value of its declared type, exactly as on Ray, so what the
// codec cannot carry fails locally too (a *ValueError naming the node) and
// no step shares mutable state with another. Without it a local run is
// faster (see engine/local's BenchmarkCodecRoundTrip) but may succeed
// where Ray fails. Ray runs always encode.
func WithoutCodecRoundTrip() RunOption { return func(c *runConfig) { c.noRoundTrip = true } }

// WithPlan runs an already materialized plan of the same flow (to record
// its fingerprint first, for example) instead of materializing again.
func WithPlan(m *Materialized) RunOption { return func(c *runConfig) { c.plan = m } }

// WithPlanOptions passes materialization options (strategy, reporting
// policy, trust identity) through Run.
func WithPlanOptions(opts ...MaterializeOption) RunOption {
	return func(c *runConfig) { c.planOpts = append(c.planOpts, opts...) }
}

// PanicError is a leaf that panicked.
type PanicError = flowgraph.PanicError

// Run materializes f (validating it and selecting a strategy before any
// effect), then runs it on in and returns its result. Without WithEngine
// it runs in this process with goroutines.
func Run[In, Out any](ctx context.Context, f Flow[In, Out], in In, opts ...RunOption) (Out, error) {
	var zero Out
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	if f.node == nil {
		return zero, &DefinitionError{Path: "0", Code: CodeEmpty, Msg: "the flow is empty (a zero sdk.Flow)"}
	}
	if cfg.identity != nil {
		if err := cfg.identity.Validate(); err != nil {
			return zero, err
		}
	}
	if cfg.requireRay && (cfg.engine == nil || !cfg.engine.IsRay()) {
		return zero, ErrRayRequired
	}
	m := cfg.plan
	if m == nil {
		popts := cfg.planOpts
		if cfg.engine != nil && cfg.engine.IsRay() {
			popts = append([]MaterializeOption{ForRay()}, popts...)
		}
		var err error
		if m, err = materialize(f.node, popts); err != nil {
			return zero, err
		}
	} else if m.Bindings == nil || m.Bindings.Root != f.node {
		return zero, errors.New("rayflow: WithPlan: the plan was materialized from a different flow")
	}
	if err := checkEngine(m, cfg.engine, cfg.requireRay); err != nil {
		return zero, err
	}
	var (
		out any
		err error
	)
	if cfg.engine != nil {
		out, err = cfg.engine.Run(ctx, m, in)
	} else {
		// Local runs have no progress session, whatever the caller's
		// context carries.
		ctx = context.WithValue(ctx, reporterKey{}, nil)
		out, err = local.Run(ctx, f.node, in, local.Options{Sequential: cfg.sequential, NoCodecRoundTrip: cfg.noRoundTrip})
	}
	if err = canceledShape(ctx, err); err != nil {
		return zero, err
	}
	return DecodeResult[Out](out)
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
