package ray_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/sdk"
)

// Square and Sum are the steps of the examples' flow. Steps are package
// functions and flows package variables: a Ray worker's leaf process finds
// a step by the name it registered at initialization.
func Square(_ context.Context, v int) (int, error) { return v * v, nil }

func Sum(_ context.Context, vs []int) (int, error) {
	total := 0
	for _, v := range vs {
		total += v
	}
	return total, nil
}

var squares = sdk.Then(
	sdk.Map(sdk.Step(Square, sdk.WithResources(sdk.Resources{NumCPUs: 0.25}))).
		WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: 10_000}),
	sdk.Step(Sum),
)

// A program that runs a flow on Ray. ServeLeafIfRequested comes first:
// the Ray workers start this same binary in leaf mode to run its steps.
func Example() {
	ray.ServeLeafIfRequested()
	ctx := context.Background()

	// "local" starts a private cluster that Close stops; a cluster
	// address ("127.0.0.1:6379", "ray://head:10001") connects to one.
	e, err := ray.New(ctx, ray.Options{Address: "local", NumCPUs: 2})
	var setup *ray.SetupError
	if errors.As(err, &setup) {
		log.Fatalf("%s; fix: %s", setup.Problem, setup.Fix) // no Ray in the Python, an unreachable cluster...
	} else if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	// RequireRay refuses a plan that could not run on Ray instead of
	// running it in process.
	total, err := sdk.Run(ctx, squares, items, sdk.WithEngine(e), sdk.RequireRay())
	var se *sdk.StepError
	switch {
	case errors.As(err, &se):
		log.Fatalf("step %s failed: %v", se.Node, err) // the node id names the map item
	case errors.Is(err, ray.ErrClusterLost):
		log.Fatal("the Ray head went away: ", err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(total)
}

// ServeLeafIfRequested comes first in main, before flags and set-up: in a
// leaf process it serves the leaf protocol and never returns. Tests that
// run flows on Ray call it in TestMain, since the Ray workers start the
// test binary in leaf mode:
//
//	func TestMain(m *testing.M) {
//		ray.ServeLeafIfRequested()
//		os.Exit(m.Run())
//	}
func ExampleServeLeafIfRequested() {
	ray.ServeLeafIfRequested()
	addr := flag.String("ray", "local", "the Ray cluster")
	flag.Parse()
	e, err := ray.New(context.Background(), ray.Options{Address: *addr})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	// ... sdk.Run(ctx, flow, in, sdk.WithEngine(e)) ...
}

// A flow runs on Ray with sdk.Run and sdk.WithEngine: its result is typed
// by the flow.
func Example_run() {
	ctx := context.Background()
	e, err := ray.New(ctx, ray.Options{Address: os.Getenv("RAYFLOW_RAY_ADDRESS")})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	total, err := sdk.Run(ctx, squares, []int{1, 2, 3}, sdk.WithEngine(e))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total) // 14
}
