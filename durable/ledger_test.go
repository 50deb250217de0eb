package durable

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

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
