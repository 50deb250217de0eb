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

	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/sdk"
)

func main() {
	count := flag.Int("count", 20, "number of items to fan out")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx := context.Background()

	// Materialize first: the plan, its fingerprint and the strategy are
	// fixed before any leaf runs.
	m, err := sdk.Materialize(workflow.Workflow)
	if err != nil {
		log.Error("invalid workflow", "err", err)
		os.Exit(1)
	}
	fmt.Printf("plan fingerprint: %s\n", m.Fingerprint)
	fmt.Printf("plan nodes:       %d (%s topology)\n", len(m.Plan.Nodes), m.Plan.Topology.Class)
	fmt.Printf("strategy:         %s (requested %s, eligible %v, reporting %s)\n",
		m.Selection.SelectedStrategy, m.Selection.RequestedPolicy, m.Selection.EligibleStrategies, m.Selection.ReportingPolicy)

	res, err := sdk.Run(ctx, workflow.Workflow, *count, sdk.WithPlan(m))
	if err != nil {
		log.Error("fan-out failed", "err", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}
