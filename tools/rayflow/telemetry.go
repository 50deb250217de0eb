package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// observe sets up a long-running command's telemetry: tracing from the
// OTEL_* variables (off unless configured, see package tracing) and a
// logger whose records carry the run identity and node id of their
// context and never a secret-named attribute; writing to the process's
// stderr it becomes slog's default, so step code's slog.InfoContext
// records get the same. done flushes the
// spans.
func observe(ctx context.Context, e env) (log *slog.Logger, done func(), code int) {
	return observeWith(ctx, e, slog.NewTextHandler(e.stderr, nil))
}

// observeWith is observe with h (writing to e.stderr) as the log handler.
func observeWith(ctx context.Context, e env, h slog.Handler) (log *slog.Logger, done func(), code int) {
	log = slog.New(telemetry.LogHandler(h))
	if e.stderr == os.Stderr { // the process's own (not a test's buffer)
		slog.SetDefault(log)
	}
	shutdown, err := tracing.Setup(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: tracing: %v\n", err)
		return nil, nil, exitUsage
	}
	return log, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}, -1
}
