// Package durable is rayflow's outer task on PostgreSQL (pgx/v5): a queue
// of workflow runs that survives worker crashes and can be cancelled,
// retried and inspected (docs/durable.md).
//
// An application registers its flows by name (Register), migrates the
// database once (Migrate), enqueues with a Client (Enqueue, EnqueueJSON,
// or EnqueueTx inside its own transaction) and embeds a Worker in the
// binary that holds the steps. `rayflow migrate|worker|tasks` do the same
// from the command line for the built-in examples. The schema, its
// migrations and the queue's statements belong to package
// internal/store; this package decides what they do.
//
// # Model
//
// One row of rayflow_tasks per task is the single source of truth; every
// terminal attempt is copied into rayflow_task_attempts. A worker claims
// QUEUED rows with FOR UPDATE SKIP LOCKED (larger priority first, FIFO by
// creation within a priority), taking a new execution generation and run
// id in the same statement; that RunIdentity is passed to sdk.Run. Every
// later write of the attempt (heartbeat, plan pin, result, state) carries
// the fence — task, a running state (RUNNING or CANCELLING), attempt,
// generation and run id — in its WHERE clause, so a superseded attempt
// changes 0 rows. Terminal transitions archive the attempt in the same
// statement. With the progress store (the default) the run's final
// progress publication goes in the same batch as its terminal transition:
// one round trip and one transaction after the claim for a short run.
// A worker's attempts that end within a millisecond of each other share
// one statement (group commit, with a short run's first progress
// publication): it changes only the rows whose own fence matches and
// reports which; any other attempt of the group is then recorded alone.
//
// Failures are retried automatically (at most MaxAttempts, default 3,
// counting the first) after RetryBackoff·2^(k−2) before attempt k, unless
// the error's type is in the worker's denylist or the failure is
// permanent: a timeout (FAILED), a changed plan (the retry does not
// reproduce the pinned fingerprint: a worker claims a pinned task only
// when its own plan has that fingerprint, so such a retry waits for a
// worker of its build and fails at its queue deadline naming both;
// Client.RetryRebuild re-pins), a result over 1 MiB, an input that
// no longer decodes, an error marked with Permanent, and a broken
// contract rule of the sdk anywhere in the error's chain (a map input
// over its MaxItems, an invalid definition, a value the codec or
// canonical JSON refuses, a strategy the plan or engine cannot honour)
// or a recovered panic of a step (a bug, which a retry would repeat).
// These hold on every runner: an error from a Ray leaf keeps its Go type
// name across the wire. A manual Retry runs any of them again. The
// recorded error_type is the application's own error type (the innermost
// of its chain past fmt's wrappers) or the name of a sentinel, one of the
// package's or one registered with sdk.RegisterSentinel, the same on
// every runner. A RUNNING task without heartbeat for StuckTimeout is
// LOST and retried the same way. So is one whose worker's process died:
// each worker holds a session advisory lock on its LISTEN connection,
// recorded in rayflow_workers; another worker's idle poll sees the lock
// free (twice, a second apart), and the first retry after such a LOST has
// no backoff, so recovery takes seconds with the default options. A QUEUED task past its queue deadline is
// EXPIRED (no automatic retry). Cancel moves a QUEUED task to CANCELLED at
// once and a RUNNING one to CANCELLING; its worker (woken by NOTIFY, or by
// its next heartbeat) cancels the run's context and records CANCELLED.
// A run that completes before it sees the cancellation stays SUCCEEDED.
//
// # Schedules
//
// A task may wait for a time (EnqueueOptions.RunAfter: run_after, which
// the claim filters on). A schedule (Client.AddSchedule, migration 0011)
// enqueues a task of its flow at every tick of a cron specification in
// a time zone (package internal/cron). Every worker unless NoScheduler
// waits on a connection of its own for the scheduler lease, a session
// advisory lock; the holder fires the due ticks, and when its process
// dies the server hands the lock to the next waiting worker at once.
// A tick's task is inserted in the transaction that moves the schedule's
// next_fire_at on, guarded by the value it read, and names its schedule
// and tick (unique together), so each tick is enqueued once. Ticks missed
// while no worker ran fire once (MissedSkip) or each, the newest
// MaxCatchUp (MissedCatchUp).
//
// # Runners
//
// A worker runs flows in its own process (no Engine), on Ray through the
// Ray engine (WorkerOptions.Engine, runner "ray"), or as one Ray Job per
// attempt (WorkerOptions.Jobs with package rayjobrunner, runner
// "ray_job"). A Ray Job is named by its attempt (task, attempt,
// generation), recorded in ray_job_id under the fence before it is
// submitted, so that a resubmission is idempotent; when its worker dies,
// the sweeping ray_job worker adopts the job (same attempt, new owner)
// rather than running the attempt twice. A job whose status stays
// unreadable is stopped best-effort and the attempt is LOST without
// automatic retry.
//
// Decisions where the reference is silent: the execution generation is
// incremented by every claim and every retry (so each attempt has its own
// generation); a manual Retry is runnable at once (no backoff);
// COMPLETION_PENDING is never returned, because a result and its terminal
// state are written by one statement.
package durable
