package rayjobrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/rayjob"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// Options configure a Runner.
type Options struct {
	// Executable is the application binary's path on the cluster's nodes;
	// it must call ray.ServeLeafIfRequested and
	// coordinator.ServeIfRequested first thing in main.
	Executable string
	// Python is the interpreter with ray[default] on the nodes (for the
	// coordinator's bridge); empty: the coordinator's default.
	Python string
	// Env adds environment variables to each job's entrypoint.
	Env map[string]string
	// EntrypointNumCPUs reserves CPUs for each job's coordinator.
	EntrypointNumCPUs float32
	// DatabaseURL is the database the jobs publish progress to (normally
	// the worker's own). It is a secret: it travels in each job's
	// runtime_env env_vars (see rayjob.Job.DatabaseURL for what Ray's Jobs
	// API exposes). Empty: the jobs use the cluster's own
	// RAYFLOW_DATABASE_URL, if any, and otherwise do not publish.
	DatabaseURL string
	// NoTelemetryEnv does not forward the worker's OTEL_* and
	// RAYFLOW_TRACES_FILE variables to the jobs (the cluster's own
	// environment configures their tracing). The attempt's traceparent
	// travels either way.
	NoTelemetryEnv bool
	// Registry is the worker's registry (default durable.DefaultRegistry):
	// a flow whose input implements durable.AttemptInput gets the input
	// with its attempt number set (Registry.AttemptInput), as in process.
	Registry *durable.Registry
}

// Runner is a durable.JobRunner on one cluster's Jobs API.
type Runner struct {
	c *rayjob.Client
	o Options
}

var (
	_ durable.JobRunner        = (*Runner)(nil)
	_ durable.AttemptSubmitter = (*Runner)(nil)
)

// New returns a runner submitting through c.
func New(c *rayjob.Client, o Options) (*Runner, error) {
	if o.Executable == "" {
		return nil, errors.New("rayjobrunner: no executable")
	}
	return &Runner{c: c, o: o}, nil
}

// Submit submits the attempt's job; a job already submitted under the id
// is adopted. An input over the entrypoint's 64 KiB limit fails for good.
func (r *Runner) Submit(ctx context.Context, id, flow string, input []byte) error {
	return r.submit(ctx, r.job(id, flow, input))
}

// SubmitAttempt submits the attempt's job with its run identity, its
// plan's reporting policy and, when a.Progress, the database URL.
func (r *Runner) SubmitAttempt(ctx context.Context, a durable.JobAttempt) error {
	input, err := r.attemptInput(a)
	if err != nil {
		return err
	}
	j := r.job(a.SubmissionID, a.Flow, input)
	id := a.Identity
	j.Identity, j.Reporting = &id, a.ReportingPolicy
	if a.Progress {
		j.DatabaseURL = r.o.DatabaseURL
	} else {
		j.NoProgress = true
	}
	return r.submit(ctx, j)
}

// attemptInput is a's input as its attempt runs it (durable.AttemptInput).
func (r *Runner) attemptInput(a durable.JobAttempt) ([]byte, error) {
	reg := r.o.Registry
	if reg == nil {
		reg = durable.DefaultRegistry
	}
	in, err := reg.AttemptInput(a.Flow, a.Input, int(a.Identity.AttemptNumber))
	switch {
	case errors.Is(err, durable.ErrUnknownFlow):
		return a.Input, nil // not this registry's: the job decodes it as stored
	case err != nil:
		return nil, durable.Permanent(fmt.Errorf("rayjobrunner: the input of attempt %d: %w", a.Identity.AttemptNumber, err))
	}
	return in, nil
}

// job is the rayjob.Job of an attempt (without identity and database).
func (r *Runner) job(id, flow string, input []byte) rayjob.Job {
	return rayjob.Job{SubmissionID: id, Executable: r.o.Executable, Flow: flow, Input: input,
		Python: r.o.Python, Env: r.o.Env, EntrypointNumCPUs: r.o.EntrypointNumCPUs,
		Metadata: map[string]string{"rayflow_durable": "1"}}
}

func (r *Runner) submit(ctx context.Context, j rayjob.Job) error {
	j.TraceParent = telemetry.Inject(ctx)
	if !r.o.NoTelemetryEnv {
		if vars := telemetryEnv(); len(vars) > 0 {
			j.RuntimeEnv = map[string]any{"env_vars": vars}
		}
	}
	if len(j.Input) > rayjob.MaxInputBytes {
		return durable.Permanent(fmt.Errorf("rayjobrunner: the input is %d bytes, Ray Job mode carries at most %d", len(j.Input), rayjob.MaxInputBytes))
	}
	_, err := r.c.Submit(ctx, j)
	if errors.Is(err, rayjob.ErrAlreadySubmitted) {
		return nil
	}
	return err
}

// telemetryEnv returns this process's tracing variables that a job
// inherits: OTEL_* but the header ones, and RAYFLOW_TRACES_FILE.
func telemetryEnv() map[string]any {
	vars := map[string]any{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if tracing.Forwarded(k) {
			vars[k] = v
		}
	}
	return vars
}

// Status maps the job's status; an ended job's outcome comes from its
// result record.
func (r *Runner) Status(ctx context.Context, id string) (durable.JobStatus, error) {
	info, err := r.c.Status(ctx, id)
	if err != nil {
		return durable.JobStatus{}, err
	}
	st := durable.JobStatus{Message: info.Message}
	switch info.Status {
	case rayjob.StatusPending:
		st.State = durable.JobPending
		return st, nil
	case rayjob.StatusRunning:
		st.State = durable.JobRunning
		return st, nil
	case rayjob.StatusStopped:
		st.State = durable.JobStopped
		return st, nil
	case rayjob.StatusSucceeded, rayjob.StatusFailed:
	default:
		return st, fmt.Errorf("rayjobrunner: job %s has status %q", id, info.Status)
	}
	res, err := r.c.Result(ctx, id)
	if err != nil {
		if info.Status == rayjob.StatusFailed {
			st.State = durable.JobFailed
			return st, nil // died before writing its record; Message says why
		}
		return st, err
	}
	return statusOf(st, res), nil
}

// statusOf is the status of an ended job whose result record is res.
func statusOf(st durable.JobStatus, res *coordinator.Result) durable.JobStatus {
	st.Fingerprint = res.Fingerprint
	if res.OK {
		st.State, st.Output = durable.JobSucceeded, res.Output
		return st
	}
	st.State = durable.JobFailed
	if res.Error != nil {
		st.Message = fmt.Sprintf("%s error %s: %s", res.Error.Kind, res.Error.Type, res.Error.Message)
		if len(res.Error.Chain) > 0 {
			// The run's error as its chain: a job of this binary rebuilds
			// its registered types and sentinels. A chain that does not
			// decode leaves the message alone.
			if e, err := errwire.Unmarshal(sdk.DefaultCodec, res.Error.Chain); err == nil && e != nil {
				st.Err = e
			}
		}
	}
	return st
}

// Stop asks Ray to stop the job.
func (r *Runner) Stop(ctx context.Context, id string) error { return r.c.Stop(ctx, id) }
