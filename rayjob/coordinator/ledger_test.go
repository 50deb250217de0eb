package coordinator

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk"
)

// A job's run carries the item ledger of its durable attempt, bound to
// the attempt's fence: what it records is the attempt's, and a job whose
// attempt was superseded writes nothing.
func TestRunCarriesTheAttemptsLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	id := sdk.RunIdentity{SchemaVersion: 1, AttemptNumber: 1}
	var taskID string
	if err := store.InsertRunningTask(ctx, pool, "job", "test").Scan(&taskID, &id.TaskExecutionPK, &id.RunID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		identity sdk.RunIdentity
		lost     bool
	}{
		{"the attempt", id, false},
		{"a superseded attempt", sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: id.TaskExecutionPK, AttemptNumber: 1, ExecutionGeneration: 7, RunID: id.RunID}, true},
	} {
		rctx, err := withLedger(ctx, pool, c.identity)
		if err != nil {
			t.Fatal(err)
		}
		l := itemledger.From(rctx)
		if l == nil {
			t.Fatalf("%s: no ledger in the run's context", c.name)
		}
		scope := itemledger.Scope{Node: "0.1", Code: sha256.Sum256([]byte("body"))}
		kept, err := l.Record(rctx, scope, []itemledger.Item{{Input: sha256.Sum256([]byte(c.name)), Result: []byte(`1`)}})
		if c.lost != errors.Is(err, itemledger.ErrFenceLost) || kept != map[bool]int{false: 1, true: 0}[c.lost] {
			t.Errorf("%s: Record = %d, %v", c.name, kept, err)
		}
	}
	rows, _, err := store.LedgerUsage(ctx, pool, id.TaskExecutionPK)
	if err != nil || rows != 1 {
		t.Errorf("the task's ledger holds %d rows, %v; want the attempt's 1", rows, err)
	}
}
