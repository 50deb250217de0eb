package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/internal/inproc"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Engine executes a materialized workflow. The in-process engine is built
// in (a run without WithEngine uses it, through this same interface); the
// Ray engine (engine/ray) implements it too. An application passes an
// engine to WithEngine; it does not implement one: an engine executes the
// plan's compiled program, which it reaches (with the registered leaves)
// through this module's internal packages, so engines live in this module.
type Engine interface {
	// Name identifies the engine ("local", "ray").
	Name() string
	// Runs reports whether the engine executes plans selected for
	// strategy s: the in-process engine runs StrategyLocal, the Ray engine
	// StrategyDynamicTasks. Run materializes for the strategies its
	// engine runs (StrategyDynamicTasks: as ForRay does), refuses a plan
	// selected for another one (*StrategyMismatchError), and RequireRay
	// asks for an engine that runs StrategyDynamicTasks.
	Runs(s Strategy) bool
	// Run executes one run. It is called only after the plan was
	// materialized and its strategy selected, with the run's identity and
	// its progress handle (see internal/sdkrt's RunSpec).
	Run(ctx context.Context, spec sdkrt.RunSpec) (any, error)
}

// onRay reports whether e runs plans on Ray (nil: the in-process engine).
func onRay(e Engine) bool { return e != nil && e.Runs(StrategyDynamicTasks) }

// inProcess is the built-in engine: the run's program executes in this
// process with goroutines (internal/inproc, the executor behind
// engine/local), under Sequential and
// WithoutCodecRoundTrip.
type inProcess struct {
	sequential, noRoundTrip bool
}

var _ Engine = inProcess{}

// Name is "local".
func (inProcess) Name() string { return "local" }

// Runs is true for StrategyLocal only.
func (inProcess) Runs(s Strategy) bool { return s == StrategyLocal }

// Run executes the plan's program in this process. The leaves report to
// the run's progress only, whatever the caller's context carries.
func (e inProcess) Run(ctx context.Context, spec sdkrt.RunSpec) (any, error) {
	return inproc.RunProgram(progress.WithReporter(ctx, nil), spec.Bindings.Program, spec.Input, inproc.Options{
		Sequential: e.sequential, NoCodecRoundTrip: e.noRoundTrip, Progress: spec.Progress, Preview: localPreview})
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
	sink        progress.Sink
	flushEvery  time.Duration
	profile     limits.Profile
	onStart     func(RunIdentity)
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

// WithProgress publishes the run's progress to sink, on every engine and
// under the plan's reporting policy (WithReportingPolicy): under full, the
// summary v3, topology and node detail at most once per flush interval
// (default 1 s, WithProgressInterval) while they change, then once with
// the terminal state; under terminal_only and disabled, the terminal
// summary once. A sink error wrapping progress.ErrStaleFence cancels the
// run, and Run returns that error. Without WithProgress the run still
// reports (sdk.ReportProgress accepts values under full) but publishes
// nothing.
func WithProgress(sink progress.Sink) RunOption { return func(c *runConfig) { c.sink = sink } }

// WithProgressInterval sets the least time between two publications of a
// running run (d ≤ 0: progress.DefaultFlushInterval, 1 s).
func WithProgressInterval(d time.Duration) RunOption { return func(c *runConfig) { c.flushEvery = d } }

// WithProgressLimits bounds the run's retained progress state under full
// reporting: the zero value is limits.ProfileV1; limits.ProfileTerminalV1
// (512 nodes, 2,048 edges) or any profile that narrows v1 is accepted.
func WithProgressLimits(p limits.Profile) RunOption { return func(c *runConfig) { c.profile = p } }

// OnRunStart calls f with the run's identity (the one given with
// WithRunIdentity, else the fresh one Run made) once the plan is
// materialized and before any leaf runs: the way to learn a fresh run's
// id, to log it or to find its progress.
func OnRunStart(f func(RunIdentity)) RunOption { return func(c *runConfig) { c.onStart = f } }

// PanicError is a leaf that panicked.
type PanicError = flowgraph.PanicError

// Run materializes f (validating it and selecting a strategy before any
// effect), then runs it on in and returns its result. Without WithEngine
// it runs in this process with goroutines. Every run has an identity
// (WithRunIdentity, else NewRunIdentity; see OnRunStart) and reports its
// progress under the plan's reporting policy (see WithProgress).
func Run[In, Out any](ctx context.Context, f Flow[In, Out], in In, opts ...RunOption) (Out, error) {
	var zero Out
	if f.node == nil {
		return zero, &DefinitionError{Path: program.RootID, Code: CodeEmpty, Msg: "the flow is empty (a zero sdk.Flow)"}
	}
	out, err := run(ctx, f.node, nil, in, opts)
	if err != nil {
		return zero, err
	}
	return sdkrt.DecodeResult[Out](out)
}

// runPlan runs an already materialized plan on input, as Run does (the
// same identity, progress and engine options; WithPlan and WithPlanOptions
// do not apply), and returns the engine's raw result (internal/sdkhost's
// RunPlan: for callers that hold a plan and not a typed flow).
func runPlan(ctx context.Context, m *Materialized, input any, opts []RunOption) (any, error) {
	if m == nil || m.bindings == nil || m.bindings.Program == nil || m.Selection == nil {
		return nil, sdkrt.ErrNotMaterialized
	}
	return run(ctx, nil, m, input, opts)
}

func run(ctx context.Context, root *flowgraph.Node, m *Materialized, in any, opts []RunOption) (_ any, err error) {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	id := NewRunIdentity()
	if cfg.identity != nil {
		if id, err = sdkrt.RunIdentity(*cfg.identity); err != nil {
			return nil, err
		}
	}
	if cfg.requireRay && !onRay(cfg.engine) {
		return nil, ErrRayRequired
	}
	if m == nil && cfg.plan != nil { // RunPlan's own plan wins over WithPlan
		m = cfg.plan
		if m.bindings == nil || !m.bindings.Source(root) {
			return nil, errors.New("rayflow: WithPlan: the plan was materialized from a different flow")
		}
	}
	if m == nil {
		popts := cfg.planOpts
		if onRay(cfg.engine) {
			popts = append([]MaterializeOption{ForRay()}, popts...)
		}
		var err error
		if m, err = materialize(root, popts); err != nil {
			return nil, err
		}
	}
	if err := checkEngine(m, cfg.engine, cfg.requireRay); err != nil {
		return nil, err
	}

	ctx, endSpan := traceRun(ctx, m, id, cfg.engine)
	defer func() { endSpan(err) }()
	ctx = sdkrt.WithIdentity(ctx, id)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	prun, err := progress.Start(ctx, progress.RunConfig{
		Identity: id, Policy: m.ReportingPolicy(), Program: m.bindings.Program,
		Plan: progress.PlanInfo{Fingerprint: m.Fingerprint, DefinitionName: m.definitionName(),
			DefinitionRevision: m.DefinitionRevision, SelectedStrategy: m.Selection.SelectedStrategy},
		Profile: cfg.profile, Sink: cfg.sink, FlushInterval: cfg.flushEvery, OnStale: func(err error) { cancel(err) },
		// A local run without a sink: nothing reads the collected state.
		Discard: cfg.sink == nil && cfg.engine == nil,
	})
	if err != nil {
		return nil, fmt.Errorf("rayflow: progress: %w", err)
	}
	if cfg.onStart != nil {
		cfg.onStart(id)
	}
	engine := cfg.engine
	if engine == nil {
		engine = inProcess{sequential: cfg.sequential, noRoundTrip: cfg.noRoundTrip}
	}
	out, err := engine.Run(ctx, sdkrt.RunSpec{Plan: m.Plan, Selection: m.Selection, Bindings: m.bindings,
		Input: in, Identity: id, Progress: prun})
	ferr := prun.Finish(ctx, err)
	if stale := prun.Err(); stale != nil {
		return nil, stale
	}
	if err = canceledShape(ctx, err); err != nil {
		return nil, err
	}
	if ferr != nil {
		slog.WarnContext(ctx, "rayflow: the final progress publication failed", "run_id", id.RunID, "err", ferr)
	}
	return out, nil
}

// localPreview runs a step's projector in process (no redaction policy:
// the default patterns apply, as on Ray).
func localPreview(p *flowgraph.Preview, result any) progress.PreviewEnvelope {
	return buildPreview(p, result, nil)
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
