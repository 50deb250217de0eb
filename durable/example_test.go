package durable_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/sdk"
)

func Shout(_ context.Context, s string) (string, error) { return strings.ToUpper(s) + "!", nil }

// Shouting is an application's flow, registered by name at package init.
var Shouting = sdk.Step(Shout)

func init() { durable.Register("example.shout", Shouting) }

// An application migrates once, enqueues typed input (or JSON by name,
// or inside its own transaction with EnqueueTx) and embeds a worker in the
// binary that holds the steps.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := durable.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	c := durable.NewClient(pool, nil)
	id, err := durable.Enqueue(ctx, c, Shouting, "hello", durable.EnqueueOptions{Priority: 10})
	if err != nil {
		log.Fatal(err)
	}
	w, err := durable.NewWorker(pool, durable.WorkerOptions{Concurrency: 4})
	if err != nil {
		log.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	go w.Run(wctx) // until stop: then it drains
	defer stop()
	task, err := c.Wait(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(task.State, string(task.Result))
}
