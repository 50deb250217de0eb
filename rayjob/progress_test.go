package rayjob_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/durable/durabletest"
	"github.com/rayflow/rayflow/durable/rayjobrunner"
	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/rayjob"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

// The worker side of the durable tests knows the flow the jobs run.
func init() { durable.Register("fanout", fanoutflow.Workflow) }

// policyRunner submits every attempt under one reporting policy (the
// durable registry materializes every flow under full).
type policyRunner struct {
	*rayjobrunner.Runner
	policy sdk.ReportingPolicy
}

func (p policyRunner) SubmitAttempt(ctx context.Context, a durable.JobAttempt) error {
	if p.policy != "" {
		a.ReportingPolicy = p.policy
	}
	return p.Runner.SubmitAttempt(ctx, a)
}

type durableEnv struct {
	url  string
	pool *pgxpool.Pool
	c    *durable.Client
	log  *syncbuf.Buffer
	jc   *rayjob.Client
}

// newDurable migrates a fresh database and starts, on queue "rayjob", a
// ray_job worker whose jobs run examples/fanout under policy (empty: the
// plan's own), and on queue "local" an in-process worker.
func newDurable(t *testing.T, policy sdk.ReportingPolicy, hb time.Duration) *durableEnv {
	t.Helper()
	return newDurableApp(t, appBinary, policy, hb)
}

// newDurableApp is newDurable with the jobs running exe.
func newDurableApp(t *testing.T, exe string, policy sdk.ReportingPolicy, hb time.Duration) *durableEnv {
	t.Helper()
	jc := newClient(t)
	url := pgtest.URL(t)
	pool := pgtest.PoolAt(t, url)
	if _, err := durable.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	r, err := rayjobrunner.New(jc, rayjobrunner.Options{Executable: exe, Python: python, DatabaseURL: url,
		Env: map[string]string{buildid.EnvBuildRevision: testBuildRevision}})
	if err != nil {
		t.Fatal(err)
	}
	e := &durableEnv{url: url, pool: pool, c: durable.NewClient(pool, nil), log: &syncbuf.Buffer{}, jc: jc}
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, o := range []durable.WorkerOptions{
		{Queue: "rayjob", Jobs: policyRunner{r, policy}, RayAddress: dashboard, JobPollInterval: 250 * time.Millisecond},
		{Queue: "local"},
	} {
		o.HeartbeatInterval, o.StuckTimeout, o.PollInterval, o.PollMaxInterval = hb, 2*hb+30*time.Second, 20*time.Millisecond, 200*time.Millisecond
		o.NoRetryBackoff, o.Logger, o.Concurrency = true, logger, 2
		durabletest.StartWorker(t, pool, o)
	}
	return e
}

// run enqueues fanout on queue and waits for its end.
func (e *durableEnv) run(t *testing.T, queue string, n int) *durable.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	id, err := e.c.EnqueueJSON(ctx, "fanout", json.RawMessage(strings.TrimSpace(string(must(json.Marshal(n))))), durable.EnqueueOptions{Queue: queue, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("waiting for %s: %v\nworker log:\n%s", id, err, e.log.String())
	}
	return task
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// verified checks the task row's stored progress and that the attempt row
// archived the same summary.
func (e *durableEnv) verified(t *testing.T, task *durable.Task) *summary.Summary {
	t.Helper()
	rep, err := pgstore.Verify(t.Context(), e.pool, task.PK, 0)
	if err != nil || rep.Summary == nil || len(rep.Problems) > 0 {
		t.Fatalf("verify task %s: %v %+v", task.ID, err, rep)
	}
	s := rep.Summary
	// The summary validates against gen/summary as stored.
	var raw, archived string
	if err := e.pool.QueryRow(t.Context(), `SELECT t.workflow_progress_summary_json, a.workflow_progress_summary_json
 FROM rayflow_tasks t JOIN rayflow_task_attempts a ON a.task_pk = t.id AND a.attempt_number = t.attempt_number WHERE t.id = $1`,
		task.PK).Scan(&raw, &archived); err != nil {
		t.Fatal(err)
	}
	if _, err := summary.DecodeSummary([]byte(raw)); err != nil {
		t.Fatalf("the stored summary fails gen/summary: %v", err)
	}
	if raw != archived {
		t.Errorf("the attempt row archived\n%s\nthe task row holds\n%s", archived, raw)
	}
	id := s.RunIdentity
	if id.TaskExecutionPK != task.PK || id.AttemptNumber != int64(task.Attempt) || id.ExecutionGeneration != task.Generation || id.RunID != task.RunID {
		t.Errorf("summary identity %+v, task pk %d attempt %d generation %d run %s", id, task.PK, task.Attempt, task.Generation, task.RunID)
	}
	if s.State != summary.StateSucceeded || s.SummaryRevision != summary.ReservedRevision {
		t.Errorf("summary state %s revision %d, want SUCCEEDED at the reserved revision", s.State, s.SummaryRevision)
	}
	return s
}

func (e *durableEnv) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A ray_job attempt under the full policy publishes from the job's
// coordinator: a valid summary, topology and detail, whose counts are
// those of the same task run in process; and the database URL appears
// nowhere in the job's entrypoint, metadata or logs, nor in the worker's
// log.
func TestRayJobAttemptPublishesProgress(t *testing.T) {
	t.Parallel()
	e := newDurable(t, "", time.Second)
	const n = 12
	task := e.run(t, "rayjob", n)
	if task.State != durable.StateSucceeded || task.Runner != "ray_job" || task.RayJobID == "" {
		t.Fatalf("task %s on %q (job %q): %s\nworker log:\n%s", task.State, task.Runner, task.RayJobID, task.ErrorMessage, e.log.String())
	}
	local := e.run(t, "local", n)
	if local.State != durable.StateSucceeded || string(local.Result) != string(task.Result) {
		t.Fatalf("local run: %s %s, ray_job result %s", local.State, local.Result, task.Result)
	}
	s, ls := e.verified(t, task), e.verified(t, local)
	if s.ReportingPolicy != "full" || s.Storage.ManifestID == nil || s.TopologyVersion == nil || s.DetailRevision == nil {
		t.Errorf("policy %s, manifest %v, topology %v, detail revision %v; want full storage", s.ReportingPolicy, s.Storage.ManifestID, s.TopologyVersion, s.DetailRevision)
	}
	// A Ray run may succeed before a leaf's terminal event reaches the
	// coordinator (engine/ray's event delivery, not the storage): the
	// final summary then says terminal_state_unreported (docs/contracts.md#publication)
	// and that node's detail row keeps its last reported state.
	unreported := slices.Contains(s.Detail.TruncationReasons, summary.TruncationReasonTerminalStateUnreported)
	if unreported {
		t.Logf("the run succeeded before every leaf's terminal event arrived: %+v", s.Detail)
	}
	want := summary.DetailAvailabilityAvailable
	if unreported {
		want = summary.DetailAvailabilityTruncated
	}
	if s.Detail.Availability != want || ls.Detail.Availability != summary.DetailAvailabilityAvailable {
		t.Errorf("detail %+v (in process %+v), want %s", s.Detail, ls.Detail, want)
	}
	// The fan-out's nodes (the build step, the map, the summarizing
	// step; the map's items are its fan-out counters), all succeeded and
	// retained, like in process.
	nc, lc := s.NodeCounts, ls.NodeCounts
	if nodes := int64(3); nc.Discovered != nodes || nc.Succeeded != nodes || nc.RetainedTopology != nodes ||
		nc.RetainedDetail != nodes || nc.Running+nc.Pending+nc.Failed != 0 {
		t.Errorf("node counts %+v, want %d nodes", nc, nodes)
	}
	if nc.Discovered != lc.Discovered || nc.Succeeded != lc.Succeeded || nc.RetainedTopology != lc.RetainedTopology ||
		nc.RetainedDetail != lc.RetainedDetail || s.EdgeCounts.Discovered != ls.EdgeCounts.Discovered {
		t.Errorf("ray_job counts %+v %+v, in process %+v %+v", nc, s.EdgeCounts, lc, ls.EdgeCounts)
	}
	const runOf = `JOIN rayflow_progress_runs r ON r.id = d.run_pk WHERE r.run_id = $1::uuid`
	rows := e.count(t, `SELECT count(*) FROM rayflow_progress_nodes d `+runOf, task.RunID)
	succeeded := e.count(t, `SELECT count(*) FROM rayflow_progress_nodes d `+runOf+` AND d.state = 'SUCCEEDED'`, task.RunID)
	if int64(rows) != nc.RetainedDetail || !unreported && int64(succeeded) != nc.RetainedDetail {
		t.Errorf("%d detail rows (%d SUCCEEDED), the summary retains %d", rows, succeeded, nc.RetainedDetail)
		rs, _ := e.pool.Query(t.Context(), `SELECT node_id, state, truncated, payload FROM rayflow_progress_nodes d `+runOf, task.RunID)
		for rs.Next() {
			var id, st, pl string
			var tr bool
			_ = rs.Scan(&id, &st, &tr, &pl)
			t.Logf("row %s %s truncated=%v %s", id, st, tr, pl)
		}
		rs.Close()
		sum, _ := json.Marshal(s)
		t.Logf("summary %s", sum)
	}
	if nodes := e.count(t, `SELECT node_count FROM rayflow_progress_manifests d `+runOf+` AND d.slot = 'CURRENT'`, task.RunID); int64(nodes) != nc.RetainedTopology {
		t.Errorf("the current manifest has %d nodes, the summary retains %d", nodes, nc.RetainedTopology)
	}
	// The map's detail row counts the run's n items, all completed.
	var payload string
	if err := e.pool.QueryRow(t.Context(), `SELECT payload FROM rayflow_progress_nodes d `+runOf+` AND payload LIKE '%"fanout":{%'`, task.RunID).Scan(&payload); err != nil {
		t.Fatalf("the map's detail row: %v", err)
	}
	nd, err := detail.DecodeNodeDetail([]byte(payload))
	if err != nil || nd.Fanout == nil || nd.Fanout.SubmittedItems != n || nd.Fanout.CompletedItems != n || nd.Fanout.InFlightItems != 0 {
		t.Errorf("the map's detail %s (%v), want %d items completed", payload, err, n)
	}

	// The secret: the job's visible record and its logs lack it.
	info, err := e.jc.Status(t.Context(), task.RayJobID)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := e.jc.Logs(t.Context(), task.RayJobID)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := json.Marshal(info.Metadata)
	for what, text := range map[string]string{"entrypoint": info.Entrypoint, "metadata": string(md), "job logs": logs, "worker log": e.log.String()} {
		if strings.Contains(text, e.url) {
			t.Errorf("the database URL appears in the %s:\n%s", what, text)
		}
	}
	if !strings.Contains(info.Entrypoint, coordinator.RunEnv+"="+coordinator.EncodeRun(sdk.RunIdentity{TaskExecutionPK: task.PK,
		AttemptNumber: int64(task.Attempt), ExecutionGeneration: task.Generation, RunID: task.RunID})) {
		t.Errorf("the entrypoint lacks the attempt's identity: %s", info.Entrypoint)
	}
	if !strings.Contains(logs, "publishing progress (full) of run "+task.RunID) || strings.Contains(logs, "progress sink") {
		t.Errorf("the coordinator did not publish, or a publication failed:\n%s", logs)
	}
}

// Under terminal_only the job stores the summary only: no run row, no
// topology, no detail.
func TestRayJobAttemptTerminalOnly(t *testing.T) {
	t.Parallel()
	e := newDurable(t, sdk.ReportingPolicyTerminalOnly, time.Second)
	task := e.run(t, "rayjob", 4)
	if task.State != durable.StateSucceeded {
		t.Fatalf("task %s: %s\nworker log:\n%s", task.State, task.ErrorMessage, e.log.String())
	}
	s := e.verified(t, task)
	if s.ReportingPolicy != "terminal_only" || s.Detail.Availability != summary.DetailAvailabilityOmittedByPolicy ||
		s.Storage.ManifestID != nil || s.TopologyVersion != nil {
		t.Errorf("policy %s detail %s manifest %v topology %v; want the summary-only record", s.ReportingPolicy, s.Detail.Availability, s.Storage.ManifestID, s.TopologyVersion)
	}
	if n := e.count(t, `SELECT count(*) FROM rayflow_progress_runs`); n != 0 {
		t.Errorf("%d progress run rows under terminal_only", n)
	}
}

// A ray_job attempt whose fence goes stale while it runs (here: its
// generation is bumped behind the worker's back, with the worker's
// heartbeat too slow to notice first) is cancelled by its own next
// publication: the job fails with the stale fence, and nothing it
// published after the bump was stored.
func TestRayJobAttemptStaleFenceCancelsTheRun(t *testing.T) {
	t.Parallel()
	e := newDurable(t, "", time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	id, err := e.c.EnqueueJSON(ctx, "fanout", json.RawMessage(`6000`), durable.EnqueueOptions{Queue: "rayjob", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the run's first publication.
	var pk int64
	var job string
	if err := testwait.Poll(ctx, 50*time.Millisecond, "the run's first publication", func(ctx context.Context) (bool, error) {
		var rev *int64
		err := e.pool.QueryRow(ctx, `SELECT id, coalesce(ray_job_id, ''), progress_summary_revision FROM rayflow_tasks WHERE task_id = $1::uuid`, id).Scan(&pk, &job, &rev)
		return rev != nil, err
	}); err != nil {
		t.Fatalf("%v; worker log:\n%s", err, e.log.String())
	}
	var before string
	if err := e.pool.QueryRow(ctx, `UPDATE rayflow_tasks SET execution_generation = execution_generation + 1 WHERE id = $1
 RETURNING workflow_progress_summary_json`, pk).Scan(&before); err != nil {
		t.Fatal(err)
	}
	bumped := time.Now()
	info, err := e.jc.Wait(ctx, job, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(bumped)
	res, err := e.jc.Result(ctx, job)
	logs, _ := e.jc.Logs(ctx, job)
	if err != nil || info.Status != rayjob.StatusFailed || res.OK || res.Error == nil || !strings.Contains(res.Error.Message, "stale") {
		t.Fatalf("job %s (%v): result %+v %v; want a run failure on the stale fence\nlogs:\n%s", info.Status, err, res, res.Error, logs)
	}
	t.Logf("the job ended %v after the fence went stale: %s", took.Round(time.Millisecond), res.Error.Message)
	var after string
	var runs int
	if err := e.pool.QueryRow(ctx, `SELECT workflow_progress_summary_json, (SELECT count(*) FROM rayflow_progress_runs WHERE execution_generation <> t.execution_generation - 1)
 FROM rayflow_tasks t WHERE id = $1`, pk).Scan(&after, &runs); err != nil {
		t.Fatal(err)
	}
	if after != before || runs != 0 {
		t.Errorf("written after the fence went stale: summary changed %v, %d run rows of another generation", after != before, runs)
	}
}

// The database URL reaches the coordinator only: the run's leaves see it
// neither in their environment nor in the job config Ray gives them.
func TestDatabaseURLStaysWithTheCoordinator(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	exe := filepath.Join(t.TempDir(), "envapp")
	build := exec.Command("go", "build", "-o", exe, "./testdata/envapp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/envapp: %v\n%s", err, out)
	}
	marker := fmt.Sprintf("leafcheck%d", time.Now().UnixNano())
	secret := "postgres://app:" + marker + "@127.0.0.1:1/nowhere"
	id := submissionID(t, "leafenv")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := c.Submit(ctx, rayjob.Job{SubmissionID: id, Executable: exe, Flow: "leafenv", Input: json.RawMessage(`"` + marker + `"`),
		Python: python, DatabaseURL: secret, RuntimeEnv: map[string]any{"env_vars": map[string]string{"OTHER": "kept"}}}); err != nil {
		t.Fatal(err)
	}
	info, err := c.Wait(ctx, id, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := c.Logs(ctx, id)
	res, err := c.Result(ctx, id)
	if err != nil || !res.OK {
		t.Fatalf("job %s: %+v %v\nlogs:\n%s", info.Status, res, err, logs)
	}
	var got struct {
		URL          bool   `json:"url"`
		JobConfigHas bool   `json:"job_config_has"`
		Leaf         bool   `json:"leaf"`
		Other        string `json:"other"`
	}
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Leaf || got.URL || got.JobConfigHas || got.Other != "kept" {
		t.Errorf("the leaf saw %s (want it to run in a leaf that sees no database URL)", res.Output)
	}
	md, _ := json.Marshal(info.Metadata)
	if strings.Contains(info.Entrypoint+string(md)+logs, marker) {
		t.Errorf("the URL appears in the job's entrypoint, metadata or logs:\n%s\n%s\n%s", info.Entrypoint, md, logs)
	}
}
