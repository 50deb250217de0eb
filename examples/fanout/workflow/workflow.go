// Package fanoutflow is the fan-out workflow of examples/fanout, importable so
// that tools (rayflow plan, the Ray leaf process) can find it by name.
package fanoutflow

import (
	"context"

	"github.com/rayflow/rayflow/sdk"
)

// Calculation is one independently expensive operation's result.
type Calculation struct {
	Value    int `json:"value"`
	Checksum int `json:"checksum"`
}

// Summary is the workflow's result.
type Summary struct {
	Items    int `json:"items"`
	Checksum int `json:"checksum"`
}

// BuildItems returns 0..count-1.
func BuildItems(_ context.Context, count int) ([]int, error) {
	items := make([]int, count)
	for i := range items {
		items[i] = i
	}
	return items, nil
}

// Calculate stands in for one expensive API or compute operation.
func Calculate(_ context.Context, value int) (Calculation, error) {
	sum := 0
	for n := range 500_000 {
		sum += (value * n) % 97
	}
	return Calculation{Value: value, Checksum: sum}, nil
}

// Summarize folds the ordered results.
func Summarize(_ context.Context, results []Calculation) (Summary, error) {
	s := Summary{Items: len(results)}
	for _, r := range results {
		s.Checksum += r.Checksum
	}
	return s, nil
}

// Workflow is the fan-out: build_items → map(calculate) → summarize.
var Workflow = sdk.Chain3(
	sdk.Step(BuildItems),
	sdk.Map(sdk.Step(Calculate, sdk.WithResources(sdk.Resources{NumCPUs: 0.25}))).
		WithLimits(sdk.Limits{MaxConcurrency: 16, MaxItems: 10_000}),
	sdk.Step(Summarize),
)

func init() { sdk.RegisterFlow("fanout", Workflow) }
