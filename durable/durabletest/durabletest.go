package durabletest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
)

// QuickOptions are a test worker's options: polling every 10 ms (at most
// 100 ms when idle), retries without backoff, logs discarded.
func QuickOptions() durable.WorkerOptions {
	return durable.WorkerOptions{NoRetryBackoff: true, PollInterval: 10 * time.Millisecond,
		PollMaxInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
}

// StartWorker runs a worker with o on pool until t ends: t's cleanup
// stops it and waits for it to return.
func StartWorker(t testing.TB, pool *pgxpool.Pool, o durable.WorkerOptions) *durable.Worker {
	t.Helper()
	w, err := durable.NewWorker(pool, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}
