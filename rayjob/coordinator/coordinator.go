package coordinator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/pgledger"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// The entrypoint's environment.
const (
	ModeEnv  = "RAYFLOW_RAYJOB"       // "1" selects coordinator mode
	FlowEnv  = "RAYFLOW_RAYJOB_FLOW"  // the registered flow's name
	InputEnv = "RAYFLOW_RAYJOB_INPUT" // the input JSON, base64url without padding
	// RunEnv is the durable attempt's run identity (EncodeRun).
	RunEnv = "RAYFLOW_RAYJOB_RUN"
	// ReportingEnv is the pinned plan's reporting policy.
	ReportingEnv = "RAYFLOW_RAYJOB_REPORTING"
	// NoProgressEnv "1" turns progress storage off whatever the database
	// URL (a worker without progress storage).
	NoProgressEnv = "RAYFLOW_RAYJOB_NO_PROGRESS"
	// DatabaseURLEnv is the progress database (a secret: runtime_env
	// env_vars or the cluster's environment, never the entrypoint).
	DatabaseURLEnv = "RAYFLOW_DATABASE_URL"
	// TraceParentEnv is the W3C traceparent of the span the run's span is
	// a child of (the OpenTelemetry convention for a context passed in the
	// environment; not secret).
	TraceParentEnv = "TRACEPARENT"
)

// EncodeRun encodes a run identity for RunEnv.
func EncodeRun(id sdk.RunIdentity) string {
	return fmt.Sprintf("%d:%d:%d:%s", id.TaskExecutionPK, id.AttemptNumber, id.ExecutionGeneration, id.RunID)
}

// DecodeRun decodes RunEnv's value and validates the identity.
func DecodeRun(s string) (sdk.RunIdentity, error) {
	id := sdk.RunIdentity{SchemaVersion: 1}
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return id, fmt.Errorf("%w: %q is not pk:attempt:generation:run-id", sdk.ErrInvalidRunIdentity, s)
	}
	var errs [3]error
	id.TaskExecutionPK, errs[0] = strconv.ParseInt(f[0], 10, 64)
	id.AttemptNumber, errs[1] = strconv.ParseInt(f[1], 10, 64)
	id.ExecutionGeneration, errs[2] = strconv.ParseInt(f[2], 10, 64)
	id.RunID = f[3]
	if err := errors.Join(errs[:]...); err != nil {
		return id, fmt.Errorf("%w: %q: %w", sdk.ErrInvalidRunIdentity, s, err)
	}
	return sdkrt.RunIdentity(id)
}

// ResultPrefix starts the result record's line.
const ResultPrefix = "RAYFLOW_RESULT "

// ResultVersion is the version of the Result record.
const ResultVersion = 1

// Exit statuses of the coordinator.
const (
	ExitOK    = 0
	ExitRun   = 1 // the run failed or was stopped
	ExitSetup = 2 // unknown flow, bad input, no cluster
)

// Result is the machine-readable record of one run.
type Result struct {
	Version     int             `json:"version"`
	Flow        string          `json:"flow"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	OK          bool            `json:"ok"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *ErrorInfo      `json:"error,omitempty"`
}

// ErrorInfo describes a failed run.
type ErrorInfo struct {
	Kind    string `json:"kind"`    // "setup", "run" or "stopped"
	Type    string `json:"type"`    // the Go type of the error
	Message string `json:"message"` // its message
	// Chain is the whole error chain (every link's type and message,
	// registered types' values and sentinels' names; internal/errwire),
	// so that the reader knows the error as a run in its own process
	// would: a contract error is then permanent on the Ray Job runner too.
	Chain json.RawMessage `json:"chain,omitempty"`
}

// Error makes a failed Result an error.
func (e *ErrorInfo) Error() string {
	return fmt.Sprintf("rayflow: ray job: %s error (%s): %s", e.Kind, e.Type, e.Message)
}

// EncodeInput encodes an input JSON document for InputEnv.
func EncodeInput(inputJSON []byte) string { return base64.RawURLEncoding.EncodeToString(inputJSON) }

// ServeIfRequested runs the coordinator and exits when the process was
// started in coordinator mode (ModeEnv=1); otherwise it returns at once.
func ServeIfRequested() {
	if os.Getenv(ModeEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	shutdown, err := tracing.Setup(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rayflow coordinator: tracing:", err)
	}
	code := Serve(ctx, Config{}, os.Stdout, os.Stderr)
	stop()
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := shutdown(fctx); err != nil {
		fmt.Fprintln(os.Stderr, "rayflow coordinator: flushing spans:", err)
	}
	cancel()
	os.Exit(code)
}

// Config overrides what Serve otherwise reads from the environment.
type Config struct {
	Flow    string          // default $RAYFLOW_RAYJOB_FLOW
	Input   json.RawMessage // default the decoded $RAYFLOW_RAYJOB_INPUT
	Address string          // default $RAY_ADDRESS, else "auto"
	Python  string          // default rayenv.Python(), else "python3"
	// Identity is the durable attempt's run identity; default the decoded
	// $RAYFLOW_RAYJOB_RUN; none: a fresh one, and no progress storage.
	Identity *sdk.RunIdentity
	// Reporting is the plan's reporting policy; default
	// $RAYFLOW_RAYJOB_REPORTING, else the sdk's default (full).
	Reporting sdk.ReportingPolicy
	// DatabaseURL is where an Identity's progress is published and its
	// item ledger kept; default $RAYFLOW_DATABASE_URL. Empty: nothing is
	// published, and no item is recorded or reused.
	DatabaseURL string
	// NoProgress publishes nothing, whatever DatabaseURL says; default
	// $RAYFLOW_RAYJOB_NO_PROGRESS = "1".
	NoProgress bool
	// TraceParent is the W3C traceparent the run's span is a child of;
	// default $TRACEPARENT (a malformed one is ignored).
	TraceParent string
}

// Serve runs one flow on the Ray engine, writes its result record to
// stdout as the last line and returns the exit status.
func Serve(ctx context.Context, c Config, stdout, stderr io.Writer) int {
	res := Result{Version: ResultVersion, Flow: c.Flow}
	code := serve(ctx, c, &res, stderr)
	line, err := json.Marshal(res)
	if err != nil { // cannot happen: Output is valid JSON
		line = []byte(`{"version":1,"ok":false,"error":{"kind":"run","type":"","message":"encoding the result"}}`)
		code = ExitRun
	}
	fmt.Fprintf(stdout, "\n%s%s\n", ResultPrefix, line)
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	return code
}

func fail(res *Result, kind string, err error) {
	res.OK = false
	res.Error = &ErrorInfo{Kind: kind, Type: fmt.Sprintf("%T", err), Message: err.Error(),
		Chain: errwire.Marshal(sdk.DefaultCodec, err)}
}

func serve(ctx context.Context, c Config, res *Result, stderr io.Writer) int {
	if c.Flow == "" {
		c.Flow = os.Getenv(FlowEnv)
		res.Flow = c.Flow
	}
	inputEnv, runEnv := os.Getenv(InputEnv), os.Getenv(RunEnv)
	if c.Reporting == "" {
		c.Reporting = sdk.ReportingPolicy(os.Getenv(ReportingEnv))
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = os.Getenv(DatabaseURLEnv)
	}
	if c.NoProgress || os.Getenv(NoProgressEnv) == "1" {
		c.NoProgress, c.DatabaseURL = true, ""
	}
	if c.TraceParent == "" {
		c.TraceParent = os.Getenv(TraceParentEnv)
	}
	ctx = telemetry.Extract(ctx, c.TraceParent)
	for _, k := range []string{ModeEnv, FlowEnv, InputEnv, RunEnv, ReportingEnv, NoProgressEnv, DatabaseURLEnv, TraceParentEnv} {
		_ = os.Unsetenv(k)
	}
	scrubJobConfig()
	if c.Input == nil {
		raw, err := base64.RawURLEncoding.DecodeString(inputEnv)
		if err != nil {
			fail(res, "setup", fmt.Errorf("decoding %s: %w", InputEnv, err))
			return ExitSetup
		}
		c.Input = raw
	}
	if c.Identity == nil && runEnv != "" {
		id, err := DecodeRun(runEnv)
		if err != nil {
			fail(res, "setup", err)
			return ExitSetup
		}
		c.Identity = &id
	}
	if !json.Valid(c.Input) {
		fail(res, "setup", fmt.Errorf("the input is not JSON: %.200q", c.Input))
		return ExitSetup
	}
	mopts := []sdk.MaterializeOption{sdk.ForRay()}
	if c.Reporting != "" {
		mopts = append(mopts, sdk.WithReportingPolicy(c.Reporting))
	}
	m, err := sdkhost.MaterializeRegistered(c.Flow, mopts...)
	if errors.Is(err, sdk.ErrUnknownFlow) {
		fail(res, "setup", fmt.Errorf("no flow named %q in this binary (registered: %s)", c.Flow, strings.Join(sdkhost.RegisteredFlows(), ", ")))
		return ExitSetup
	}
	if err != nil {
		fail(res, "setup", err)
		return ExitSetup
	}
	res.Fingerprint = m.Fingerprint
	if c.Address == "" {
		c.Address = os.Getenv("RAY_ADDRESS")
	}
	if c.Address == "" {
		c.Address = "auto"
	}
	if c.Python == "" {
		c.Python = rayenv.Python()
	}
	if c.Python == "" {
		c.Python = "python3"
	}
	fmt.Fprintf(stderr, "rayflow coordinator: flow %s (plan %s) on %s\n", c.Flow, m.Fingerprint, c.Address)
	e, err := ray.New(ctx, ray.Options{Address: c.Address, Python: c.Python, Stderr: stderr})
	if err != nil {
		fail(res, "setup", err)
		return ExitSetup
	}
	opts := []sdk.RunOption{sdk.WithEngine(e)}
	if c.Identity != nil {
		opts = append(opts, sdk.WithRunIdentity(*c.Identity))
		if c.DatabaseURL != "" {
			pool, err := openPool(ctx, c.DatabaseURL)
			if err != nil {
				_ = e.Close()
				fail(res, "setup", err)
				return ExitSetup
			}
			defer pool.Close()
			sink, err := pgstore.NewSink(pool, pgstore.Limits{})
			if err != nil {
				_ = e.Close()
				fail(res, "setup", err)
				return ExitSetup
			}
			// Not deferred: the job publishes its final summary itself;
			// the worker's terminal transition archives it.
			opts = append(opts, sdk.WithProgress(sink))
			if ctx, err = withLedger(ctx, pool, *c.Identity); err != nil {
				_ = e.Close()
				fail(res, "setup", err)
				return ExitSetup
			}
			fmt.Fprintf(stderr, "rayflow coordinator: publishing progress (%s) of run %s\n", m.ReportingPolicy(), c.Identity.RunID)
		} else if !c.NoProgress {
			fmt.Fprintf(stderr, "rayflow coordinator: run %s: no %s, progress is not stored\n", c.Identity.RunID, DatabaseURLEnv)
		}
	}
	out, err := sdkhost.RunPlan(ctx, m, c.Input, opts...)
	if cerr := e.Close(); cerr != nil {
		fmt.Fprintln(stderr, "rayflow coordinator: closing the engine:", cerr)
	}
	if err != nil {
		kind := "run"
		if ctx.Err() != nil {
			kind = "stopped"
		}
		fail(res, kind, err)
		return ExitRun
	}
	er, ok := out.(*sdkrt.EncodedResult)
	if !ok || er.Codec.Name() != "json" {
		fail(res, "run", fmt.Errorf("the engine returned %T, not JSON codec bytes", out))
		return ExitRun
	}
	if !json.Valid(er.Bytes) {
		fail(res, "run", errors.New("the result is not valid JSON"))
		return ExitRun
	}
	res.OK, res.Output = true, er.Bytes
	return ExitOK
}

// withLedger returns ctx carrying the item ledger of the durable attempt
// id (internal/pgledger, bound to its fence), as the worker gives its
// in-process attempts: resumable maps of the run record their succeeded
// items there and reuse those of earlier attempts of the task.
func withLedger(ctx context.Context, pool *pgxpool.Pool, id sdk.RunIdentity) (context.Context, error) {
	l, err := pgledger.New(pool, store.Run{TaskPK: id.TaskExecutionPK, Attempt: id.AttemptNumber, Gen: id.ExecutionGeneration, RunID: id.RunID},
		pgledger.Limits{}, nil)
	if err != nil {
		return ctx, err
	}
	return itemledger.WithLedger(ctx, l), nil
}

// openPool opens a small pool on url. Its errors never carry the URL
// (it holds the password).
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("the progress database URL in %s does not parse", DatabaseURLEnv)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the progress database %s@%s:%d/%s failed", cfg.ConnConfig.User,
			cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	}
	return pool, nil
}

// rayJobConfigEnv is the job config Ray gives a job's entrypoint; a Ray
// driver started from it (the engine's bridge) applies its runtime_env to
// every worker of the run.
const rayJobConfigEnv = "RAY_JOB_CONFIG_JSON_ENV_VAR"

// scrubJobConfig removes DatabaseURLEnv from the runtime_env env_vars of
// the job config the engine's bridge inherits, so that the run's workers
// (the leaves) do not receive the database URL.
func scrubJobConfig() {
	raw := os.Getenv(rayJobConfigEnv)
	if raw == "" || !strings.Contains(raw, DatabaseURLEnv) {
		return
	}
	var cfg map[string]any
	if json.Unmarshal([]byte(raw), &cfg) != nil {
		return
	}
	re, _ := cfg["runtime_env"].(map[string]any)
	ev, _ := re["env_vars"].(map[string]any)
	if ev == nil {
		return
	}
	delete(ev, DatabaseURLEnv)
	if b, err := json.Marshal(cfg); err == nil {
		_ = os.Setenv(rayJobConfigEnv, string(b))
	}
}
