package rayjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/rayflow/rayflow/internal/raytoken"
	"github.com/rayflow/rayflow/sdk"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/rayjob/coordinator"
)

// ErrAlreadySubmitted matches the error of a Submit whose submission id
// the cluster already knows: the job was submitted before and is not
// started again.
var ErrAlreadySubmitted = errors.New("rayflow: ray job: already submitted")

// ErrNoResult means the job's logs hold no result record (yet).
var ErrNoResult = errors.New("rayflow: ray job: no result record in the job's logs")

// Status is a Ray job status.
type Status string

// The Ray job statuses.
const (
	StatusPending   Status = "PENDING"
	StatusRunning   Status = "RUNNING"
	StatusStopped   Status = "STOPPED"
	StatusSucceeded Status = "SUCCEEDED"
	StatusFailed    Status = "FAILED"
)

// Terminal reports whether the job has ended.
func (s Status) Terminal() bool { return rayv1.IsJobTerminal(rayv1.JobStatus(s)) }

// Info is a job's state on the cluster.
type Info struct {
	SubmissionID string            `json:"submission_id"`
	Status       Status            `json:"status"`
	Message      string            `json:"message,omitempty"`
	ErrorType    string            `json:"error_type,omitempty"`
	Entrypoint   string            `json:"entrypoint,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	StartTime    time.Time         `json:"start_time,omitzero"`
	EndTime      time.Time         `json:"end_time,omitzero"`
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// Dashboard is the head's dashboard URL ("http://127.0.0.1:8265").
	Dashboard string
	// Token is the Ray authentication token; default $RAY_AUTH_TOKEN, the
	// file $RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token when present.
	Token string
	// HTTPClient is the base client (default: a 30 s timeout).
	HTTPClient *http.Client
}

// Client talks to one cluster's Jobs API through KubeRay's dashboard
// client.
type Client struct {
	dc *dashboardclient.RayDashboardClient
}

// NewClient makes a client for the dashboard at o.Dashboard.
func NewClient(o ClientOptions) (*Client, error) {
	if o.Dashboard == "" {
		return nil, errors.New("rayflow: ray job: no dashboard URL")
	}
	url := strings.TrimRight(o.Dashboard, "/")
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		hc = &c
	}
	token := o.Token
	if token == "" {
		token = defaultToken()
	}
	if token != "" {
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &bearer{base: base, token: token}
	}
	dc := &dashboardclient.RayDashboardClient{}
	dc.InitClient(hc, url)
	return &Client{dc: dc}, nil
}

// bearer adds the Ray token to every request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func defaultToken() string { return raytoken.Token() }

// Job is one run to submit.
type Job struct {
	// SubmissionID is the job's identity on the cluster; a resubmission
	// with the same id is not started again (ErrAlreadySubmitted). Empty:
	// Ray picks one (not idempotent).
	SubmissionID string
	// Executable is the application binary's path on the cluster's nodes
	// (absolute, or relative to a shipped working_dir).
	Executable string
	// Flow is the name the flow was registered under (sdk.RegisterFlow).
	Flow string
	// Input is the flow's input as JSON.
	Input json.RawMessage
	// Python is the interpreter with ray[default] on the cluster's nodes,
	// for the coordinator's bridge; empty: the coordinator's default
	// (.venv-ray upwards from the job's directory, else python3).
	Python string
	// Env adds environment variables to the entrypoint process only.
	Env map[string]string
	// RuntimeEnv is the job's Ray runtime_env (working_dir, env_vars for
	// every worker, ...).
	RuntimeEnv map[string]any
	// Metadata is stored with the job; "rayflow_flow" is added.
	Metadata map[string]string
	// EntrypointNumCPUs reserves CPUs for the coordinator process.
	EntrypointNumCPUs float32

	// Identity is the durable attempt's run identity: with it the
	// coordinator runs under that identity and, given a database URL,
	// publishes the run's progress fenced by it (package coordinator).
	Identity *sdk.RunIdentity
	// Reporting is the plan's reporting policy (empty: the default, full).
	Reporting sdk.ReportingPolicy
	// DatabaseURL is the progress database, a secret. It travels as
	// RAYFLOW_DATABASE_URL in the runtime_env's env_vars, never in the
	// entrypoint or the metadata, and is redacted from Submit's errors.
	// Ray's Jobs API still returns a job's runtime_env to whoever may read
	// the cluster's jobs (see the package doc). Empty: the coordinator
	// uses the cluster's own RAYFLOW_DATABASE_URL, if any.
	DatabaseURL string
	// NoProgress tells the coordinator to publish nothing, even with a
	// database URL of the cluster's own.
	NoProgress bool
	// TraceParent is a W3C traceparent (telemetry.Inject of the
	// submitter's span): the coordinator's run span becomes its child. It
	// travels as TRACEPARENT in the entrypoint (not secret).
	TraceParent string
}

// traceParent matches a W3C traceparent (version 00 and its successors).
var traceParent = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// Redacted replaces a database URL in job requests' errors.
const Redacted = "[REDACTED]"

// request is the Jobs API request of j.
func request(j Job) (*utiltypes.RayJobRequest, error) {
	env := j.Env
	if j.TraceParent != "" && !traceParent.MatchString(j.TraceParent) {
		return nil, fmt.Errorf("rayflow: ray job: TraceParent %.80q is not a W3C traceparent", j.TraceParent)
	}
	if j.Identity != nil || j.Reporting != "" || j.NoProgress || j.TraceParent != "" {
		env = maps.Clone(j.Env)
		if env == nil {
			env = map[string]string{}
		}
		if j.Identity != nil {
			id, err := sdkrt.RunIdentity(*j.Identity)
			if err != nil {
				return nil, fmt.Errorf("rayflow: ray job: %w", err)
			}
			env[coordinator.RunEnv] = coordinator.EncodeRun(id)
		}
		if j.Reporting != "" {
			env[coordinator.ReportingEnv] = string(j.Reporting)
		}
		if j.NoProgress {
			env[coordinator.NoProgressEnv] = "1"
		}
		if j.TraceParent != "" {
			env[coordinator.TraceParentEnv] = j.TraceParent
		}
	}
	if _, ok := env[coordinator.DatabaseURLEnv]; ok {
		return nil, fmt.Errorf("rayflow: ray job: %s belongs in Job.DatabaseURL (the entrypoint is visible)", coordinator.DatabaseURLEnv)
	}
	ep, err := Entrypoint(j.Executable, j.Flow, j.Input, j.Python, env)
	if err != nil {
		return nil, err
	}
	md := map[string]string{"rayflow_flow": j.Flow}
	for k, v := range j.Metadata {
		md[k] = v
	}
	re := j.RuntimeEnv
	if j.DatabaseURL != "" && !j.NoProgress {
		re = maps.Clone(j.RuntimeEnv)
		if re == nil {
			re = map[string]any{}
		}
		vars := map[string]any{}
		switch ev := re["env_vars"].(type) {
		case nil:
		case map[string]string:
			for k, v := range ev {
				vars[k] = v
			}
		case map[string]any:
			maps.Copy(vars, ev)
		default:
			return nil, fmt.Errorf("rayflow: ray job: runtime_env env_vars is a %T, want a map", ev)
		}
		vars[coordinator.DatabaseURLEnv] = j.DatabaseURL
		re["env_vars"] = vars
	}
	return &utiltypes.RayJobRequest{Entrypoint: ep, SubmissionId: j.SubmissionID, Metadata: md,
		RuntimeEnv: re, NumCpus: j.EntrypointNumCPUs}, nil
}

// redact removes the database URL (and its password) from err's text.
func redact(err error, dbURL string) error {
	if err == nil || dbURL == "" {
		return err
	}
	msg := err.Error()
	secrets := []string{dbURL}
	if u, perr := url.Parse(dbURL); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets = append(secrets, pw, url.QueryEscape(pw))
		}
	}
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, Redacted)
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// Submit submits j. It returns the submission id; a duplicate id returns
// that id and an error matching ErrAlreadySubmitted.
func (c *Client) Submit(ctx context.Context, j Job) (string, error) {
	req, err := request(j)
	if err != nil {
		return "", err
	}
	id, err := c.dc.SubmitJobReq(ctx, req)
	err = redact(err, j.DatabaseURL)
	if err != nil {
		if j.SubmissionID != "" && id == j.SubmissionID {
			// KubeRay's client returns the id with its "already used" error.
			return id, fmt.Errorf("%w: submission id %q (%v)", ErrAlreadySubmitted, id, err)
		}
		return "", fmt.Errorf("rayflow: ray job: submitting: %w", err)
	}
	return id, nil
}

// Status returns the job's state.
func (c *Client) Status(ctx context.Context, id string) (*Info, error) {
	ji, err := c.dc.GetJobInfo(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("rayflow: ray job %s: status: %w", id, err)
	}
	info := &Info{SubmissionID: ji.SubmissionId, Status: Status(ji.JobStatus), Message: ji.Message,
		Entrypoint: ji.Entrypoint, Metadata: ji.Metadata, StartTime: millis(ji.StartTime), EndTime: millis(ji.EndTime)}
	if ji.ErrorType != nil {
		info.ErrorType = *ji.ErrorType
	}
	return info, nil
}

func millis(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}

// Wait polls the job's status every poll until it is terminal or ctx
// ends.
func (c *Client) Wait(ctx context.Context, id string, poll time.Duration) (*Info, error) {
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		info, err := c.Status(ctx, id)
		if err != nil {
			return nil, err
		}
		if info.Status.Terminal() {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-t.C:
		}
	}
}

// Logs returns the job's logs (the entrypoint's output).
func (c *Client) Logs(ctx context.Context, id string) (string, error) {
	l, err := c.dc.GetJobLog(ctx, id)
	if err != nil {
		return "", fmt.Errorf("rayflow: ray job %s: logs: %w", id, err)
	}
	if l == nil {
		return "", fmt.Errorf("rayflow: ray job %s: logs: no such job", id)
	}
	return *l, nil
}

// Stop asks Ray to stop the job; stopping a job that has ended is not an
// error.
func (c *Client) Stop(ctx context.Context, id string) error {
	if err := c.dc.StopJob(ctx, id); err != nil {
		return fmt.Errorf("rayflow: ray job %s: stop: %w", id, err)
	}
	return nil
}

// Delete removes an ended job's record (and frees its submission id).
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.dc.DeleteJob(ctx, id)
}

// Result reads the job's result record from its logs. A failed run's
// record has OK false and Error set; ErrNoResult means there is none (the
// job has not finished, or died before writing one).
func (c *Client) Result(ctx context.Context, id string) (*coordinator.Result, error) {
	logs, err := c.Logs(ctx, id)
	if err != nil {
		return nil, err
	}
	return ParseResult(logs)
}

// ParseResult returns the last result record in a job's logs.
func ParseResult(logs string) (*coordinator.Result, error) {
	for rest := logs; rest != ""; {
		i := strings.LastIndexByte(strings.TrimRight(rest, "\n"), '\n')
		line := strings.TrimRight(rest[i+1:], "\r\n")
		rest = rest[:max(i, 0)]
		if !strings.HasPrefix(line, coordinator.ResultPrefix) {
			continue
		}
		var r coordinator.Result
		if err := json.Unmarshal([]byte(line[len(coordinator.ResultPrefix):]), &r); err != nil {
			return nil, fmt.Errorf("rayflow: ray job: a malformed result record: %w", err)
		}
		if r.Version != coordinator.ResultVersion {
			return nil, fmt.Errorf("rayflow: ray job: result record version %d, want %d", r.Version, coordinator.ResultVersion)
		}
		return &r, nil
	}
	return nil, ErrNoResult
}
