package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/durable/durabletest"
	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/examples/recovery/workflow"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/syncbuf"
)

const wantLog = "attempt 1: FAILED at build_order_batch: rayflow: step 0.1.g0.0 (" + ofPath + ".BuildOrderBatch): orderfulfillment: build_order_batch failed (deterministic failure of attempt 1)\n" +
	"attempt 2: FAILED at join_order_inputs: rayflow: step 0.2 (" + ofPath + ".JoinOrderInputs): orderfulfillment: join_order_inputs failed (deterministic failure of attempt 2)\n" +
	"attempt 3: SUCCEEDED\n"

const ofPath = "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"

const wantResult = `{"order_id":"order-1","items":1,"reserved_units":1,"recommendation":"ship","fulfilled":true,"sinks":["primary","audit","notification"],"recovery":{"attempt":3}}` + "\n"

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out bytes.Buffer
	var errb syncbuf.Buffer // the Ray engine copies its processes' stderr into it concurrently
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestThreeAttempts(t *testing.T) {
	t.Parallel()
	code, out, errs := runCmd(t, "-work", "0")
	if code != 0 || out != wantResult || !strings.HasSuffix(errs, wantLog) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

func TestFailureStage(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]string{0: "build_order_batch", 1: "build_order_batch", 2: "join_order_inputs", 3: "", 4: ""} {
		if got := recoveryflow.FailureStage(attempt); got != want {
			t.Errorf("attempt %d fails at %q, want %q", attempt, got, want)
		}
	}
	if code, _, _ := runCmd(t, "-items", "0"); code != 2 {
		t.Errorf("-items 0: exit %d", code)
	}
}

// TestOnRay: the three attempts on the shared Ray cluster.
func TestOnRay(t *testing.T) {
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if testing.Short() || addr == "" {
		t.Skip("needs Ray (RAYFLOW_RAY_ADDRESS) and not -short")
	}
	code, out, errs := runCmd(t, "-work", "0", "-ray", addr)
	if code != 0 || out != wantResult {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	// The Ray engine copies the cluster's log lines (those of earlier runs'
	// actors too) into stderr between the command's own lines.
	if diff := cmp.Diff(wantLog, attemptLines(errs)); diff != "" {
		t.Fatalf("attempt lines on stderr (-want +got):\n%s\nstderr %s", diff, errs)
	}
}

// attemptLines keeps the command's per-attempt lines of stderr, in order.
func attemptLines(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "attempt ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestDurableOnRay: one durable task, three attempts, on a rayflow worker
// with the Ray engine: FAILED, FAILED, SUCCEEDED archived, each attempt's
// own terminal progress summary.
func TestDurableOnRay(t *testing.T) {
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if testing.Short() || addr == "" {
		t.Skip("needs Ray (RAYFLOW_RAY_ADDRESS), PostgreSQL and not -short")
	}
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	e, err := rayengine.New(ctx, rayengine.Options{Address: addr, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	reg := durable.NewRegistry()
	durable.RegisterIn(reg, recoveryflow.FlowName, recoveryflow.Workflow)
	o := durabletest.QuickOptions()
	o.Registry, o.Engine = reg, e
	durabletest.StartWorker(t, pool, o)
	c := durable.NewClient(pool, reg)
	id, err := durable.Enqueue(ctx, c, recoveryflow.Workflow, recoveryflow.Request{ItemCount: 1}, durable.EnqueueOptions{MaxAttempts: recoveryflow.MaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	wait, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	task, err := c.Wait(wait, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != durable.StateSucceeded || task.Attempt != 3 || !strings.Contains(string(task.Result), `"recovery":{"attempt":3}`) {
		t.Fatalf("task %s at attempt %d: %s %s", task.State, task.Attempt, task.Result, task.ErrorMessage)
	}
	rows, err := pool.Query(ctx, `SELECT a.attempt_number, a.state, a.workflow_progress_summary_json FROM rayflow_task_attempts a
 JOIN rayflow_tasks t ON t.id = a.task_pk WHERE t.task_id = $1::uuid ORDER BY a.attempt_number`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := []summary.State{summary.StateFailed, summary.StateFailed, summary.StateSucceeded}
	n := 0
	for rows.Next() {
		var attempt int
		var state string
		var raw *string
		if err := rows.Scan(&attempt, &state, &raw); err != nil {
			t.Fatal(err)
		}
		if raw == nil {
			t.Fatalf("attempt %d (%s): no summary", attempt, state)
		}
		s, err := summary.DecodeSummary([]byte(*raw))
		if err != nil || attempt != n+1 || s.State != want[n] || s.RunIdentity.AttemptNumber != int64(attempt) {
			t.Fatalf("attempt %d (%s): summary %v %v", attempt, state, s.State, err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d archived attempts", n)
	}
}

func TestMain(m *testing.M) {
	rayengine.ServeLeafIfRequested() // this test binary is the Ray leaf of the Ray tests
	os.Exit(m.Run())
}

// The attempt lines are kept in order whatever the cluster logs between
// them, and nothing else is kept.
func TestAttemptLines(t *testing.T) {
	t.Parallel()
	rayLine := "\x1b[36m(pid=gcs_server)\x1b[0m [2026-12-03 09:20:26,602 E 6531 6531] (gcs_server) gcs_actor_scheduler.cc:538: Failed to kill actor 42e7\n"
	lines := strings.SplitAfter(wantLog, "\n")
	for _, tc := range []struct {
		name, stderr, want string
	}{
		{"only the attempts", wantLog, wantLog},
		{"cluster lines between them", rayLine + lines[0] + rayLine + lines[1] + rayLine + lines[2] + rayLine, wantLog},
		{"an attempt missing", lines[0] + rayLine + lines[2], lines[0] + lines[2]},
		{"no attempt", rayLine, ""},
		{"a last line without newline", rayLine + "attempt 3: SUCCEEDED", "attempt 3: SUCCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, attemptLines(tc.stderr)); diff != "" {
				t.Errorf("attemptLines (-want +got):\n%s", diff)
			}
		})
	}
}
