package progress_test

import (
	"context"
	"fmt"
	"log"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// LoadOrders reports its own progress; the items of a bounded map do not
// (their map node counts them).
func LoadOrders(ctx context.Context, n int) ([]int, error) {
	orders := make([]int, n)
	for i := range orders {
		orders[i] = 100 + i
		sdk.ReportProgress(ctx, float64(i+1), float64(n), "loading orders", map[string]any{"loaded": i + 1})
	}
	return orders, nil
}

func Ship(_ context.Context, order int) (int, error) { return order, nil }

var shipping = sdk.Then(
	sdk.Step(LoadOrders),
	sdk.Map(sdk.Step(Ship)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100}),
)

// A sink receives the run's bounded progress while it changes and once
// more at the end (Final). This one prints the final node states: the
// step's last report and the map's item counters. A sink that stores the
// publications (progress/pgstore) makes them readable by others.
func ExampleSinkFunc() {
	sink := progress.SinkFunc(func(_ context.Context, p *progress.Publication) error {
		if !p.Final {
			return nil
		}
		fmt.Printf("run %s: %d of %d nodes succeeded\n", p.Summary.State,
			p.Summary.NodeCounts.Succeeded, p.Summary.NodeCounts.Discovered)
		for _, d := range p.Details {
			switch {
			case d.Fanout != nil:
				fmt.Printf("%s %s: %d items done\n", d.NodeID, d.State, d.Fanout.CompletedItems)
			case d.Progress != nil:
				fmt.Printf("%s %s: %s %v/%v (%v%%)\n", d.NodeID, d.State, *d.Progress.Message,
					d.Progress.Current, d.Progress.Total, d.Progress.Percent)
			}
		}
		return nil
	})
	shipped, err := sdk.Run(context.Background(), shipping, 3, sdk.WithProgress(sink))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(shipped)
	// Output:
	// run SUCCEEDED: 2 of 2 nodes succeeded
	// 0.0 SUCCEEDED: loading orders 3/3 (100%)
	// 0.1 SUCCEEDED: 3 items done
	// [100 101 102]
}
