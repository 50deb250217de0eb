package rayjob_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/durable"
	recoverywf "github.com/rayflow/rayflow/examples/recovery/workflow"
)

// TestRayJobRecoveryAttempts: the recovery showcase under the ray_job
// runner fails at attempt 1 and 2 and succeeds at attempt 3, as in
// process: each attempt's job receives its attempt number (the input of
// a durable.AttemptInput flow, set by the runner).
func TestRayJobRecoveryAttempts(t *testing.T) {
	t.Parallel()
	e := newDurableApp(t, showcaseApp(t), "", time.Second)
	in, _ := json.Marshal(recoverywf.DefaultRequest())
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	id, err := e.c.EnqueueJSON(ctx, recoverywf.FlowName, in, durable.EnqueueOptions{Queue: "rayjob", MaxAttempts: recoverywf.MaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("waiting for %s: %v\nworker log:\n%s", id, err, e.log.String())
	}
	if task.State != durable.StateSucceeded || task.Attempt != 3 || task.Runner != "ray_job" ||
		!strings.Contains(string(task.Result), `"recovery":{"attempt":3}`) {
		t.Fatalf("task %s at attempt %d on %q: %s %s\nworker log:\n%s", task.State, task.Attempt, task.Runner, task.Result, task.ErrorMessage, e.log.String())
	}
	// The stored input is unchanged (the attempt is set for each job only).
	if strings.Contains(string(task.Input), "attempt") {
		t.Errorf("stored input %s", task.Input)
	}
	var states []string
	if err := e.pool.QueryRow(ctx, `SELECT array_agg(a.state ORDER BY a.attempt_number) FROM rayflow_task_attempts a
 JOIN rayflow_tasks t ON t.id = a.task_pk WHERE t.task_id = $1::uuid`, id).Scan(&states); err != nil {
		t.Fatal(err)
	}
	if strings.Join(states, ",") != "FAILED,FAILED,SUCCEEDED" {
		t.Errorf("attempts %v, want FAILED, FAILED, SUCCEEDED", states)
	}
}
