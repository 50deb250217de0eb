// Command app is an application's durable worker for the tests of the
// rayflow CLI: it registers a flow of its own, app.squares, that the
// rayflow binary does not have, and serves it on APP_QUEUE (default
// "default") of RAYFLOW_DATABASE_URL until SIGTERM or SIGINT. Its
// worker id is APP_WORKER_ID.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/sdk"
)

// SquaresIn is app.squares's input.
type SquaresIn struct {
	Numbers []int    `json:"numbers"`
	Scale   *float64 `json:"scale,omitempty"`
}

// Squares sums the squares of the numbers (times Scale, when given).
func Squares(_ context.Context, in SquaresIn) (float64, error) {
	total := 0.0
	for _, n := range in.Numbers {
		total += float64(n * n)
	}
	if in.Scale != nil {
		total *= *in.Scale
	}
	return total, nil
}

func main() {
	durable.Register("app.squares", sdk.Step(Squares))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("RAYFLOW_DATABASE_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer pool.Close()
	w, err := durable.NewWorker(pool, durable.WorkerOptions{ID: os.Getenv("APP_WORKER_ID"), Queue: os.Getenv("APP_QUEUE"),
		PollMaxInterval: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
