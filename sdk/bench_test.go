package sdk_test

import (
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// planNodes64 is a flow whose effective plan has exactly 64 nodes, the
// largest plan kept in detailed form: six group segments (Inc, a two-step
// group and its collector, SumInts: 5 nodes each), six map segments
// (Spread, the map, its body and its result, SumInts: 5 each) and one fold
// segment (Spread, the map, its body and its fold result: 4). Its steps
// carry resources, Ray options, a runtime environment, labels and a preview
// so that every validation rule has work to do.
func planNodes64() sdk.Flow[int, int] {
	group := sdk.Chain3(
		sdk.Step(Inc, sdk.WithResources(sdk.Resources{NumCPUs: 0.5, Memory: 1 << 20})),
		sdk.Group(sdk.Step(Inc, sdk.WithRayOptions(sdk.RayOptions{"max_retries": 0})), sdk.Step(Inc).WithOutputPreview(PreviewInt)),
		sdk.Step(SumInts).Named("sum"),
	)
	mapped := sdk.Chain3(
		sdk.Step(Spread),
		sdk.Map(sdk.Step(Inc, sdk.WithRuntimeEnv(testEnvProfile))).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 100}),
		sdk.Step(SumInts),
	)
	f := group
	for i := range 11 {
		if i%2 == 0 {
			f = sdk.Then(f, mapped)
		} else {
			f = sdk.Then(f, group)
		}
	}
	return sdk.Then(f, sdk.Then(sdk.Step(Spread),
		sdk.Reduce(sdk.Map(sdk.Step(Inc)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 100}), Add, 0, okFold)))
}

func countNodes(n *flowgraph.Node) int {
	c := 1
	for _, ch := range n.Children {
		c += countNodes(ch)
	}
	return c
}

func TestPlanNodes64(t *testing.T) {
	t.Parallel()
	f := planNodes64()
	m, err := sdk.Materialize(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Plan.Nodes); n != 64 || m.Plan.Snapshot != nil {
		t.Fatalf("the plan has %d nodes (overflow: %v), want exactly 64 in detailed form", n, m.Plan.Snapshot != nil)
	}
	t.Logf("64 plan nodes from %d graph nodes; %d canonical bytes", countNodes(sdkrt.Graph(f)), len(m.Canonical))
}

// BenchmarkValidate64 validates the graph of a 64-plan-node flow: the
// definition checks Run performs before materializing.
func BenchmarkValidate64(b *testing.B) {
	g := sdkrt.Graph(planNodes64())
	b.ReportAllocs()
	for b.Loop() {
		if err := sdkrt.Validate(g); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMaterialize64 materializes the same flow: validation, the
// detailed plan, its canonical bytes, sha256 fingerprint and the strategy
// selection.
func BenchmarkMaterialize64(b *testing.B) {
	f := planNodes64()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sdk.Materialize(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLocalMapProgress is the cost of local progress: a 10,000-item
// map of no-op leaves run by sdk.Run under each reporting policy (full
// encodes and ingests one fan-out event per finished item, as on Ray).
func BenchmarkLocalMapProgress(b *testing.B) {
	const items = 10_000
	in := make([]int, items)
	f := sdk.Map(sdk.Step(Inc)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: items})
	for _, pol := range []string{"disabled", "terminal_only", "full"} {
		b.Run(pol, func(b *testing.B) {
			for b.Loop() {
				if _, err := sdk.Run(b.Context(), f, in, sdk.WithPlanOptions(sdk.WithReportingPolicy(sdk.ReportingPolicy(pol)))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
		})
	}
}

// BenchmarkLocalStepsProgress is the per-run cost of local progress for
// plain steps: a chain of 8 no-op steps, each an in-process leaf with its
// own producer (started, preview, completed, report events), by policy.
func BenchmarkLocalStepsProgress(b *testing.B) {
	steps := make([]sdk.Flow[int, int], 8)
	for i := range steps {
		steps[i] = sdk.Step(Inc)
	}
	f := sdk.ChainOf(steps...)
	for _, pol := range []string{"disabled", "full"} {
		b.Run(pol, func(b *testing.B) {
			for b.Loop() {
				if _, err := sdk.Run(b.Context(), f, 0, sdk.WithPlanOptions(sdk.WithReportingPolicy(sdk.ReportingPolicy(pol)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
