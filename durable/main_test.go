package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// Test flows, registered by name like an application's.

type EchoIn struct {
	Name string `json:"name"`
}

func Echo(_ context.Context, in EchoIn) (string, error) { return "hello " + in.Name, nil }

// executions counts runs of Noop and SlowCount by input (exactly-once
// checks); a test that reads it counts its own inputs (ownInputs).
var executions sync.Map

// owned numbers the inputs and keys tests take for themselves.
var owned atomic.Int64

// ownInputs returns the first of n consecutive inputs of Noop and
// SlowCount that no other test, nor another iteration of this one
// (go test -count), uses; their counts are forgotten when t ends. The
// ranges start above the benchmark's inputs.
func ownInputs(t *testing.T, n int) int {
	t.Helper()
	const span = 1_000_000
	if n > span {
		t.Fatalf("ownInputs: %d inputs, at most %d", n, span)
	}
	base := int(100_000_000 + owned.Add(1)*span)
	t.Cleanup(func() {
		for i := range n {
			executions.Delete(base + i)
		}
	})
	return base
}

// ownKey returns a FailOnce input (also usable as a queue name) that no
// other test, nor another iteration of this one, uses; FailOnce forgets
// it when t ends.
func ownKey(t *testing.T, prefix string) string {
	t.Helper()
	key := fmt.Sprintf("%s-%d", prefix, owned.Add(1))
	t.Cleanup(func() { failures.Delete(key) })
	return key
}

func Noop(_ context.Context, n int) (int, error) {
	v, _ := executions.LoadOrStore(n, new(countBox))
	v.(*countBox).add()
	return n, nil
}

type countBox struct {
	mu sync.Mutex
	n  int
}

func (c *countBox) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *countBox) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// blockEnv makes Sleep block until its context ends (the worker process
// of the kill -9 test).
const blockEnv = "RAYFLOW_DURABLE_TEST_BLOCK"

func Sleep(ctx context.Context, ms int) (int, error) {
	d := time.Duration(ms) * time.Millisecond
	if os.Getenv(blockEnv) != "" {
		d = time.Hour
	}
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(d):
		return ms, nil
	}
}

// IgnoreCtx sleeps without looking at its context.
func IgnoreCtx(_ context.Context, ms int) (int, error) {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return ms, nil
}

type boomError struct{ msg string }

func (e *boomError) Error() string { return "boom: " + e.msg }

func Fail(_ context.Context, msg string) (string, error) { return "", &boomError{msg} }

// failures records the inputs FailOnce has run with (ownKey).
var failures sync.Map

// FailOnce fails its first run for each input, then succeeds.
func FailOnce(_ context.Context, key string) (string, error) {
	if _, loaded := failures.LoadOrStore(key, true); !loaded {
		return "", fmt.Errorf("first run of %s fails", key)
	}
	return "ok " + key, nil
}

// SlowCount counts its run by input after ms milliseconds.
func SlowCount(ctx context.Context, in SlowIn) (int, error) {
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
	}
	v, _ := executions.LoadOrStore(in.N, new(countBox))
	v.(*countBox).add()
	return in.N, nil
}

type SlowIn struct {
	N  int `json:"n"`
	MS int `json:"ms"`
}

// HoldIn asks for n Ray leaves that each record their process in Dir
// and then hold for a long time (unless cancelled).
type HoldIn struct {
	Dir string `json:"dir"`
	N   int    `json:"n"`
}

func HoldItems(_ context.Context, in HoldIn) ([]string, error) {
	out := make([]string, in.N)
	for i := range out {
		out[i] = fmt.Sprintf("%s/%d", in.Dir, i)
	}
	return out, nil
}

func Hold(ctx context.Context, path string) (int, error) {
	if err := os.WriteFile(fmt.Sprintf("%s.%d", path, os.Getpid()), fmt.Appendf(nil, "%d %d", os.Getpid(), os.Getppid()), 0o644); err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(2 * time.Minute):
		return 1, nil
	}
}

func Sum(_ context.Context, xs []int) (int, error) { return len(xs), nil }

func Big(_ context.Context, n int) (string, error) { return strings.Repeat("x", n), nil }

var upperRuns atomic.Int64

func Upper(_ context.Context, s string) (string, error) {
	upperRuns.Add(1)
	return strings.ToUpper(s), nil
}

// AttemptOf fails the first attempt of its task, then returns the run
// identity its context carries (sdk.AttemptFrom).
func AttemptOf(ctx context.Context, _ string) (sdk.RunIdentity, error) {
	id, ok := sdk.AttemptFrom(ctx)
	switch {
	case !ok:
		return id, Permanent(errors.New("no run identity in the step's context"))
	case id.AttemptNumber == 1:
		return id, errors.New("the first attempt fails")
	}
	return id, nil
}

var (
	AttemptFlow   = sdk.Step(AttemptOf)
	EchoFlow      = sdk.Step(Echo)
	NoopFlow      = sdk.Step(Noop)
	SleepFlow     = sdk.Step(Sleep)
	IgnoreCtxFlow = sdk.Step(IgnoreCtx)
	FailFlow      = sdk.Step(Fail)
	FailOnceFlow  = sdk.Step(FailOnce)
	BigFlow       = sdk.Step(Big)
	UpperFlow     = sdk.Step(Upper)
	SlowCountFlow = sdk.Step(SlowCount)
	HoldFlow      = sdk.Chain3(sdk.Step(HoldItems),
		sdk.Map(sdk.Step(Hold, sdk.WithResources(sdk.Resources{NumCPUs: 0.25}))), sdk.Step(Sum))
)

func init() {
	Register("test.attempt", AttemptFlow)
	Register("test.echo", EchoFlow)
	Register("test.noop", NoopFlow)
	Register("test.noop.terminal", NoopFlow, sdk.WithReportingPolicy(sdk.ReportingPolicyTerminalOnly))
	Register("test.sleep", SleepFlow)
	Register("test.ignorectx", IgnoreCtxFlow)
	Register("test.fail", FailFlow)
	Register("test.failonce", FailOnceFlow)
	Register("test.big", BigFlow)
	Register("test.upper", UpperFlow)
	Register("test.slowcount", SlowCountFlow)
	Register("test.hold", HoldFlow)
}

// Child-process worker mode (kill -9 tests). With childDefaultsEnv the
// child worker runs with the default options (only its id set); with
// childRayEnv (a Ray address) it runs its flows on Ray.
const (
	childDBEnv       = "RAYFLOW_DURABLE_TEST_CHILD_DB"
	childReadyEnv    = "RAYFLOW_DURABLE_TEST_CHILD_ID"
	childDefaultsEnv = "RAYFLOW_DURABLE_TEST_CHILD_DEFAULTS"
	childQueueEnv    = "RAYFLOW_DURABLE_TEST_CHILD_QUEUE"
	childRayEnv      = "RAYFLOW_DURABLE_TEST_CHILD_RAY"
)

func TestMain(m *testing.M) {
	rayengine.ServeLeafIfRequested() // this binary is the Ray leaf of the Ray tests
	if url := os.Getenv(childDBEnv); url != "" {
		os.Exit(childWorker(url))
	}
	os.Exit(m.Run())
}

func childWorker(url string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o := WorkerOptions{ID: os.Getenv(childReadyEnv), HeartbeatInterval: 200 * time.Millisecond,
		StuckTimeout: time.Hour, PollInterval: 20 * time.Millisecond, PollMaxInterval: 200 * time.Millisecond}
	if os.Getenv(childDefaultsEnv) != "" {
		o = WorkerOptions{ID: o.ID}
	}
	o.Queue = os.Getenv(childQueueEnv)
	if addr := os.Getenv(childRayEnv); addr != "" {
		eng, err := rayengine.New(ctx, rayengine.Options{Address: addr, Stderr: os.Stderr})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer eng.Close()
		o.Engine = eng
	}
	w, err := NewWorker(pool, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = w.Run(ctx)
	return 0
}

// Helpers.

type env struct {
	t    *testing.T
	url  string
	pool *pgxpool.Pool
	c    *Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	url := pgtest.URL(t)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, url: url, pool: pool, c: NewClient(pool, nil)}
}

// fastOptions are worker options with test-sized durations.
func fastOptions() WorkerOptions {
	return WorkerOptions{
		HeartbeatInterval: 100 * time.Millisecond, StuckTimeout: 5 * time.Second, SweepInterval: 200 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, PollMaxInterval: 100 * time.Millisecond, NoRetryBackoff: true,
		CancelTimeout: 2 * time.Second, DrainTimeout: 5 * time.Second,
		Logger: testLogger(),
	}
}

// startWorker runs a worker until the test ends.
func (e *env) startWorker(o WorkerOptions) *Worker {
	e.t.Helper()
	return startWorkerOn(e.t, e.pool, o)
}

func startWorkerOn(t *testing.T, pool *pgxpool.Pool, o WorkerOptions) *Worker {
	t.Helper()
	w, _ := runWorkerW(t, pool, o)
	return w
}

// runWorker runs a worker until stop (idempotent) or the end of the test.
func runWorker(t *testing.T, pool *pgxpool.Pool, o WorkerOptions) (stop func()) {
	t.Helper()
	_, stop = runWorkerW(t, pool, o)
	return stop
}

func runWorkerW(t *testing.T, pool *pgxpool.Pool, o WorkerOptions) (*Worker, func()) {
	t.Helper()
	w, err := NewWorker(pool, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return w, stop
}

func (e *env) enqueue(flow, input string, o EnqueueOptions) string {
	e.t.Helper()
	id, err := e.c.EnqueueJSON(e.t.Context(), flow, []byte(input), o)
	if err != nil {
		e.t.Fatalf("enqueue %s %s: %v", flow, input, err)
	}
	return id
}

func (e *env) wait(id string, within time.Duration) *Task {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), within)
	defer cancel()
	task, err := e.c.Wait(ctx, id)
	if err != nil {
		e.t.Fatalf("waiting for %s: %v (last state %+v)", id, err, task)
	}
	return task
}

// waitState polls until the task is in state.
func (e *env) waitState(id string, state State, within time.Duration) *Task {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), within)
	defer cancel()
	var task *Task
	err := testwait.Poll(ctx, 10*time.Millisecond, "task "+id+" "+string(state), func(ctx context.Context) (bool, error) {
		var err error
		task, err = e.c.Get(ctx, id)
		return err == nil && task.State == state, err
	})
	if err != nil {
		e.t.Fatalf("task %s is %v after %v, want %s: %v", id, stateOf(task), within, state, err)
	}
	return task
}

// stateOf is task's state, or "unknown" before the task was read.
func stateOf(task *Task) State {
	if task == nil {
		return "unknown"
	}
	return task.State
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.t.Context(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func isCheckViolation(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLSTATE 23514") || strings.Contains(err.Error(), "check constraint"))
}

var _ = errors.Is

// testLogger discards worker logs unless RAYFLOW_DURABLE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("RAYFLOW_DURABLE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
