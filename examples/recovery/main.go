// Command recovery runs the seed's three-attempt recovery showcase (see
// package examples/recovery/workflow): the order-fulfillment workflow
// whose attempt 1 fails at build_order_batch, attempt 2 at
// join_order_inputs and attempt 3 succeeds. Here the three attempts run
// one after the other in this process (or on Ray), each a fresh run with
// its attempt number, as the durable worker runs them; it prints one line
// per attempt on stderr and the successful result JSON (its recovery
// field names attempt 3) as the last line on stdout.
//
//	go run ./examples/recovery
//	go run ./examples/recovery -ray local   # or -ray ADDRESS (make ray-up)
//
// As a durable task with three attempts (the graph page of `rayflow serve`
// shows all three): POST /api/examples/recovery, or `rayflow tasks enqueue
// recovery --input '{"item_count":1,"work_seconds":0.01}' --max-attempts 3`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	of "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	"github.com/rayflow/rayflow/examples/recovery/workflow"
	"github.com/rayflow/rayflow/sdk"
)

// run is main without the process: the exit status (0 the last attempt
// succeeded, 1 it did not, 2 usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recovery", flag.ContinueOnError)
	fs.SetOutput(stderr)
	r := recoveryflow.DefaultRequest()
	fs.IntVar(&r.ItemCount, "items", r.ItemCount, "items in the order (1-100)")
	work := fs.Duration("work", 10*time.Millisecond, "simulated work of each step (0-5s)")
	rayAddr := fs.String("ray", "", `run on Ray: "local" (a private local cluster) or a cluster address`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "recovery: unexpected arguments %q\n", fs.Args())
		return 2
	}
	r.WorkSeconds = work.Seconds()
	if err := r.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var opts []sdk.RunOption
	if *rayAddr != "" {
		e, err := rayengine.New(ctx, rayengine.Options{Address: *rayAddr, NumCPUs: 2, Stderr: stderr})
		if err != nil {
			fmt.Fprintf(stderr, "recovery: %v\n", err)
			return 1
		}
		defer e.Close()
		opts = append(opts, sdk.WithEngine(e), sdk.RequireRay())
	}
	for attempt := 1; attempt <= recoveryflow.MaxAttempts; attempt++ {
		in := r
		in.SetAttempt(attempt)
		res, err := sdk.Run(ctx, recoveryflow.Workflow, in, opts...)
		var sf *of.StageFailure
		switch {
		case errors.As(err, &sf):
			fmt.Fprintf(stderr, "attempt %d: FAILED at %s: %v\n", attempt, sf.Stage, err)
			continue
		case err != nil:
			fmt.Fprintf(stderr, "attempt %d: FAILED: %v\n", attempt, err)
			return 1
		}
		fmt.Fprintf(stderr, "attempt %d: SUCCEEDED\n", attempt)
		out, err := json.Marshal(res)
		if err != nil {
			fmt.Fprintf(stderr, "recovery: encoding the result: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	fmt.Fprintf(stderr, "recovery: no attempt of %d succeeded\n", recoveryflow.MaxAttempts)
	return 1
}

func main() {
	rayengine.ServeLeafIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
