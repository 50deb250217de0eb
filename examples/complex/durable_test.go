package main

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/durable/durabletest"
	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/sdk"
)

// durableRun enqueues the complex workflow on a fresh database, runs a
// durable worker until the task ends and returns the task.
func durableRun(t *testing.T, r Request, maxAttempts int, engine ...sdk.Engine) (*durable.Task, func(string, ...any) []any, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	reg := durable.NewRegistry()
	durable.RegisterIn(reg, "examples.complex", Workflow)
	o := durabletest.QuickOptions()
	o.Registry = reg
	if len(engine) > 0 {
		o.Engine = engine[0]
	}
	durabletest.StartWorker(t, pool, o)
	c := durable.NewClient(pool, reg)
	id, err := durable.Enqueue(ctx, c, Workflow, r, durable.EnqueueOptions{MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	wait, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	task, err := c.Wait(wait, id)
	if err != nil {
		t.Fatal(err)
	}
	row := func(sql string, args ...any) []any {
		t.Helper()
		rows, err := pool.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		if !rows.Next() {
			t.Fatalf("no row: %s", sql)
		}
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return task, row, pool
}

// TestDurableProgressStorage: a durable run of the complex workflow leaves
// a valid terminal summary on the task and attempt rows, and a topology
// and node detail whose counts match it.
func TestDurableProgressStorage(t *testing.T) {
	checkDurableProgress(t)
}

// The same on the shared Ray cluster (RAYFLOW_RAY_ADDRESS, make ray-up).
func TestDurableProgressStorageOnRay(t *testing.T) {
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if testing.Short() || addr == "" {
		t.Skip("needs Ray (RAYFLOW_RAY_ADDRESS) and not -short")
	}
	e, err := rayengine.New(t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	checkDurableProgress(t, e)
}

func checkDurableProgress(t *testing.T, engine ...sdk.Engine) {
	task, row, pool := durableRun(t, Request{FastItems: 4, SlowItems: 2, FastWork: 5 * time.Millisecond, SlowWork: 10 * time.Millisecond}, 1, engine...)
	if task.State != durable.StateSucceeded {
		t.Fatalf("task %s: %s", task.State, task.ErrorMessage)
	}
	v := row(`SELECT t.id, t.workflow_progress_summary_json, a.workflow_progress_summary_json FROM rayflow_tasks t
 JOIN rayflow_task_attempts a ON a.task_pk = t.id WHERE t.task_id = $1::uuid`, task.ID)
	pk, taskSum, attSum := v[0].(int64), v[1].(string), v[2].(string)
	if taskSum != attSum {
		t.Fatalf("attempt summary differs from the task's:\n%s\n%s", attSum, taskSum)
	}
	s, err := summary.DecodeSummary([]byte(taskSum))
	if err != nil {
		t.Fatal(err)
	}
	if s.State != summary.StateSucceeded || s.SummaryRevision != summary.ReservedRevision || s.TopologyVersion == nil {
		t.Fatalf("summary %s", taskSum)
	}
	// terminal_state_unreported: the run succeeded before every node's
	// terminal event reached the coordinator (seen on Ray); the summary
	// counts all succeeded, the detail rows keep their last state.
	unreported := slices.Contains(s.Detail.TruncationReasons, summary.TruncationReasonTerminalStateUnreported)
	v = row(`SELECT m.node_count, m.edge_count, m.payload, r.detail_node_count, r.detail_succeeded_count, r.detail_revision,
 (SELECT count(*) FROM rayflow_progress_nodes n WHERE n.run_pk = r.id)
 FROM rayflow_progress_runs r JOIN rayflow_progress_manifests m ON m.run_pk = r.id AND m.slot = 'CURRENT' WHERE r.task_pk = $1`, pk)
	nodes, edges, detailCount, succeeded, rows := int64(v[0].(int32)), int64(v[1].(int32)), int64(v[3].(int32)), int64(v[4].(int32)), v[6].(int64)
	m, err := topology.DecodeManifest([]byte(v[2].(string)))
	if err != nil {
		t.Fatal(err)
	}
	if nodes != s.NodeCounts.RetainedTopology || edges != s.EdgeCounts.RetainedTopology || m.NodeCount != nodes ||
		detailCount != s.NodeCounts.RetainedDetail || rows != detailCount || succeeded != s.NodeCounts.Succeeded && !unreported ||
		v[5].(int64) != *s.DetailRevision || nodes == 0 || edges == 0 {
		t.Fatalf("stored topology %d/%d, detail %d rows (%d counted, %d succeeded, revision %v), summary %s", nodes, edges, rows, detailCount, succeeded, v[5], taskSum)
	}
	for attempt := range 2 { // the task row, then attempt 1's archive
		rep, err := pgstore.Verify(t.Context(), pool, pk, attempt)
		if err != nil || rep.Availability != s.Detail.Availability || len(rep.Problems) > 0 {
			t.Fatalf("verify (attempt %d): %v %+v", attempt, err, rep)
		}
	}
	t.Logf("complex: %d nodes, %d edges, %d detail rows", nodes, edges, rows)
}

// TestDurableRetryKeepsAttemptSummary: a failing run retried keeps
// attempt 1's terminal summary on its attempt row.
func TestDurableRetryKeepsAttemptSummary(t *testing.T) {
	task, row, _ := durableRun(t, Request{FastItems: 2, SlowItems: 1, FailureBranch: BranchFast, FailureItem: 1}, 2)
	if task.State != durable.StateFailed || task.Attempt != 2 {
		t.Fatalf("task %s at attempt %d", task.State, task.Attempt)
	}
	for attempt := int64(1); attempt <= 2; attempt++ {
		v := row(`SELECT a.workflow_progress_summary_json, a.workflow_run_id::text FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk
 WHERE t.task_id = $1::uuid AND a.attempt_number = $2`, task.ID, attempt)
		raw, _ := v[0].(string)
		s, err := summary.DecodeSummary([]byte(raw))
		if err != nil {
			t.Fatalf("attempt %d summary %q: %v", attempt, raw, err)
		}
		if s.RunIdentity.AttemptNumber != attempt || s.RunIdentity.RunID != v[1].(string) || s.State != summary.StateFailed ||
			s.SummaryRevision != summary.ReservedRevision {
			t.Fatalf("attempt %d archived %s", attempt, raw)
		}
	}
}

func TestMain(m *testing.M) {
	rayengine.ServeLeafIfRequested() // this test binary is the Ray leaf of the Ray test
	os.Exit(m.Run())
}
