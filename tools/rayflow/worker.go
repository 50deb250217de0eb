package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/durable/rayjobrunner"
	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/rayjob"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve/showcase"
)

// Sleep is the built-in "sleep" flow: it waits ms milliseconds, or until
// its run is cancelled (for trying cancellation and crashes by hand).
func Sleep(ctx context.Context, ms int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return ms, nil
	}
}

// SleepFlow is registered as "sleep".
var SleepFlow = sdk.Step(Sleep)

func init() {
	// The flows `rayflow worker` runs and `rayflow tasks enqueue` accepts
	// (and `rayflow serve`'s enqueue routes create): the examples and sleep.
	showcase.Register()
	durable.Register("sleep", SleepFlow)
	// A Ray worker process started by `rayflow worker --runner ray` runs
	// this binary as a leaf; it never reaches main.
	rayengine.ServeLeafIfRequested()
	// A Ray Job started by `rayflow worker --runner ray_job` runs this
	// binary as its coordinator; it never reaches main either.
	coordinator.ServeIfRequested()
	register("worker", "run a durable task worker (PostgreSQL queue; local or Ray runner)", cmdWorker)
}

func cmdWorker(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "worker", "worker [flags]\n\n"+
		"Claims tasks from the durable queue and runs them until SIGINT/SIGTERM, then drains.\n"+
		"Flows this binary runs: "+strings.Join(durable.DefaultRegistry.Names(), ", ")+" (the examples are\n"+
		"registered by package serve/showcase). Durations use Go syntax (15s, 5m).",
		`rayflow worker --database-url $(cat .pg-local/url)
rayflow worker --queue reports --concurrency 4 --runner ray --ray-address 127.0.0.1:6390
rayflow worker --metrics-addr 127.0.0.1:9464   # Prometheus metrics; OTEL_* variables export traces
rayflow worker --log-format json --log-level debug
`)
	dbURL := databaseFlag(fs)
	queue := fs.String("queue", durable.DefaultQueue, "queue to claim from")
	concurrency := fs.Int("concurrency", durable.DefaultConcurrency, "tasks run at once")
	runner := fs.String("runner", "local", "local (in this process), ray (the Ray engine) or ray_job (one Ray Job per attempt)")
	dashboard := fs.String("ray-dashboard", envOr("RAYFLOW_RAY_DASHBOARD", "http://127.0.0.1:8265"), "Ray dashboard (Jobs API) for --runner ray_job (default $RAYFLOW_RAY_DASHBOARD)")
	rayAddr := fs.String("ray-address", os.Getenv("RAYFLOW_RAY_ADDRESS"), `Ray cluster for --runner ray ("local" starts a private one; default $RAYFLOW_RAY_ADDRESS, else local)`)
	id := fs.String("id", "", "worker name recorded in claimed_by (default host-pid-random)")
	heartbeat := fs.Duration("heartbeat", durable.DefaultHeartbeatInterval, "heartbeat interval (below --stuck-timeout)")
	stuck := fs.Duration("stuck-timeout", durable.DefaultStuckTimeout, "a running task without heartbeat this long is LOST and retried")
	sweep := fs.Duration("sweep-interval", 0, "how often to look for LOST and EXPIRED tasks (default min(stuck/5, 30s))")
	backoff := fs.Duration("retry-backoff", durable.DefaultRetryBackoff, "automatic retry delay base: attempt k waits base*2^(k-2) (0-3600s)")
	poll := fs.Duration("poll-interval", durable.DefaultPollInterval, "fastest fallback poll (LISTEN/NOTIFY wakes the worker at once)")
	pollMax := fs.Duration("poll-max-interval", durable.DefaultPollMaxInterval, "slowest fallback poll when idle")
	cancelTimeout := fs.Duration("cancel-timeout", durable.DefaultCancelTimeout, "how long a cancelled or timed-out run gets to stop")
	drain := fs.Duration("drain-timeout", durable.DefaultDrainTimeout, "how long to wait for running tasks on shutdown")
	metricsAddr := fs.String("metrics-addr", os.Getenv("RAYFLOW_METRICS_ADDR"), "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464 (default $RAYFLOW_METRICS_ADDR; empty: none)")
	noScheduler := fs.Bool("no-scheduler", false, "never fire schedules' ticks (by default one worker at a time holds the scheduler lease and fires them; rayflow schedules)")
	logLevel := fs.String("log-level", "info", "log level: "+strings.Join(logLevelNames, ", ")+" (info logs each task's claim and outcome)")
	logFormat := fs.String("log-format", "text", "log format: "+strings.Join(logFormatNames, ", "))
	if code := parse(fs, e, args); code >= 0 {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	if err := durable.CheckQueueName(*queue); err != nil {
		errorLine(e, "--queue: %v", err)
		return exitUsage
	}
	h, err := logHandler(e.stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitUsage
	}
	log, flush, code := observeWith(ctx, e, h)
	if code >= 0 {
		return code
	}
	defer flush()
	o := durable.WorkerOptions{MetricsAddr: *metricsAddr, ID: *id, Queue: *queue, Concurrency: *concurrency, HeartbeatInterval: *heartbeat,
		StuckTimeout: *stuck, SweepInterval: *sweep, RetryBackoff: *backoff, NoRetryBackoff: *backoff == 0,
		PollInterval: *poll, PollMaxInterval: *pollMax, CancelTimeout: *cancelTimeout, DrainTimeout: *drain, Logger: log,
		NoScheduler: *noScheduler}
	pool, code := openPool(ctx, e, *dbURL, max(4, min(*concurrency+4, 100)))
	if code >= 0 {
		return code
	}
	defer pool.Close()
	switch *runner {
	case "local":
	case "ray":
		addr := *rayAddr
		if addr == "" {
			addr = "local"
		}
		eng, err := rayengine.New(ctx, rayengine.Options{Address: addr, Stderr: e.stderr})
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: starting the Ray engine on %s: %v\n", addr, err)
			return exitError
		}
		defer func() {
			if err := eng.Close(); err != nil {
				log.Warn("closing the Ray engine", "err", err)
			}
		}()
		o.Engine, o.Runner, o.RayAddress = eng, "ray", addr
	case "ray_job":
		jc, err := rayjob.NewClient(rayjob.ClientOptions{Dashboard: *dashboard})
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitUsage
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitError
		}
		// The jobs publish progress to this worker's database.
		jr, err := rayjobrunner.New(jc, rayjobrunner.Options{Executable: exe, Python: rayenv.Python(), DatabaseURL: *dbURL})
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitError
		}
		o.Jobs, o.RayAddress = jr, *dashboard
	default:
		fmt.Fprintf(e.stderr, "rayflow: --runner %q: want local, ray or ray_job\n", *runner)
		return exitUsage
	}
	w, err := durable.NewWorker(pool, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitUsage
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	return exitOK
}

// The values of rayflow worker's --log-level and --log-format.
var (
	logLevelNames  = []string{"debug", "info", "warn", "error"}
	logFormatNames = []string{"text", "json"}
	logLevels      = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
)

// errLogFlag is a --log-level or --log-format value outside its set.
var errLogFlag = errors.New("invalid log flag")

// logHandler is the slog handler of a --log-level and --log-format pair,
// writing to w.
func logHandler(w io.Writer, level, format string) (slog.Handler, error) {
	l, ok := logLevels[level]
	if !ok {
		return nil, fmt.Errorf("%w: --log-level %q: want one of %s", errLogFlag, level, strings.Join(logLevelNames, ", "))
	}
	o := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.NewTextHandler(w, o), nil
	case "json":
		return slog.NewJSONHandler(w, o), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want one of %s", errLogFlag, format, strings.Join(logFormatNames, ", "))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
