// Package sdk is how a Go program defines and runs a rayflow workflow: typed
// steps composed into chains, groups and bounded maps, materialized into an
// immutable, fingerprinted effective plan, then run in this process or on a
// Ray cluster.
//
// Features:
//
//   - Typed builders. [Step] wraps func(context.Context, In) (Out, error);
//     [Bind] adds a bound value (invocation data, never in the plan);
//     [Then] and [Chain3]…[Chain6] chain flows whose types must line up at
//     compile time (nest them for longer chains: chains are flattened, so
//     the plan is the same), [ChainOf] chains any number of same-typed
//     flows; [Group] runs homogeneous branches into []Out and [Group2],
//     [Group3] differently typed ones into tuples. [Flow.Named] gives a
//     node its display label (never part of the fingerprint).
//   - Bounded fan-out. [Map] over a slice or [MapSeq] over an iter.Seq,
//     with [Flow.WithLimits] (admission window, item cap, cancel deadline),
//     [Flow.WithResultBuffer], and [Reduce], a strict input-order fold.
//     [Flow.WithItemBatching] runs up to K items of a map of tiny steps
//     per task, keeping every per-item guarantee (order, MaxItems and the
//     window in items, the failing item named, progress per item,
//     cancellation within CancelTimeout); [Flow.WithAutoBatching] lets the
//     executor choose each task's batch size, 1 … a cap, from the item
//     durations it observes.
//   - Per-step Ray options ([WithResources], [WithRayOptions]), named
//     runtime environments ([RegisterRuntimeEnv], [WithRuntimeEnv]), a
//     worker bootstrap hook ([RegisterBootstrap], [WithBootstrap]) and
//     output previews ([Flow.WithOutputPreview]).
//   - Definition errors before effects: an invalid definition fails with a
//     [*DefinitionError] naming its code and plan node path ("0.1",
//     "0.2.g0", "0.3.m*") before any leaf runs; leaf errors come back as a
//     [*StepError] that errors.Is and errors.As see through.
//   - A canonical effective plan: [Materialize] returns the plan, its
//     sha256 fingerprint and the strategy selection; [Run] materializes
//     too, so nothing runs until the plan is fixed.
//
// Values that cross a step boundary (inputs, outputs, bound values, map
// items, fold accumulators) go through the value codec ([DefaultCodec],
// JSON) on Ray, so their types must survive it: funcs, channels, iter.Seq,
// complex numbers, unsafe pointers, unexported fields (which JSON would
// drop), interfaces other than any, and map keys JSON cannot write are
// refused when the flow is built, as a [*DefinitionError] of code
// [CodeUnencodableValue] naming the node and the type path
// ("Out.Items[].price: unexported field"); what only a value can show (a
// non-finite float, a func behind an any) is refused at run time as a
// [*ValueError] naming the node. Local runs pass every such value through
// the same codec, so they succeed and fail as a Ray run would;
// [WithoutCodecRoundTrip] trades that for speed.
//
// Steps should be package-level functions, built into flows held in
// package-level variables: a step's Go symbol is its callable identity,
// which a Ray leaf process running the same binary resolves by name.
// Closures and method values run locally but have runtime-only identity.
//
// Non-goal: sdk is not a durability layer. It does not checkpoint or resume
// individual steps; the durable outer task is the retry boundary, and a
// retry reruns the workflow from its entry node. Make steps with external
// side effects idempotent.
//
// # A complete workflow
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/rayflow/rayflow/sdk"
//	)
//
//	func BuildItems(_ context.Context, n int) ([]int, error) {
//		items := make([]int, n)
//		for i := range items {
//			items[i] = i
//		}
//		return items, nil
//	}
//
//	func Square(_ context.Context, v int) (int, error) { return v * v, nil }
//
//	func Total(_ context.Context, vs []int) (int, error) {
//		t := 0
//		for _, v := range vs {
//			t += v
//		}
//		return t, nil
//	}
//
//	var Pipeline = sdk.Chain3(
//		sdk.Step(BuildItems),
//		sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 16, MaxItems: 10_000}),
//		sdk.Step(Total),
//	)
//
//	func main() {
//		out, err := sdk.Run(context.Background(), Pipeline, 20)
//		fmt.Println(out, err) // 2470 <nil>
//	}
//
// # Local and Ray engines
//
// [Run] without [WithEngine] runs the flow in this process with goroutines
// (the built-in in-process [Engine], package engine/local): the "local" strategy, with ordered results,
// admission windows, item caps, values through the codec, bounded
// cancellation ([CanceledError]) and the same progress exactly as on Ray.
// Result buffers and fold byte limits are Ray-only. [Sequential] runs one
// leaf at a time for debugging.
//
// [WithEngine] with a Ray engine (one that Runs [StrategyDynamicTasks]) runs the
// flow on Ray: the plan is materialized for Ray and the "auto" strategy
// selects "dynamic_tasks". [WithPlanOptions] passes [WithStrategy] to
// request a strategy explicitly; requesting one the plan is not eligible
// for fails with a [*SelectionError] before any effect. [RequireRay] makes
// Run fail with [ErrRayRequired] instead of running locally when no Ray
// engine is configured. A plan given with [WithPlan] runs only where its
// selected strategy says: a "local" plan with a Ray engine or RequireRay,
// or a "dynamic_tasks" plan without a Ray engine, fails with a
// [*StrategyMismatchError] before any leaf runs.
//
// # Run identity and progress
//
// Every run has a [RunIdentity] (task execution, attempt, execution
// generation, run id): the one given with [WithRunIdentity] (the durable
// runtime passes each attempt's), else a fresh one from [NewRunIdentity];
// [OnRunStart] tells the caller which, before any leaf runs. The engine
// receives it with the run and every progress event carries it; a step
// reads it from its context with [AttemptFrom] (which durable attempt
// runs it).
//
// Progress is per run and the same on every engine, under the plan's
// reporting policy ([WithReportingPolicy]; [Materialized.ReportingPolicy]):
// under "full" each step outside a map reports STARTED, COMPLETED or
// FAILED, [ReportProgress] values and its output preview, and each map its
// fan-out counters; "terminal_only" and "disabled" keep only a terminal
// summary. [WithProgress] hands a progress.Sink the run's publications:
// the summary v3, topology and node detail at most once per interval
// ([WithProgressInterval], default 1 s) while they change, then once with
// the terminal state. A sink that reports a stale fence
// (progress.ErrStaleFence) cancels the run.
//
// # Errors across processes
//
// A step's error reaches the caller of a Ray run with its whole chain:
// every wrapped message, so Error() reads as locally. Register the error
// types (with [RegisterErrorType]) and the sentinel values (with
// [RegisterSentinel]) that callers test with errors.As and errors.Is, at
// package initialization; they come back as themselves at their position
// in the chain.
//
// # Code identity and retry pinning
//
// A plan's build revision (definition.build_revision, part of its
// fingerprint) is, in this order: RAYFLOW_BUILD_REVISION (or GIT_COMMIT,
// SOURCE_VERSION, K_REVISION) as "environment:<VAR>:<value>", stable
// across rebuilds; the Go toolchain's VCS stamp of an unmodified checkout
// as "vcs:<revision>", stable across rebuilds of that commit; otherwise
// "executable:sha256:<hex>", the digest of the running executable,
// computed once per process. The digest follows every code change (a
// changed step body changes the fingerprint) and is stable only for the
// same bytes: a retry by the same binary, or a byte-identical rebuild,
// reproduces the fingerprint; any other build does not, so a pinned retry
// fails closed. Every Ray leaf process checks at its start that its own
// digest is the plan's and refuses to run otherwise. Reusable strategies
// treat a digest as unresolved code identity (UNRESOLVED_CODE_IDENTITY).
//
// # Dependencies
//
// sdk imports no engine package: its built-in in-process engine is the
// executor internal/inproc (engine/local is that executor's public face)
// behind the same Engine interface as any other, with the engine-neutral
// progress package. The Ray engine lives in its own package, linked only into programs that import it, so a program
// that imports only sdk builds and runs workflows locally without pulling
// CUE's evaluator, pgx, Kubernetes or Ray client packages (deps_test.go
// checks this with go list -deps and by building such a program in a
// separate module).
package sdk
