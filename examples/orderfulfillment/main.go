// Command orderfulfillment runs the seed's order-fulfillment showcase (see
// package examples/orderfulfillment/workflow for its shape): one order of
// -items items through 21 nodes, in process or on Ray, then prints the
// run's stored topology counts (21 nodes, 28 edges, 12 longest-path
// layers; and the seed's counts, which expand each map item into a node:
// 25 nodes and 36 edges for three items) on stderr and the result JSON as
// the last line on stdout.
//
//	go run ./examples/orderfulfillment
//	go run ./examples/orderfulfillment -items 1 -work 10ms
//	go run ./examples/orderfulfillment -failure-stage reserve_inventory -failure-item 0   # exits 1
//	go run ./examples/orderfulfillment -ray local   # or -ray ADDRESS (make ray-up)
//
// As a durable task: `rayflow tasks enqueue orderfulfillment --input
// '{"item_count":3,"work_seconds":0.05}'`, or POST
// /api/examples/orderfulfillment?item_count=3 to `rayflow serve`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// run is main without the process: the exit status (0 ok, 1 the workflow
// failed, 2 usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("orderfulfillment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r orderflow.Request
	fs.IntVar(&r.ItemCount, "items", 3, "items in the order (1-100)")
	work := fs.Duration("work", 50*time.Millisecond, "simulated work of each step (0-5s)")
	fs.StringVar(&r.FailureStage, "failure-stage", "", "make this step fail (a step label, e.g. reserve_inventory)")
	fs.IntVar(&r.FailureItem, "failure-item", 0, "the failing item of validate_item or reserve_inventory")
	rayAddr := fs.String("ray", "", `run on Ray: "local" (a private local cluster) or a cluster address`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "orderfulfillment: unexpected arguments %q\n", fs.Args())
		return 2
	}
	r.WorkSeconds = work.Seconds()
	if err := r.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	final := &progress.Latest{}
	opts := []sdk.RunOption{sdk.WithProgress(final)}
	var (
		res orderflow.Result
		err error
	)
	if *rayAddr != "" {
		var e *rayengine.Engine
		e, err = rayengine.New(ctx, rayengine.Options{Address: *rayAddr, NumCPUs: 2, Stderr: stderr})
		if err != nil {
			fmt.Fprintf(stderr, "orderfulfillment: %v\n", err)
			return 1
		}
		defer e.Close()
		opts = append(opts, sdk.WithEngine(e), sdk.RequireRay())
	}
	res, err = sdk.Run(ctx, orderflow.Workflow, r, opts...)
	if p, _ := final.Last(); p != nil {
		printCounts(stderr, p, r.ItemCount)
	}
	if err != nil {
		fmt.Fprintf(stderr, "orderfulfillment: workflow failed: %v\n", err)
		return 1
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "orderfulfillment: encoding the result: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

// printCounts prints the publication's topology counts, its layers, the
// seed's counts and the failed nodes.
func printCounts(w io.Writer, p *progress.Publication, items int) {
	ids := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		ids[i] = n.NodeID
	}
	edges := make([][2]string, len(p.Edges))
	for i, e := range p.Edges {
		edges[i] = [2]string{e.Source, e.Target}
	}
	layers, err := orderflow.LongestPathLayers(ids, edges)
	if err != nil {
		fmt.Fprintf(w, "topology: %v\n", err)
		return
	}
	sn, se := orderflow.SeedCounts(len(ids), len(edges), items, items)
	fmt.Fprintf(w, "topology: %d nodes, %d edges, %d longest-path layers (the seed's counts, one node per map item: %d nodes, %d edges)\n",
		len(ids), len(edges), layers, sn, se)
	fmt.Fprintf(w, "run %s: %s\n", p.Summary.State, p.Identity.RunID)
	labels := map[string]string{}
	for _, n := range p.Nodes {
		labels[n.NodeID] = n.Label
	}
	for _, d := range p.Details {
		if d.State == "FAILED" {
			fmt.Fprintf(w, "failed: %s (%s)\n", d.NodeID, labels[d.NodeID])
		}
	}
}

func main() {
	rayengine.ServeLeafIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
