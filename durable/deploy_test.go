package durable

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// FailOnceNewBuild is FailOnce as a new build names it (another step: another plan).
func FailOnceNewBuild(ctx context.Context, key string) (string, error) { return FailOnce(ctx, key) }

// A two-build rolling deploy with a retry in flight: attempt 1 of a task
// ran (and failed) on the old build; while only a new-build worker (a
// different plan of the same flow) is alive, the retry waits in the queue
// instead of failing with ErrPlanChanged, and new tasks run on the new
// build; when an old-build worker is alive again it claims the retry and
// it succeeds under the pinned plan. A retry that no worker reproducing
// its plan claims before its queue deadline fails naming both
// fingerprints, and RetryRebuild re-pins it to the new build.
func TestRollingDeployRetryServedByOldBuild(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	queue := ownKey(t, "deploy")
	oldReg, newReg := NewRegistry(), NewRegistry()
	RegisterIn(oldReg, "app.deploy", FailOnceFlow)
	RegisterIn(newReg, "app.deploy", sdk.Step(FailOnceNewBuild))
	oldPlan, err := oldReg.byName["app.deploy"].materialize(false)
	if err != nil {
		t.Fatal(err)
	}
	newPlan, err := newReg.byName["app.deploy"].materialize(false)
	if err != nil {
		t.Fatal(err)
	}
	if oldPlan.Fingerprint == newPlan.Fingerprint {
		t.Fatal("the two builds have the same plan")
	}
	opts := func(id string, reg *Registry) WorkerOptions {
		o := fastOptions()
		o.ID, o.Queue, o.Registry, o.NoRetryBackoff, o.RetryBackoff = id, queue, reg, false, time.Second
		return o
	}
	c := NewClient(e.pool, oldReg)
	enqueue := func(key string, o EnqueueOptions) string {
		o.Queue = queue
		id, err := c.EnqueueJSON(ctx, "app.deploy", []byte(`"`+key+`"`), o)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// Attempt 1 fails on the old build; its retry waits out a 1 s backoff.
	stopOld := runWorker(t, e.pool, opts("old-1", oldReg))
	inFlight := enqueue(ownKey(t, "in-flight"), EnqueueOptions{})
	retry := e.waitState(inFlight, StateQueued, 20*time.Second)
	testwait.Until(t, 20*time.Second, "attempt 2 queued", func() bool {
		task, err := c.Get(ctx, inFlight)
		retry = task
		return err == nil && task.Attempt == 2 && task.State == StateQueued
	})
	if retry.PlanFingerprint != oldPlan.Fingerprint {
		t.Fatalf("pinned %s, want the old build's %s", retry.PlanFingerprint, oldPlan.Fingerprint)
	}
	stopOld()
	// Only the new build is alive: it runs new tasks, not the retry.
	newWorker, stopNew := runWorkerW(t, e.pool, opts("new-1", newReg))
	fresh := enqueue(ownKey(t, "fresh"), EnqueueOptions{MaxAttempts: 2})
	if task := e.wait(fresh, 20*time.Second); task.State != StateSucceeded || task.PlanFingerprint != newPlan.Fingerprint {
		t.Fatalf("a new task on the new build: %s pinned %s (%s)", task.State, task.PlanFingerprint, task.ErrorMessage)
	}
	claims := newWorker.Stats().ClaimQueries
	testwait.Until(t, 20*time.Second, "the new build polling past the retry's backoff", func() bool {
		return newWorker.Stats().ClaimQueries >= claims+10 && time.Now().After(retry.RunAfter.Add(time.Second))
	})
	if task, err := c.Get(ctx, inFlight); err != nil || task.State != StateQueued || task.Attempt != 2 {
		t.Fatalf("the retry while only the new build runs: %v %s at %d (%s)", err, stateOf(task), task.Attempt, task.ErrorMessage)
	}
	// An old-build worker is alive again: it serves the retry.
	stopOld = runWorker(t, e.pool, opts("old-2", oldReg))
	task := e.wait(inFlight, 20*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || len(task.Attempts) != 2 || task.Attempts[1].ClaimedBy != "old-2" ||
		task.Attempts[1].PlanFingerprint != oldPlan.Fingerprint {
		t.Fatalf("the retry: %s at %d (%s) %+v", task.State, task.Attempt, task.ErrorMessage, task.Attempts)
	}

	// No old build at all: a retry fails at its queue deadline naming both
	// plans; RetryRebuild re-pins it to the new build.
	stopNew()
	orphan := enqueue(ownKey(t, "orphan"), EnqueueOptions{QueueTimeout: 2 * time.Second})
	testwait.Until(t, 20*time.Second, "attempt 2 queued", func() bool {
		task, err := c.Get(ctx, orphan)
		return err == nil && task.Attempt == 2 && task.State == StateQueued
	})
	stopOld()
	runWorker(t, e.pool, opts("new-2", newReg))
	task = e.wait(orphan, 30*time.Second)
	if task.State != StateFailed || task.ErrorType != "durable.ErrPlanChanged" || !strings.Contains(task.ErrorMessage, oldPlan.Fingerprint) ||
		!strings.Contains(task.ErrorMessage, newPlan.Fingerprint) {
		t.Fatalf("the unserved retry: %s %s %q", task.State, task.ErrorType, task.ErrorMessage)
	}
	if out, err := c.RetryRebuild(ctx, orphan, Expect{Attempt: 2}); err != nil || out != RetryAccepted {
		t.Fatalf("RetryRebuild: %v %s", err, out)
	}
	task = e.wait(orphan, 20*time.Second)
	if task.State != StateSucceeded || task.Attempt != 3 || task.PlanFingerprint != newPlan.Fingerprint || task.PinnedAttempt != 3 {
		t.Fatalf("after RetryRebuild: %s at %d pinned %s at %d (%s)", task.State, task.Attempt, task.PlanFingerprint, task.PinnedAttempt, task.ErrorMessage)
	}
}

// A retry whose pinned build is live on its queue, but busy, is not
// failed for its plan at its queue deadline: it is EXPIRED as any task
// that waited too long, even when a worker of another build (on another
// queue) sweeps it.
func TestBusyPinnedBuildExpiresTheRetry(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	queue := ownKey(t, "busy")
	oldReg, newReg := NewRegistry(), NewRegistry()
	RegisterIn(oldReg, "app.deploy", FailOnceFlow)
	RegisterIn(oldReg, "app.block", SleepFlow)
	RegisterIn(newReg, "app.deploy", sdk.Step(FailOnceNewBuild))
	o := fastOptions()
	o.ID, o.Queue, o.Registry, o.Concurrency = "old-busy", queue, oldReg, 2
	o.NoRetryBackoff, o.RetryBackoff, o.SweepInterval = false, time.Second, time.Hour // it does not sweep again
	runWorker(t, e.pool, o)
	c := NewClient(e.pool, oldReg)
	id, err := c.EnqueueJSON(ctx, "app.deploy", []byte(`"`+ownKey(t, "busy-retry")+`"`), EnqueueOptions{Queue: queue, QueueTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 20*time.Second, "attempt 2 queued", func() bool {
		task, err := c.Get(ctx, id)
		return err == nil && task.Attempt == 2 && task.State == StateQueued
	})
	for range 2 { // both slots busy past the retry's deadline
		if _, err := c.EnqueueJSON(ctx, "app.block", []byte(`10000`), EnqueueOptions{Queue: queue, Priority: 100}); err != nil {
			t.Fatal(err)
		}
	}
	n := fastOptions()
	n.ID, n.Queue, n.Registry = "new-elsewhere", queue+"-new", newReg
	runWorker(t, e.pool, n)
	task := e.wait(id, 30*time.Second)
	if task.State != StateExpired || task.ErrorType != "QueueTimeout" {
		t.Fatalf("the busy build's retry: %s %s %q", task.State, task.ErrorType, task.ErrorMessage)
	}
}
