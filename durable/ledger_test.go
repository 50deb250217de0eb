package durable

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/sdk"
)

var probeScope = itemledger.Scope{Node: "probe", Code: sha256.Sum256([]byte("probe body"))}

// LedgerProbe uses the item ledger it finds in its context as a
// resumable map's scheduler does: it looks its key up and returns the
// recorded result, else records one and fails (so that the next attempt
// finds it).
func LedgerProbe(ctx context.Context, key string) (string, error) {
	l := itemledger.From(ctx)
	if l == nil {
		return "", Permanent(errors.New("no item ledger in the run's context"))
	}
	d := sha256.Sum256([]byte(key))
	found, err := l.Lookup(ctx, probeScope, [][32]byte{d})
	if err != nil {
		return "", err
	}
	if r, ok := found[d]; ok {
		return "reused " + string(r), nil
	}
	if kept, err := l.Record(ctx, probeScope, []itemledger.Item{{Input: d, Result: []byte("r-" + key)}}); err != nil || kept != 1 {
		return "", Permanent(fmt.Errorf("recording %s: kept %d, %v", key, kept, err))
	}
	return "", fmt.Errorf("recorded %s; this attempt fails", key)
}

func init() { Register("test.ledgerprobe", sdk.Step(LedgerProbe)) }

// Every attempt a worker runs in its process carries the task's item
// ledger, bound to the attempt: attempt 2 reads what attempt 1 recorded.
func TestAttemptsShareTheTaskLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startWorker(fastOptions())
	key := ownKey(t, "ledger")
	id := e.enqueue("test.ledgerprobe", fmt.Sprintf("%q", key), EnqueueOptions{MaxAttempts: 2})
	task := e.wait(id, 30*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || string(task.Result) != fmt.Sprintf("%q", "reused r-"+key) {
		t.Fatalf("task = %s attempt %d result %s (%s); want SUCCEEDED on attempt 2 with the result attempt 1 recorded",
			task.State, task.Attempt, task.Result, task.ErrorMessage)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_item_ledger WHERE task_pk = $1 AND attempt_number = 1`, task.PK); n != 1 {
		t.Errorf("%d ledger rows of attempt 1, want 1", n)
	}
}

// Repair accepts a FAILED, CANCELLED or LOST task and refuses every other
// state with a typed error, writing nothing.
func TestRepairStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	for _, c := range []struct {
		state State
		ok    bool
	}{
		{StateFailed, true}, {StateCancelled, true}, {StateLost, true},
		{StateQueued, false}, {StateRunning, false}, {StateCancelling, false}, {StateSucceeded, false}, {StateExpired, false},
	} {
		t.Run(string(c.state), func(t *testing.T) {
			queue := ownKey(t, "repair") // no worker claims from it
			id := e.enqueue("test.echo", `{"name":"x"}`, EnqueueOptions{Queue: queue, Priority: 7, MaxAttempts: 4, Timeout: 9 * time.Second})
			if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = $2, claimed_by = 'w', workflow_run_id = gen_random_uuid(),
 started_at = now() WHERE task_id = $1`, id, c.state); err != nil {
				t.Fatal(err)
			}
			before := e.count(`SELECT count(*) FROM rayflow_tasks`)
			repair, err := e.c.Repair(ctx, id)
			if !c.ok {
				var nr *NotRepairableError
				if !errors.Is(err, ErrNotRepairable) || !errors.As(err, &nr) || nr.State != c.state || nr.TaskID != id || repair != "" {
					t.Fatalf("Repair of a %s task = %q, %v; want a *NotRepairableError for %s", c.state, repair, err, c.state)
				}
				if after := e.count(`SELECT count(*) FROM rayflow_tasks`); after != before {
					t.Errorf("a refused repair wrote %d tasks", after-before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Repair of a %s task: %v", c.state, err)
			}
			got, err := e.c.Get(ctx, repair)
			if err != nil {
				t.Fatal(err)
			}
			want := Task{Flow: "test.echo", Queue: queue, Priority: 7, State: StateQueued, Attempt: 1, MaxAttempts: 4,
				Input: []byte(`{"name":"x"}`), TimeoutSeconds: 9, RepairOf: id}
			have := Task{Flow: got.Flow, Queue: got.Queue, Priority: got.Priority, State: got.State, Attempt: got.Attempt,
				MaxAttempts: got.MaxAttempts, Input: got.Input, TimeoutSeconds: got.TimeoutSeconds, RepairOf: got.RepairOf}
			if d := cmp.Diff(want, have); d != "" {
				t.Errorf("the repair task (-want +got):\n%s", d)
			}
		})
	}
	for _, id := range []string{"not-a-task", "00000000-0000-4000-8000-000000000000"} {
		if repair, err := e.c.Repair(ctx, id); !errors.Is(err, ErrNotFound) || repair != "" {
			t.Errorf("Repair(%q) = %q, %v; want ErrNotFound", id, repair, err)
		}
	}
}

// A repair task starts with its origin's item ledger: what the failed
// task recorded is reused, under the repair task's own attempt.
func TestRepairReusesTheOriginsLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startWorker(fastOptions())
	key := ownKey(t, "repair-ledger")
	origin := e.enqueue("test.ledgerprobe", fmt.Sprintf("%q", key), EnqueueOptions{MaxAttempts: 1})
	if task := e.wait(origin, 30*time.Second); task.State != StateFailed {
		t.Fatalf("the origin is %s (%s), want FAILED", task.State, task.ErrorMessage)
	}
	repair, err := e.c.Repair(t.Context(), origin)
	if err != nil {
		t.Fatal(err)
	}
	task := e.wait(repair, 30*time.Second)
	if task.State != StateSucceeded || task.Attempt != 1 || string(task.Result) != fmt.Sprintf("%q", "reused r-"+key) || task.RepairOf != origin {
		t.Fatalf("the repair task = %s attempt %d result %s repair of %q (%s); want SUCCEEDED on attempt 1 with the origin's recorded result",
			task.State, task.Attempt, task.Result, task.RepairOf, task.ErrorMessage)
	}
	// The origin keeps its own rows.
	if n := e.count(`SELECT count(*) FROM rayflow_item_ledger l JOIN rayflow_tasks t ON t.id = l.task_pk WHERE t.task_id = $1`, origin); n != 1 {
		t.Errorf("the origin has %d ledger rows, want 1", n)
	}
}
