// Command fanout is the seed's "Complete Dynamic Fan-Out": build a list of
// items, map an expensive calculation over them in a bounded window, and
// summarize. The result JSON is the last line on stdout.
//
//	go run ./examples/fanout -count 20
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"

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

func main() {
	count := flag.Int("count", 20, "number of items to fan out")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	res, err := sdk.Run(context.Background(), Workflow, *count)
	if err != nil {
		log.Error("fan-out failed", "err", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}
