package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/pgledger"
	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Worker defaults (docs/durable.md).
const (
	DefaultConcurrency       = 10
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultStuckTimeout      = 300 * time.Second
	DefaultRetryBackoff      = 60 * time.Second
	DefaultPollInterval      = 100 * time.Millisecond
	DefaultPollMaxInterval   = 2 * time.Second
	DefaultCancelTimeout     = 30 * time.Second
	DefaultDrainTimeout      = 60 * time.Second
	MaxRetryBackoff          = 3600 * time.Second
)

// claimBatchWait is how long a busy worker (under half its slots free)
// waits after a slot frees before claiming, so that a claim takes several
// tasks rather than one per finished task.
const claimBatchWait = 2 * time.Millisecond

// WorkerOptions configure a Worker; zero fields take the defaults.
type WorkerOptions struct {
	// ID names the worker in claimed_by; default host-pid-random.
	ID string
	// Queue is the queue it claims from; default "default".
	Queue string
	// Concurrency is how many tasks run at once; default 10.
	Concurrency int
	// Registry resolves flow names; default DefaultRegistry.
	Registry *Registry
	// Engine runs the flows (for example a Ray engine); nil runs them in
	// this process. Runner and RayAddress are recorded on claimed tasks.
	Engine     sdk.Engine
	Runner     string // default "local", or "ray" for a Ray engine
	RayAddress string
	// Jobs runs attempts as Ray Jobs instead of in this process (runner
	// "ray_job"; see JobRunner). JobPollInterval (default 1 s) is how often
	// a job's status is read; a status unreadable for JobUnknownTimeout
	// (default 60 s) makes the attempt LOST without automatic retry, after
	// a best-effort stop. A RUNNING ray_job attempt whose worker stopped
	// heartbeating is adopted by the sweeping worker (its job keeps
	// running) instead of being declared LOST.
	Jobs              JobRunner
	JobPollInterval   time.Duration
	JobUnknownTimeout time.Duration
	// HeartbeatInterval (default 15 s) must be below StuckTimeout
	// (default 300 s): a running task without heartbeat for StuckTimeout
	// is LOST. SweepInterval (default min(StuckTimeout/5, 30 s)) is how
	// often the worker looks for LOST and EXPIRED tasks.
	HeartbeatInterval time.Duration
	StuckTimeout      time.Duration
	SweepInterval     time.Duration
	// PollInterval and PollMaxInterval bound the adaptive polling that
	// backs up LISTEN/NOTIFY: an empty claim doubles the interval up to
	// the maximum, a claim or a notification resets it (±20 % jitter).
	PollInterval    time.Duration
	PollMaxInterval time.Duration
	// RetryBackoff is the base of the automatic retry delay (0–3600 s,
	// default 60 s): attempt k waits RetryBackoff·2^(k−2). NoRetryBackoff
	// makes it 0.
	RetryBackoff   time.Duration
	NoRetryBackoff bool
	// RetryDenylist lists error types never retried automatically, by short
	// ("MyError"), package ("mypkg.MyError") or qualified name
	// ("example.com/mypkg.MyError"), matched anywhere in the error chain.
	RetryDenylist []string
	// CancelTimeout is how long a cancelled or timed-out run gets to
	// return before the worker records it without waiting (default 30 s).
	CancelTimeout time.Duration
	// DrainTimeout is how long Run waits for running tasks after its
	// context ends; then they are interrupted and recorded LOST (and
	// retried as usual). Default 60 s.
	DrainTimeout time.Duration
	// Logger defaults to slog.Default(). The worker logs one line per
	// transition of a task it claims or sweeps, each with the task id,
	// attempt, flow and duration: "task claimed" (duration: its wait in
	// the queue), "task succeeded", "task cancelled" and "task retried"
	// (next_attempt, backoff) at INFO, "task failed" and "task lost"
	// (error_type, error) at WARN, "task expired" at INFO.
	Logger *slog.Logger
	// NoProgressStore turns off the PostgreSQL progress storage
	// (progress/pgstore), which every in-process attempt publishes to
	// by default: summary v3 on the task row, and under the full policy
	// topology and node detail. Ray Job attempts publish from the job's
	// driver when Jobs is an AttemptSubmitter (rayjobrunner.Runner).
	NoProgressStore bool
	// NoScheduler keeps the worker out of the scheduler lease: it never
	// fires schedules' ticks (docs/durable.md#schedules). By default every
	// worker waits for the lease on a connection of its own, and the one
	// holding it fires them.
	NoScheduler bool
	// MetricsAddr, when set, serves the process's Prometheus metrics
	// (package telemetry) at /metrics on this address while Run runs.
	MetricsAddr string
}

func (o *WorkerOptions) defaults() error {
	host, _ := os.Hostname()
	if o.ID == "" {
		o.ID = newWorkerID(fmt.Sprintf("%s-%d", host, os.Getpid()))
	}
	if len(o.ID) > 256 {
		return fmt.Errorf("%w: worker id over 256 bytes", ErrInvalidOption)
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > 10000 {
		return fmt.Errorf("%w: concurrency %d outside 1…10000", ErrInvalidOption, o.Concurrency)
	}
	if o.Registry == nil {
		o.Registry = DefaultRegistry
	}
	if o.Runner == "" {
		o.Runner = "local"
		switch {
		case o.Jobs != nil:
			o.Runner = "ray_job"
		case o.Engine != nil && o.Engine.Runs(sdk.StrategyDynamicTasks):
			o.Runner = "ray"
		}
	}
	if o.Jobs != nil && o.Engine != nil {
		return fmt.Errorf("%w: a worker has an Engine or a JobRunner, not both", ErrInvalidOption)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&o.StuckTimeout, DefaultStuckTimeout)
	def(&o.SweepInterval, min(o.StuckTimeout/5, 30*time.Second))
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.PollMaxInterval, DefaultPollMaxInterval)
	def(&o.CancelTimeout, DefaultCancelTimeout)
	def(&o.DrainTimeout, DefaultDrainTimeout)
	def(&o.JobPollInterval, time.Second)
	def(&o.JobUnknownTimeout, 60*time.Second)
	if o.NoRetryBackoff {
		o.RetryBackoff = 0
	} else {
		def(&o.RetryBackoff, DefaultRetryBackoff)
	}
	switch {
	case o.HeartbeatInterval >= o.StuckTimeout:
		return fmt.Errorf("%w: heartbeat interval %v must be below the stuck timeout %v", ErrInvalidOption, o.HeartbeatInterval, o.StuckTimeout)
	case o.PollMaxInterval < o.PollInterval:
		return fmt.Errorf("%w: poll max interval %v below the poll interval %v", ErrInvalidOption, o.PollMaxInterval, o.PollInterval)
	case o.RetryBackoff < 0 || o.RetryBackoff > MaxRetryBackoff:
		return fmt.Errorf("%w: retry backoff %v outside 0…3600 s", ErrInvalidOption, o.RetryBackoff)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Worker claims and runs tasks. Embed it in the binary that holds the
// flows' steps; Run blocks until its context ends and running tasks drain.
type Worker struct {
	pool *pgxpool.Pool
	o    WorkerOptions
	log  *slog.Logger

	mu      sync.Mutex
	running map[int64]*runningTask
	inUse   int

	wake      chan struct{} // a notification: there may be work
	slotFreed chan struct{}
	stats     workerCounters

	hard  context.Context // the parent of every run (set by Run)
	tasks sync.WaitGroup  // running attempts

	stored sync.Map // fingerprints whose plan is in rayflow_plans

	group grouper // terminal transitions waiting to be recorded together

	// sessions is set once the worker recorded its session lock
	// (rayflow_workers exists): its idle polls and sweeps then also look
	// for running tasks whose worker's session ended.
	sessions atomic.Bool
	// claims is the claim loop's view of its queue (claimMode): only
	// the loop's goroutine uses it.
	claims claimMode
	// published is the registry version of the flows last published (−1:
	// none yet).
	published atomic.Int64
	// leading is set while the worker holds the scheduler lease.
	leading atomic.Bool
	// suspects are the workers (id and lock key) whose lock a sweep found
	// free, with when it first did; recheck wakes the loop to sweep again
	// once they have been free for orphanGrace. Both belong to Run's loop.
	suspects map[suspect]time.Time
	recheck  chan struct{}
	recheckT *time.Timer
}

// suspect is a worker whose session lock was found free.
type suspect struct {
	worker string
	key    int64
}

// orphanGrace is how long a worker's session lock must stay free (the
// same key, seen by two sweeps) before its running attempts are LOST: a
// live worker whose connection dropped takes a new lock on reconnecting.
const orphanGrace = time.Second

// planPins are the registered flows' plans as this worker materializes
// them (cached per flow), each stored in rayflow_plans once per process,
// for the claim to pin. A flow that does not materialize or whose plan
// cannot be stored is left out (its attempt fails or pins on its own).
func (w *Worker) planPins(ctx context.Context) []planPin {
	ray := w.o.Jobs != nil || w.o.Engine != nil && w.o.Engine.Runs(sdk.StrategyDynamicTasks)
	pins := w.o.Registry.pins(ray)
	out := pins[:0]
	for _, p := range pins {
		if _, ok := w.stored.Load(p.fingerprint); !ok {
			if err := storePlan(ctx, w.pool, p.fingerprint, p.plan); err != nil {
				continue
			}
			w.stored.Store(p.fingerprint, true)
		}
		out = append(out, p)
	}
	return out
}

type runningTask struct {
	cancel context.CancelCauseFunc
	gen    int64
}

type workerCounters struct {
	claimQueries, claimed, sweeps, heartbeats, finished, notifications, groups, grouped, ticks, leaseTries atomic.Int64
}

// WorkerStats are a worker's counters since it started.
type WorkerStats struct {
	ClaimQueries  int64 // claim statements sent (empty or not)
	Claimed       int64 // tasks claimed
	Sweeps        int64 // LOST/EXPIRED sweeps
	Heartbeats    int64 // heartbeat statements
	Finished      int64 // attempts recorded (any outcome)
	Notifications int64 // NOTIFY messages received
	TicksFired    int64 // schedule ticks this worker enqueued while it held the scheduler lease
	LeaseTries    int64 // tries for the scheduler lease
}

// Queries is every statement the worker's loop sent on its own.
func (s WorkerStats) Queries() int64 { return s.ClaimQueries + s.Sweeps + s.Heartbeats + s.LeaseTries }

// NewWorker returns a worker on pool.
func NewWorker(pool *pgxpool.Pool, o WorkerOptions) (*Worker, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := &Worker{pool: pool, o: o, log: o.Logger.With("worker", o.ID), running: map[int64]*runningTask{},
		wake: make(chan struct{}, 1), slotFreed: make(chan struct{}, 1), group: grouper{arrived: make(chan struct{}, 1)},
		suspects: map[suspect]time.Time{}, recheck: make(chan struct{}, 1)}
	w.published.Store(-1)
	return w, nil
}

// ID is the worker's claimed_by name.
func (w *Worker) ID() string { return w.o.ID }

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{ClaimQueries: w.stats.claimQueries.Load(), Claimed: w.stats.claimed.Load(),
		Sweeps: w.stats.sweeps.Load(), Heartbeats: w.stats.heartbeats.Load(), Finished: w.stats.finished.Load(),
		Notifications: w.stats.notifications.Load(), TicksFired: w.stats.ticks.Load(), LeaseTries: w.stats.leaseTries.Load()}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

var errShutdown = errors.New("durable: the worker shut down before the run finished")
var errFenceLost = errors.New("durable: the attempt was superseded (its fence no longer matches)")

// Run claims and runs tasks until ctx ends, then stops claiming and waits
// up to DrainTimeout for running tasks before interrupting them.
func (w *Worker) Run(ctx context.Context) error {
	// Task runs outlive ctx (graceful drain); hard cancels them.
	hard, hardCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardCancel(errShutdown)
	w.hard = hard
	tasks := &w.tasks

	lctx, lcancel := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	first := make(chan struct{})
	lwg.Go(func() { w.listen(lctx, first) })
	if !w.o.NoScheduler {
		lwg.Go(func() { w.scheduler(lctx) })
	}
	defer func() { lcancel(); lwg.Wait() }()
	defer func() {
		if w.recheckT != nil {
			w.recheckT.Stop()
		}
	}()
	// Claim once the session lock is recorded (or its first try failed),
	// so that every claimed task is covered from the start.
	select {
	case <-first:
	case <-ctx.Done():
	}

	stopMetrics, err := w.serveMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics()
	w.log.Info("durable worker started", "queue", w.o.Queue, "concurrency", w.o.Concurrency, "runner", w.o.Runner)
	interval := w.o.PollInterval
	more, polled := true, true
	timer := time.NewTimer(0)
	defer timer.Stop()
	sweep := time.NewTicker(w.o.SweepInterval)
	defer sweep.Stop()
	w.sweep(ctx)
	for ctx.Err() == nil {
		if free := w.free(); free > 0 && more {
			n, orphans, err := w.claim(ctx, free, polled)
			polled = false
			if orphans {
				w.sweep(ctx)
			}
			switch {
			case err != nil:
				if ctx.Err() == nil {
					w.log.Warn("claim failed", "err", err)
				}
				more, interval = false, min(interval*2, w.o.PollMaxInterval)
			case n > 0:
				more, interval = n == free, w.o.PollInterval
			default:
				more, interval = false, min(interval*2, w.o.PollMaxInterval)
			}
			if !more {
				d := jitter(interval)
				if t := w.claims.nextToken; w.claims.keyed && t > 0 && t < d {
					d = t // a rate-limited queue: claim again when its bucket holds a token
				}
				timer.Reset(d)
			}
			if more {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
			more, interval = true, w.o.PollInterval
		case <-w.slotFreed:
			if w.claims.keyed && w.claims.limited {
				// A task of a key at its limit may have ended: the key
				// may start another.
				more = true
			}
			if more && w.free() < (w.o.Concurrency+1)/2 {
				// Busy: let more slots free so that one claim takes several
				// tasks (a claim costs about a transition).
				select {
				case <-ctx.Done():
				case <-time.After(claimBatchWait):
				}
			}
		case <-timer.C:
			more, polled = true, true
		case <-sweep.C:
			w.sweep(ctx)
		case <-w.recheck:
			w.sweep(ctx)
		}
	}
	w.log.Info("durable worker draining", "running", w.runningCount())
	drained := make(chan struct{})
	go func() { tasks.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(w.o.DrainTimeout):
		w.log.Warn("drain timeout: interrupting running tasks", "running", w.runningCount())
		hardCancel(errShutdown)
		<-drained
	}
	w.log.Info("durable worker stopped")
	return nil
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (w *Worker) free() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.o.Concurrency - w.inUse
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inUse
}

// listen holds a LISTEN connection, reconnecting with backoff; every
// (re)connection wakes the claim loop, since notifications sent while it
// was away are lost. The connection also holds the worker's session lock
// (takeSession); first is closed after the first try to take it.
func (w *Worker) listen(ctx context.Context, first chan struct{}) {
	var once sync.Once
	firstDone := func() { once.Do(func() { close(first) }) }
	defer firstDone()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
		if err == nil {
			key := w.takeSession(ctx, conn)
			firstDone()
			if err = store.Listen(ctx, conn); err == nil {
				backoff = 50 * time.Millisecond
				signal(w.wake)
				for {
					var n *pgconn.Notification
					n, err = conn.WaitForNotification(ctx)
					if err != nil {
						break
					}
					w.stats.notifications.Add(1)
					w.notified(n.Payload)
				}
			}
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if key != 0 && ctx.Err() != nil {
				// Stopping: the worker's row goes with its session.
				if err := store.UnregisterWorker(cctx, conn, w.o.ID, key); err != nil {
					w.log.Debug("unregistering the worker session", "err", err)
				}
			}
			conn.Close(cctx)
			cancel()
		} else {
			firstDone()
		}
		if ctx.Err() != nil {
			return
		}
		w.log.Debug("listen connection lost; reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(jitter(backoff)):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// takeSession takes a session advisory lock on a random key on conn and
// records it as the worker's (rayflow_workers), so that other workers
// can tell its process died when the lock is free. It returns the key, or
// 0 when it could not (a schema before migration 0008: the heartbeat
// timeout alone then finds the worker's lost attempts).
func (w *Worker) takeSession(ctx context.Context, conn *pgx.Conn) int64 {
	for range 8 {
		key := rand.Int64N(1<<62) + 1
		ok, err := store.TryWorkerLock(ctx, conn, key)
		if err != nil {
			w.log.Warn("taking the worker session lock", "err", err)
			return 0
		}
		if !ok {
			continue // another session's key: draw again
		}
		if err := store.RegisterWorker(ctx, conn, w.o.ID, w.o.Queue, key); err != nil {
			w.log.Warn("recording the worker session (run rayflow migrate for crash detection in seconds)", "err", err)
			return 0
		}
		w.sessions.Store(true)
		w.publish(ctx, conn)
		return key
	}
	return 0
}

// publish records the flows this worker serves (rayflow_worker_flows,
// deleted with its worker row): each registered flow's input schema,
// plan fingerprint and build revision, on its queue. It runs when the
// worker records its session (at start and after a reconnection) and from
// the sweep when the registry changed since.
func (w *Worker) publish(ctx context.Context, db DB) {
	ray := w.o.Jobs != nil || w.o.Engine != nil && w.o.Engine.Runs(sdk.StrategyDynamicTasks)
	pubs, version := w.o.Registry.publications(ray)
	if err := store.PublishFlows(ctx, db, w.o.ID, w.o.Queue, pubs); err != nil {
		w.log.Warn("publishing the worker's flows (run rayflow migrate to publish them)", "err", err)
		return
	}
	w.published.Store(version)
}

func (w *Worker) notified(payload string) {
	switch {
	case payload == "q:"+w.o.Queue:
		signal(w.wake)
	case strings.HasPrefix(payload, "c:"):
		pk, err := strconv.ParseInt(payload[2:], 10, 64)
		if err != nil {
			return
		}
		w.mu.Lock()
		rt := w.running[pk]
		w.mu.Unlock()
		if rt != nil {
			rt.cancel(ErrCancelled)
		}
	}
}

// claimed is a task this worker now runs as a new attempt.
type claimed struct {
	pk            int64
	id, flow      string
	attempt       int
	maxAttempts   int
	gen           int64
	runID         string
	input         []byte
	timeout       time.Duration
	pinnedFP      string
	pinnedAttempt int
	adoptJob      string        // a running Ray job this worker takes over
	waited        time.Duration // claim latency: claim − max(enqueued, run_after)
}

// claim takes up to n tasks, each as a new attempt with a new execution
// generation and run id, and starts them. An idle poll (polled) also asks
// whether some running task's worker session ended (orphans).
func (w *Worker) claim(ctx context.Context, n int, polled bool) (int, bool, error) {
	w.stats.claimQueries.Add(1)
	// A claim is never abandoned half way: were its response lost to a
	// cancelled context after the UPDATE committed, its tasks would stay
	// RUNNING with no one running them until the stuck timeout. Tasks a
	// claim returns after shutdown began are run and drained as usual.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, orphans, err := claimChecking(ctx, w.pool, w.o.Queue, n, w.o.ID, w.o.Runner, w.o.RayAddress, w.planPins(ctx),
		polled && w.sessions.Load(), &w.claims)
	if err != nil {
		return 0, false, err
	}
	w.stats.claimed.Add(int64(len(got)))
	w.observeClaim(got)
	for _, c := range got {
		w.log.Info("task claimed", "task", c.id, "attempt", c.attempt, "flow", c.flow, "generation", c.gen,
			"run_id", c.runID, "duration", max(c.waited, 0))
		w.start(c)
	}
	return len(got), orphans, nil
}

// start runs the claimed (or adopted) attempt c in a slot of its own.
func (w *Worker) start(c claimed) {
	runCtx, cancel := context.WithCancelCause(w.hard)
	w.mu.Lock()
	w.inUse++
	w.running[c.pk] = &runningTask{cancel: cancel, gen: c.gen}
	w.mu.Unlock()
	w.tasks.Go(func() {
		defer func() {
			cancel(nil)
			w.mu.Lock()
			w.inUse--
			delete(w.running, c.pk)
			w.mu.Unlock()
			signal(w.slotFreed)
		}()
		w.execute(runCtx, cancel, c)
	})
}

// permanent marks a failure that automatic retry would only repeat.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// execute runs one attempt and records its outcome under its fence.
func (w *Worker) execute(runCtx context.Context, cancel context.CancelCauseFunc, c claimed) {
	f := c.fence()
	started := time.Now()
	log := w.log.With("task", c.id, "attempt", c.attempt, "flow", c.flow, "generation", c.gen, "run_id", c.runID)
	runCtx, observed := w.observeAttempt(runCtx, c)
	if c.timeout > 0 {
		var tcancel context.CancelFunc
		runCtx, tcancel = context.WithTimeoutCause(runCtx, c.timeout, ErrTimedOut)
		defer tcancel()
	}
	hbDone := make(chan struct{})
	defer close(hbDone)
	go w.heartbeat(runCtx, hbDone, cancel, f)

	type res struct {
		out []byte
		err error
	}
	done := make(chan res, 1)
	var sink *pgstore.Sink // written by runTask, read after done
	go func() {
		out, err := w.runTask(runCtx, f, c, &sink)
		done <- res{out, err}
	}()
	var r res
	abandoned := false
	select {
	case r = <-done:
	case <-runCtx.Done():
		select {
		case r = <-done:
		case <-time.After(w.o.CancelTimeout):
			abandoned = true
			r.err = fmt.Errorf("the run did not return within %v of being stopped: %w", w.o.CancelTimeout, context.Cause(runCtx))
			log.Warn("abandoning a run that ignores its context", "cause", context.Cause(runCtx))
		}
	}
	cause := context.Cause(runCtx)
	var o outcome
	switch {
	case r.err == nil:
		s := string(r.out)
		o = outcome{state: StateSucceeded, result: &s}
	case errors.Is(cause, errFenceLost) || errors.Is(r.err, errFenceLost) || errors.Is(r.err, itemledger.ErrFenceLost):
		log.Info("attempt superseded; nothing to record")
		observed(nil)
		return
	case errors.Is(cause, ErrCancelled):
		o = outcome{state: StateCancelled, errType: "Cancelled", errMsg: ErrCancelled.Error()}
		if abandoned {
			o.cancellation, o.cancelErr = CancellationIndeterminate, r.err.Error()
		}
	case errors.Is(cause, ErrTimedOut):
		o = outcome{state: StateFailed, errType: "Timeout",
			errMsg: fmt.Sprintf("%v after %v: %v", ErrTimedOut, c.timeout, r.err)}
	case errors.Is(r.err, ErrJobUnknown):
		o = outcome{state: StateLost, errType: "JobUnknown", errMsg: r.err.Error()}
	case errors.Is(cause, errShutdown):
		o = w.failure(c, StateLost, r.err, false)
	default:
		o = w.failure(c, StateFailed, r.err, isPermanent(r.err))
	}
	// The row's summary is known unless the run may still be publishing:
	// none without progress storage, else the sink's last accepted one.
	switch {
	case abandoned || w.o.Jobs != nil:
	case sink != nil:
		o.final = sink.TakeFinal()
		o.lastKnown, o.lastSummary = true, sink.LastSummary()
	case w.o.NoProgressStore:
		o.lastKnown = true
	}
	observed(&o)
	w.finish(f, o, log, time.Since(started))
}

// failure is the outcome of a failed attempt: retried automatically
// unless permanent, denylisted or out of attempts.
func (w *Worker) failure(c claimed, state State, err error, perm bool) outcome {
	o := outcome{state: state, errType: errTypeName(err), errMsg: err.Error()}
	var pe *sdk.PanicError
	if errors.As(err, &pe) {
		o.errTrace = pe.Stack
	}
	if !perm && !w.denied(err) && c.attempt < c.maxAttempts {
		o.retry = true
		o.backoffSeconds = backoffSeconds(w.o.RetryBackoff, c.attempt+1)
	}
	return o
}

// backoffSeconds is base·2^(k−2) before attempt k ≥ 2.
func backoffSeconds(base time.Duration, k int) float64 {
	return base.Seconds() * math.Pow(2, float64(max(k-2, 0)))
}

// finish records o under f, retrying database errors (a restarting
// server) until it lands, the fence is gone, or StuckTimeout passes (the
// attempt is then LOST and retried anyway). took is the attempt's
// duration, logged with its outcome.
func (w *Worker) finish(f store.Fence, o outcome, log *slog.Logger, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), w.o.StuckTimeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	if r := groupable(f, o); r != nil {
		res := w.submit(r)
		if res.err == nil && res.matched {
			w.stats.finished.Add(1)
			log.Debug("attempt recorded", "outcome", o.state, "retry", o.retry, "grouped", true)
			logOutcome(log, f, o, took)
			if o.retry {
				signal(w.wake)
			}
			return
		}
		if res.err != nil {
			log.Debug("group transition failed; recording the attempt alone", "err", res.err)
		}
		// The fence, the expected summary or the final publication's
		// condition did not hold (or the group failed): nothing of this
		// attempt was written; the per-task path decides, without the
		// final publication (as when its batch fails).
		o.final = nil
	}
	for {
		n, err := transition(ctx, w.pool, f, o)
		o.final = nil // tried once: a retry records the outcome alone
		if err == nil {
			w.stats.finished.Add(1)
			if n == 0 {
				log.Info("attempt superseded; its outcome was not recorded", "outcome", o.state)
			} else {
				log.Debug("attempt recorded", "outcome", o.state, "retry", o.retry)
				logOutcome(log, f, o, took)
			}
			if o.retry {
				signal(w.wake)
			}
			return
		}
		if ctx.Err() != nil {
			log.Error("giving up recording an attempt", "outcome", o.state, "err", err)
			return
		}
		log.Warn("recording an attempt failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(jitter(backoff)):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// logOutcome logs the transition of a recorded attempt (log names its
// task, attempt and flow): one line for its outcome ("task succeeded",
// "task failed", "task lost", "task cancelled", "task expired") with the
// attempt's duration and, unless it succeeded, its error; FAILED and LOST
// at WARN, the others at INFO. An automatic retry adds a "task retried"
// line with the next attempt and its backoff.
func logOutcome(log *slog.Logger, f store.Fence, o outcome, took time.Duration) {
	level := slog.LevelInfo
	if o.state == StateFailed || o.state == StateLost {
		level = slog.LevelWarn
	}
	attrs := []any{"outcome", o.state, "duration", took}
	if o.state != StateSucceeded {
		attrs = append(attrs, "error_type", o.errType, "error", truncate(o.errMsg, 1024))
	}
	log.Log(context.Background(), level, "task "+strings.ToLower(string(o.state)), attrs...)
	if o.retry {
		log.Info("task retried", "next_attempt", f.Attempt+1,
			"backoff", time.Duration(o.backoffSeconds*float64(time.Second)))
	}
}

// heartbeat refreshes last_heartbeat_at under the fence; it cancels the
// run when the fence is gone or a cancellation was requested.
func (w *Worker) heartbeat(ctx context.Context, done <-chan struct{}, cancel context.CancelCauseFunc, f store.Fence) {
	t := time.NewTicker(w.o.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		w.stats.heartbeats.Add(1)
		// A slow heartbeat still counts: bound it by half the stuck timeout,
		// not by the (possibly tiny) interval.
		hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), max(w.o.HeartbeatInterval, w.o.StuckTimeout/2))
		state, err := heartbeatOnce(hctx, w.pool, f)
		hcancel()
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			cancel(errFenceLost)
			return
		case err != nil:
			w.log.Warn("heartbeat failed", "task_pk", f.PK, "err", err)
		case state == StateCancelling:
			cancel(ErrCancelled)
		}
	}
}

// runTask materializes the flow, enforces plan pinning, pins the plan on
// the first materialization and runs the flow with the attempt's identity.
//
// It stores the run's progress sink (if any) in *sinkOut before running.
func (w *Worker) runTask(ctx context.Context, f store.Fence, c claimed, sinkOut **pgstore.Sink) ([]byte, error) {
	e, err := w.o.Registry.lookup(c.flow)
	if err != nil {
		return nil, &permanent{err}
	}
	isRay := w.o.Jobs != nil || w.o.Engine != nil && w.o.Engine.Runs(sdk.StrategyDynamicTasks)
	m, err := e.materialize(isRay)
	if err != nil {
		return nil, &permanent{fmt.Errorf("durable: materializing %s: %w", c.flow, err)}
	}
	if c.adoptJob != "" {
		return w.followJob(ctx, c.adoptJob, m.Fingerprint)
	}
	if err := sdkhost.CheckRetryPin(m, c.pinnedFP, c.pinnedAttempt, c.attempt); err != nil {
		return nil, &permanent{fmt.Errorf("%w (a new task is required): %w", ErrPlanChanged, err)}
	}
	if c.pinnedFP == "" {
		var selJSON *string
		if b, err := json.Marshal(m.Selection); err == nil && len(b) <= 65536 {
			s := string(b)
			selJSON = &s
		}
		if err := storePlan(ctx, w.pool, m.Fingerprint, m.Canonical); err != nil {
			return nil, fmt.Errorf("durable: storing the plan: %w", err)
		}
		n, err := pinPlan(ctx, w.pool, f, m.Fingerprint, selJSON)
		if err != nil {
			return nil, fmt.Errorf("durable: pinning the plan: %w", err)
		}
		if n == 0 {
			return nil, errFenceLost
		}
	}
	if w.o.Jobs != nil {
		return w.runJob(ctx, f, c, m)
	}
	id := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: c.pk, AttemptNumber: int64(c.attempt), ExecutionGeneration: c.gen, RunID: c.runID}
	opts := []sdk.RunOption{sdk.WithPlan(m), sdk.WithRunIdentity(id)}
	if !w.o.NoProgressStore {
		sink, err := pgstore.NewSink(w.pool, pgstore.Limits{})
		if err != nil {
			return nil, &permanent{err}
		}
		// The final publication is sent with the terminal transition.
		sink.DeferFinal()
		opts = append(opts, sdk.WithProgress(observeSink(sink)))
		*sinkOut = sink
	}
	if w.o.Engine != nil {
		opts = append(opts, sdk.WithEngine(w.o.Engine))
	}
	ctx, err = w.withLedger(ctx, c)
	if err != nil {
		return nil, &permanent{err}
	}
	out, err := e.run(ctx, c.input, c.attempt, opts)
	if err != nil {
		if errors.Is(err, ErrInvalidInput) {
			return nil, &permanent{err}
		}
		return nil, err
	}
	if len(out) > MaxResultBytes {
		return nil, &permanent{fmt.Errorf("%w: %d bytes, the limit is %d (nothing was stored)", ErrResultTooLarge, len(out), MaxResultBytes)}
	}
	return out, nil
}

// withLedger returns ctx carrying the item ledger of attempt c
// (internal/pgledger, bound to its fence): resumable maps of the run
// record their succeeded items there and reuse those of earlier attempts
// (and, for a repair task, of its origin).
func (w *Worker) withLedger(ctx context.Context, c claimed) (context.Context, error) {
	l, err := pgledger.New(w.pool, store.Run{TaskPK: c.pk, Attempt: int64(c.attempt), Gen: c.gen, RunID: c.runID},
		pgledger.Limits{}, w.log.With("task", c.id, "attempt", c.attempt))
	if err != nil {
		return ctx, err
	}
	return itemledger.WithLedger(ctx, l), nil
}

// sweep marks stuck running tasks LOST (retrying them as usual), stuck
// CANCELLING ones CANCELLED, and queued tasks past their deadline EXPIRED.
// Once the worker recorded its session, it also does so for the running
// tasks whose worker's session ended (its process died) after orphanGrace
// of it staying ended; the first retry of a task LOST that way is
// runnable at once.
func (w *Worker) sweep(ctx context.Context) {
	w.stats.sweeps.Add(1)
	sessions := w.sessions.Load()
	if sessions && w.published.Load() != w.o.Registry.currentVersion() {
		w.publish(ctx, w.pool)
	}
	rows, err := store.SweepTasks(ctx, w.pool, w.o.StuckTimeout.Seconds(), sessions)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("sweep failed", "err", err)
		}
		return
	}
	type cand struct {
		f           store.Fence
		state       State
		maxAttempts int
		job         string
		id, flow    string
		age         float64 // seconds since the attempt started (a queued task: since it was enqueued)
		pinned      string  // the task's pinned plan fingerprint ("" for none)
		queue       string
		dead        suspect // the worker whose session ended ("" when stuck)
		firstLost   bool    // no earlier attempt of the task was LOST
	}
	var cs []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.f.PK, &c.state, &c.f.Attempt, &c.maxAttempts, &c.f.Gen, &c.f.RunID, &c.job, &c.id, &c.flow, &c.age, &c.pinned, &c.queue,
			&c.dead.worker, &c.dead.key, &c.firstLost); err != nil {
			rows.Close()
			w.log.Warn("sweep failed", "err", err)
			return
		}
		c.f.States = []string{string(c.state)}
		cs = append(cs, c)
	}
	if rows.Err() != nil {
		return
	}
	now := time.Now()
	seen := map[suspect]bool{}
	pending := false
	for _, c := range cs {
		// This process's own running attempts are alive by definition (a
		// starved heartbeat is not a lost worker); others sweep them if it
		// really dies. A same-named earlier incarnation's are not ours.
		w.mu.Lock()
		rt := w.running[c.f.PK]
		w.mu.Unlock()
		if rt != nil && rt.gen == c.f.Gen {
			continue
		}
		dead := c.dead.worker != ""
		if dead {
			// Its lock must stay free (the same key) for orphanGrace: a live
			// worker whose connection dropped takes a new one.
			seen[c.dead] = true
			since, ok := w.suspects[c.dead]
			if !ok {
				w.suspects[c.dead] = now
			}
			if !ok || now.Sub(since) < orphanGrace {
				pending = true
				continue
			}
		}
		if c.job != "" && c.state != StateQueued && w.o.Jobs != nil {
			// Its Ray job may well still run: adopt it rather than run it twice.
			if w.free() > 0 {
				w.adopt(ctx, c.f, c.job)
			}
			continue
		}
		gone := fmt.Sprintf("no heartbeat for %v: the worker running it is gone", w.o.StuckTimeout)
		if dead {
			gone = fmt.Sprintf("the worker running it (%s) is gone: its database session ended", c.dead.worker)
		}
		var o outcome
		switch c.state {
		case StateQueued:
			o = outcome{state: StateExpired, errType: "QueueTimeout", errMsg: "the task waited in the queue past its deadline"}
			if own := ""; c.pinned != "" {
				own = w.ownFingerprint(ctx, c.flow)
				if own == c.pinned || w.servedBuild(ctx, c.flow, c.queue, c.pinned) {
					break // a live worker could run it: the queue was too busy
				}
				// A retry no live worker could reproduce (build-aware
				// claiming): it fails naming both plans.
				o = outcome{state: StateFailed, errType: "durable.ErrPlanChanged", errMsg: fmt.Sprintf(
					"%v: no worker reproducing the pinned plan %s claimed the retry before its queue deadline; this build's plan of %s is %s (rayflow tasks retry --rebuild re-pins it)",
					ErrPlanChanged, c.pinned, c.flow, orNone(own))}
			}
		case StateCancelling:
			cause := fmt.Sprintf("its worker stopped heartbeating for %v", w.o.StuckTimeout)
			if dead {
				cause = fmt.Sprintf("its worker (%s) is gone: its database session ended", c.dead.worker)
			}
			o = outcome{state: StateCancelled, errType: "Cancelled", errMsg: ErrCancelled.Error(),
				cancellation: CancellationIndeterminate, cancelErr: cause}
		default:
			o = outcome{state: StateLost, errType: "Lost", errMsg: gone}
			if c.f.Attempt < c.maxAttempts {
				o.retry, o.backoffSeconds = true, backoffSeconds(w.o.RetryBackoff, c.f.Attempt+1)
				if dead && c.firstLost {
					o.backoffSeconds = 0 // its worker died: nothing to wait for
				}
			}
		}
		n, err := transition(ctx, w.pool, c.f, o)
		if err != nil {
			w.log.Warn("sweep transition failed", "task_pk", c.f.PK, "err", err)
			continue
		}
		if n == 1 {
			log := w.log.With("task", c.id, "attempt", c.f.Attempt, "flow", c.flow, "generation", c.f.Gen, "swept", true)
			logOutcome(log, c.f, o, time.Duration(c.age*float64(time.Second)))
			observeSwept(o)
			if o.retry {
				signal(w.wake)
			}
		}
	}
	if sessions {
		for s := range w.suspects {
			if !seen[s] {
				delete(w.suspects, s) // its lock was taken again, or its tasks are recorded
			}
		}
	}
	if pending {
		if w.recheckT == nil {
			w.recheckT = time.AfterFunc(orphanGrace, func() { signal(w.recheck) })
		} else {
			w.recheckT.Reset(orphanGrace)
		}
	}
}

// ownFingerprint is this worker's plan fingerprint of flow ("" when it
// does not serve the flow).
func (w *Worker) ownFingerprint(ctx context.Context, flow string) string {
	for _, p := range w.planPins(ctx) {
		if p.flow == flow {
			return p.fingerprint
		}
	}
	return ""
}

// servedBuild reports whether a live worker publishes flow on queue with
// the plan fingerprint fp.
func (w *Worker) servedBuild(ctx context.Context, flow, queue, fp string) bool {
	flows, err := NewClient(w.pool, w.o.Registry).Flows(ctx, flow)
	if err != nil {
		return false
	}
	for _, f := range flows {
		if f.Queue == queue && f.Fingerprint == fp {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none (the flow is not registered here)"
	}
	return s
}

// contractTypes are the sdk's typed errors of its contract rules: a map
// over its MaxItems, an invalid definition, a value the codec refuses
// (step values, canonical JSON), a strategy the plan or the engine cannot
// honour. A run that broke one breaks it again (same plan, same input),
// so automatic retry would only repeat it. A recovered panic is a bug in
// a step, which a retry runs again the same way: it is permanent too.
var contractTypes = []reflect.Type{
	reflect.TypeFor[*sdk.MaxItemsError](), reflect.TypeFor[*sdk.DefinitionError](),
	reflect.TypeFor[*sdk.ValueError](), reflect.TypeFor[*canonical.Error](), reflect.TypeFor[canonical.Rule](),
	reflect.TypeFor[*sdk.SelectionError](), reflect.TypeFor[*sdk.StrategyMismatchError](),
	reflect.TypeFor[*sdk.PanicError](),
}

// contractSentinels match the contract errors of contractTypes (and
// stand for them when wrapped alone).
var contractSentinels = []error{sdk.ErrInvalidDefinition, sdk.ErrStrategyRejected, sdk.ErrStrategyMismatch, canonical.ErrRejected}

// isPermanent reports whether err is a failure automatic retry would only
// repeat: marked Permanent, or a contract error of contractTypes anywhere
// in its chain. An error from a Ray leaf whose type is not registered
// (sdk.RegisterErrorType) arrives as an *errwire.Remote carrying its Go
// type name; that name counts as the type, so a contract error is
// permanent on every runner.
func isPermanent(err error) bool {
	var p *permanent
	if errors.As(err, &p) {
		return true
	}
	for _, s := range contractSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	found := false
	errwire.Walk(err, func(e error) bool {
		name := errwire.OriginalType(e)
		if name == permanentType.String() && isRemote(e) {
			found = true // Permanent, from a Ray leaf
			return false
		}
		for _, t := range contractTypes {
			if name == t.String() && (reflect.TypeOf(e) == t || isRemote(e)) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

var permanentType = reflect.TypeFor[*permanent]()

func isRemote(e error) bool {
	_, ok := e.(*errwire.Remote)
	return ok
}

// denied reports whether an error type in err's chain is denylisted.
func (w *Worker) denied(err error) bool {
	if len(w.o.RetryDenylist) == 0 {
		return false
	}
	found := false
	errwire.Walk(err, func(e error) bool {
		for _, name := range typeNames(e) {
			for _, d := range w.o.RetryDenylist {
				if d == name {
					found = true
					return false
				}
			}
		}
		return true
	})
	return found
}

// typeNames are the short, package and qualified names of e's type. An
// *errwire.Remote (an error from a Ray leaf whose type is not registered)
// has the short and package names of the type it was created as; its
// package path did not cross the wire.
func typeNames(e error) []string {
	if r, ok := e.(*errwire.Remote); ok {
		name := strings.TrimLeft(r.Type, "*")
		pkg, short, ok := strings.Cut(name, ".")
		if !ok || short == "" || strings.ContainsAny(short, ".[ ") {
			return nil
		}
		return []string{short, pkg + "." + short}
	}
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return nil
	}
	pkg := t.PkgPath()
	short := pkg[strings.LastIndex(pkg, "/")+1:]
	return []string{t.Name(), short + "." + t.Name(), pkg + "." + t.Name()}
}

// sentinels name the sentinel errors an attempt can end with, so that the
// recorded error type says which (an errors.New value's type is only
// *errors.errorString).
var sentinels = []struct {
	err  error
	name string
}{
	{ErrResultTooLarge, "durable.ErrResultTooLarge"}, {ErrTimedOut, "durable.ErrTimedOut"},
	{ErrPlanChanged, "durable.ErrPlanChanged"}, {ErrCancelled, "durable.ErrCancelled"},
	{ErrJobUnknown, "durable.ErrJobUnknown"}, {ErrUnknownFlow, "durable.ErrUnknownFlow"},
	{ErrInvalidInput, "durable.ErrInvalidInput"},
	{sdk.ErrRetryPinMismatch, "sdk.ErrRetryPinMismatch"}, {sdk.ErrStrategyMismatch, "sdk.ErrStrategyMismatch"},
	{sdk.ErrStrategyRejected, "sdk.ErrStrategyRejected"}, {sdk.ErrRayRequired, "sdk.ErrRayRequired"},
	{sdk.ErrInvalidDefinition, "sdk.ErrInvalidDefinition"}, {sdk.ErrUnknownFlow, "sdk.ErrUnknownFlow"},
	{context.Canceled, "context.Canceled"}, {context.DeadlineExceeded, "context.DeadlineExceeded"},
}

// errTypeName names the first sentinel in err's chain (the outermost),
// one of sentinels or one registered with sdk.RegisterSentinel (by its
// registered name), else the innermost error of its first chain, skipping
// the anonymous wrappers of fmt.Errorf and the worker's own. An error
// that crossed from a Ray leaf is named by the type it was created as
// (errwire.OriginalType), so one failure records one name on every
// runner.
func errTypeName(err error) string {
	sentinel := ""
	errwire.Walk(err, func(e error) bool {
		for _, s := range sentinels {
			if e == s.err {
				sentinel = s.name
				return false
			}
		}
		if n := errwire.RegisteredSentinel(e); n != "" {
			sentinel = n
			return false
		}
		return true
	})
	if sentinel != "" {
		return sentinel
	}
	name := fmt.Sprintf("%T", err)
	errwire.Walk(err, func(e error) bool {
		switch n := errwire.OriginalType(e); n {
		case "", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError", permanentType.String():
		default:
			name = n
		}
		return true
	})
	return name
}
