package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/progress/pgstore"
)

// Durable workers store every run's progress themselves (a Sink per
// attempt); an operator checks what is stored, as rayflow progress verify
// does: MISSING or CORRUPT name what a reader would find broken.
func ExampleVerify() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("RAYFLOW_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	task, err := durable.NewClient(pool, nil).Get(ctx, "1175aaf8-4b1c-4f4e-9a3e-0c9f4f3f1a2b")
	if err != nil {
		log.Fatal(err)
	}
	// Attempt 0 is the task row's current summary; 1, 2, ... an archived
	// (terminal) attempt's.
	r, err := pgstore.Verify(ctx, pool, task.PK, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Availability, r.Problems)
}

// Retention, as rayflow cleanup progress runs it: a dry run counts what
// the retention classes make eligible, then a second call deletes it.
func ExampleCleanup() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("RAYFLOW_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	dry, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dry.Line())
	done, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{Delete: true, BatchSize: 500})
	if err != nil { // errors.Is(err, pgstore.ErrCleanupFailed): done.Failures says which
		log.Fatal(err)
	}
	fmt.Println(done.Line())
}
