package durable

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRunSucceeds(t *testing.T) {
	e := newEnv(t)
	e.startWorker(fastOptions())
	id := e.enqueue("test.echo", `{"name":"ray"}`, EnqueueOptions{})
	task := e.wait(id, 20*time.Second)
	if task.State != StateSucceeded {
		t.Fatalf("state %s (%s: %s)", task.State, task.ErrorType, task.ErrorMessage)
	}
	var got string
	if err := json.Unmarshal(task.Result, &got); err != nil || got != "hello ray" {
		t.Fatalf("result %s (%v)", task.Result, err)
	}
	if task.Attempt != 1 || task.Generation != 1 || task.RunID == "" || task.PinnedAttempt != 1 || task.PlanFingerprint == "" {
		t.Fatalf("attempt %d generation %d run %q pinned %d fp %q", task.Attempt, task.Generation, task.RunID, task.PinnedAttempt, task.PlanFingerprint)
	}
	if len(task.Attempts) != 1 || task.Attempts[0].State != StateSucceeded || task.Attempts[0].RunID != task.RunID ||
		string(task.Attempts[0].Result) != string(task.Result) {
		t.Fatalf("attempts %+v", task.Attempts)
	}
}
