package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk"
)

// JobRunner runs attempts as jobs outside the worker's process: Ray Jobs
// (package durable/rayjobrunner). The job runs the same binary,
// which finds the flow by name; the worker follows it and records its
// outcome under the attempt's fence.
type JobRunner interface {
	// Submit starts the job of one attempt. It must be idempotent per
	// submission id (a resubmission of a known id is not an error).
	Submit(ctx context.Context, submissionID, flow string, input []byte) error
	// Status reads the job's state (and, once ended, its outcome).
	Status(ctx context.Context, submissionID string) (JobStatus, error)
	// Stop asks the cluster to stop the job (stopping an ended job is fine).
	Stop(ctx context.Context, submissionID string) error
}

// JobAttempt is the attempt a job runs: what an AttemptSubmitter
// receives.
type JobAttempt struct {
	SubmissionID string
	Flow         string
	Input        []byte
	// Identity is the attempt's run identity, the fence of its progress
	// publications.
	Identity sdk.RunIdentity
	// ReportingPolicy is the pinned plan's (full, terminal_only, disabled).
	ReportingPolicy sdk.ReportingPolicy
	// Progress says whether the job publishes its progress to the
	// worker's database (false with WorkerOptions.NoProgressStore).
	Progress bool
}

// AttemptSubmitter is a JobRunner whose jobs publish their run's progress
// like in-process attempts: the worker submits through SubmitAttempt,
// which passes the job the attempt's run identity (package
// durable/rayjobrunner). The job publishes its final summary
// itself; the terminal transition archives it (or derives the terminal
// envelope from the last accepted summary when the job did not get to).
type AttemptSubmitter interface {
	SubmitAttempt(ctx context.Context, a JobAttempt) error
}

// JobState is a job's state on its cluster.
type JobState string

// Job states.
const (
	JobPending   JobState = "PENDING"
	JobRunning   JobState = "RUNNING"
	JobSucceeded JobState = "SUCCEEDED"
	JobFailed    JobState = "FAILED"
	JobStopped   JobState = "STOPPED"
)

// JobStatus is what Status reports; Output, Fingerprint and Message only
// once the job ended.
type JobStatus struct {
	State       JobState
	Output      []byte // the flow's result JSON (SUCCEEDED)
	Fingerprint string // the plan the job ran
	Message     string // why it failed
	// Err is the run's error itself (FAILED), when the runner knows it:
	// the attempt's failure then wraps it, so that its recorded type and
	// whether it is retried are decided as for a run in this process.
	Err error
}

// Permanent marks err as a failure automatic retry would only repeat (a
// JobRunner's refusal of an input, or a step's error that no retry can
// fix, for example): the attempt fails without automatic retry, on every
// runner (from a Ray leaf too). errors.Is and errors.As see err.
func Permanent(err error) error { return &permanent{err} }

// submissionID is the attempt's job name: the same for every submission
// of one attempt, different for every attempt.
func submissionID(c claimed) string {
	return fmt.Sprintf("rayflow-%s-a%d-g%d", c.id, c.attempt, c.gen)
}

// runJob records the attempt's job id under the fence, submits the job
// and follows it.
func (w *Worker) runJob(ctx context.Context, f store.Fence, c claimed, m *sdk.Materialized) ([]byte, error) {
	sub := submissionID(c)
	tag, err := store.SetRayJobID(ctx, w.pool, f, sub)
	if err != nil {
		return nil, fmt.Errorf("durable: recording the Ray job id: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errFenceLost
	}
	if as, ok := w.o.Jobs.(AttemptSubmitter); ok {
		err = as.SubmitAttempt(ctx, JobAttempt{SubmissionID: sub, Flow: c.flow, Input: c.input,
			Identity:        sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: c.pk, AttemptNumber: int64(c.attempt), ExecutionGeneration: c.gen, RunID: c.runID},
			ReportingPolicy: sdk.ReportingPolicy(m.ReportingPolicy()), Progress: !w.o.NoProgressStore})
	} else {
		err = w.o.Jobs.Submit(ctx, sub, c.flow, c.input)
	}
	if err != nil {
		return nil, fmt.Errorf("durable: submitting Ray job %s: %w", sub, err)
	}
	return w.followJob(ctx, sub, m.Fingerprint)
}

// followJob polls the job until it ends. When ctx ends (cancel, timeout,
// shutdown) it stops the job and waits for it to end.
func (w *Worker) followJob(ctx context.Context, sub, fingerprint string) ([]byte, error) {
	t := time.NewTicker(w.o.JobPollInterval)
	defer t.Stop()
	var unknownSince time.Time
	stopped := false
	bg := context.WithoutCancel(ctx)
	for {
		sctx, cancel := context.WithTimeout(bg, 30*time.Second)
		st, err := w.o.Jobs.Status(sctx, sub)
		cancel()
		switch {
		case err != nil:
			if unknownSince.IsZero() {
				unknownSince = time.Now()
			}
			if time.Since(unknownSince) >= w.o.JobUnknownTimeout {
				sctx, cancel := context.WithTimeout(bg, 30*time.Second)
				_ = w.o.Jobs.Stop(sctx, sub) // best effort
				cancel()
				return nil, fmt.Errorf("%w: Ray job %s unreadable for %v: %w", ErrJobUnknown, sub, w.o.JobUnknownTimeout, err)
			}
		case st.State == JobSucceeded:
			if fingerprint != "" && st.Fingerprint != "" && st.Fingerprint != fingerprint {
				return nil, &permanent{fmt.Errorf("%w: Ray job %s ran plan %s, the attempt pinned %s", ErrPlanChanged, sub, st.Fingerprint, fingerprint)}
			}
			if len(st.Output) > MaxResultBytes {
				return nil, &permanent{fmt.Errorf("%w: %d bytes, the limit is %d (nothing was stored)", ErrResultTooLarge, len(st.Output), MaxResultBytes)}
			}
			return st.Output, nil
		case st.State == JobFailed:
			if st.Err != nil {
				return nil, &jobFailure{msg: fmt.Sprintf("durable: Ray job %s failed: %s", sub, st.Message), err: st.Err}
			}
			return nil, fmt.Errorf("durable: Ray job %s failed: %s", sub, st.Message)
		case st.State == JobStopped:
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("durable: Ray job %s was stopped from outside: %s", sub, st.Message)
		default:
			unknownSince = time.Time{}
		}
		if ctx.Err() != nil && !stopped {
			stopped = true
			sctx, cancel := context.WithTimeout(bg, 30*time.Second)
			if err := w.o.Jobs.Stop(sctx, sub); err != nil {
				w.log.Warn("stopping a Ray job", "job", sub, "err", err)
			}
			cancel()
			continue
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			if stopped {
				<-t.C
			}
		}
	}
}

// adopt takes over a RUNNING ray_job attempt whose worker stopped
// heartbeating: same attempt, generation and run id (the job is that
// attempt), new owner; then it follows the job like its own.
func (w *Worker) adopt(ctx context.Context, f store.Fence, job string) {
	c := claimed{pk: f.PK, attempt: f.Attempt, gen: f.Gen, adoptJob: job}
	if f.RunID != nil {
		c.runID = *f.RunID
	}
	var input string
	var timeout int64
	err := store.AdoptRayJob(ctx, w.pool, f, w.o.ID, job).Scan(&c.id, &c.flow, &c.maxAttempts, &input, &timeout, &c.pinnedFP, &c.pinnedAttempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return // someone else adopted or ended it
	}
	if err != nil {
		w.log.Warn("adopting a Ray job", "job", job, "err", err)
		return
	}
	c.input, c.timeout = []byte(input), time.Duration(timeout)*time.Second
	w.log.Info("adopted a Ray job whose worker is gone", "task", c.id, "job", job, "attempt", c.attempt, "flow", c.flow)
	w.start(c)
}

// jobFailure is a failed Ray job's error: the job's message, wrapping
// the run's own error.
type jobFailure struct {
	msg string
	err error
}

func (e *jobFailure) Error() string { return e.msg }
func (e *jobFailure) Unwrap() error { return e.err }
