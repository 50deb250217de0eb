// Command fanout is the seed's "Complete Dynamic Fan-Out": build a list of
// items, map an expensive calculation over them in a bounded window, and
// summarize. The result JSON is the last line on stdout.
//
//	go run ./examples/fanout -count 20
//	go run ./examples/fanout -count 20 -ray local            # a private local Ray cluster
//	go run ./examples/fanout -count 20 -ray 127.0.0.1:6390   # the cluster of make ray-up
//	rayflow rayjob submit --exe "$PWD/bin/fanout" --input 20 fanout  # as a Ray Job
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

func main() {
	// On Ray, every worker runs the leaves in this binary started in leaf
	// mode; this returns at once otherwise.
	rayengine.ServeLeafIfRequested()
	// As a Ray Job's entrypoint (rayflow rayjob submit), this binary runs
	// the flow named in its environment on the job's cluster and exits.
	coordinator.ServeIfRequested()
	count := flag.Int("count", 20, "number of items to fan out")
	rayAddr := flag.String("ray", "", `run on Ray: "local" (a private local cluster) or a cluster address`)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx := context.Background()

	// Materialize first: the plan, its fingerprint and the strategy are
	// fixed before any leaf runs.
	var mopts []sdk.MaterializeOption
	if *rayAddr != "" {
		mopts = append(mopts, sdk.ForRay())
	}
	m, err := sdk.Materialize(fanoutflow.Workflow, mopts...)
	if err != nil {
		log.Error("invalid workflow", "err", err)
		os.Exit(1)
	}
	fmt.Printf("plan fingerprint: %s\n", m.Fingerprint)
	fmt.Printf("plan nodes:       %d (%s topology)\n", len(m.Plan.Nodes), m.Plan.Topology.Class)
	fmt.Printf("strategy:         %s (requested %s, eligible %v, reporting %s)\n",
		m.Selection.SelectedStrategy, m.Selection.RequestedPolicy, m.Selection.EligibleStrategies, m.Selection.ReportingPolicy)

	opts := []sdk.RunOption{sdk.WithPlan(m)}
	var e *rayengine.Engine
	if *rayAddr != "" {
		var nerr error
		if e, nerr = rayengine.New(ctx, rayengine.Options{Address: *rayAddr, NumCPUs: 2}); nerr != nil {
			log.Error("ray", "err", nerr)
			os.Exit(1)
		}
		opts = append(opts, sdk.WithEngine(e), sdk.RequireRay(), sdk.WithProgress(progressLines()),
			sdk.WithProgressInterval(500*time.Millisecond))
	}
	res, err := sdk.Run(ctx, fanoutflow.Workflow, *count, opts...)
	if e != nil {
		if cerr := e.Close(); cerr != nil {
			log.Warn("closing the ray engine", "err", cerr)
		}
	}
	if err != nil {
		log.Error("fan-out failed", "err", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// progressLines is a progress sink printing every map node's fan-out
// counters to stderr, at most twice a second (WithProgressInterval) and
// once when the run ends, skipping a line equal to the node's last one
// (the final publication often repeats the last live counters).
func progressLines() progress.Sink {
	last := map[string]string{}
	return progress.SinkFunc(func(_ context.Context, p *progress.Publication) error {
		for _, d := range p.Details {
			f := d.Fanout
			if f == nil {
				continue
			}
			line := fmt.Sprintf("progress: map %s %s: %d done, %d in flight, %d admitted (input exhausted: %v)",
				d.NodeID, d.State, f.CompletedItems, f.InFlightItems, f.SubmittedItems, f.InputExhausted)
			if last[d.NodeID] != line {
				last[d.NodeID] = line
				fmt.Fprintln(os.Stderr, line)
			}
		}
		return nil
	})
}
