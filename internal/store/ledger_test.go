package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

func ledgerEntries(node string, code [32]byte, from, n int) []store.LedgerEntry {
	es := make([]store.LedgerEntry, n)
	for i := range es {
		es[i] = store.LedgerEntry{
			LedgerKey: store.LedgerKey{NodeID: node, Code: code, Input: sha256.Sum256(fmt.Appendf(nil, "in%d", from+i))},
			Result:    fmt.Appendf(nil, `{"out":%d}`, from+i),
		}
	}
	return es
}

func digests(es []store.LedgerEntry) [][32]byte {
	ds := make([][32]byte, len(es))
	for i, e := range es {
		ds[i] = e.Input
	}
	return ds
}

func TestLedgerRecordAndLookUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r, _ := runningRun(t, pool, "ledger")
	code := sha256.Sum256([]byte("code v1"))
	first := ledgerEntries("0.1", code, 0, 100)
	var firstBytes int64
	for _, e := range first {
		firstBytes += int64(len(e.Result))
	}
	if n, b, err := store.RecordItems(ctx, pool, r, first); err != nil || n != 100 || b != firstBytes {
		t.Fatalf("RecordItems = %d rows, %d bytes, %v; want 100 rows, %d bytes", n, b, err, firstBytes)
	}
	// An entry already recorded keeps its first result.
	again := ledgerEntries("0.1", code, 90, 20)
	again[0].Result = []byte(`"changed"`)
	var newBytes int64
	for _, e := range again[10:] {
		newBytes += int64(len(e.Result))
	}
	if n, b, err := store.RecordItems(ctx, pool, r, again); err != nil || n != 10 || b != newBytes {
		t.Fatalf("RecordItems again = %d rows, %d bytes, %v; want 10 new rows, %d bytes", n, b, err, newBytes)
	}
	got, err := store.LookupItems(ctx, pool, r.TaskPK, "0.1", code, digests(ledgerEntries("0.1", code, 95, 30)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[[32]byte][]byte{}
	for _, e := range ledgerEntries("0.1", code, 95, 15) {
		want[e.Input] = e.Result
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("LookupItems (-want +got):\n%s", d)
	}
	// Another code identity or node finds nothing.
	other := sha256.Sum256([]byte("code v2"))
	for _, c := range []struct {
		node string
		code [32]byte
	}{{"0.1", other}, {"0.2", code}} {
		got, err := store.LookupItems(ctx, pool, r.TaskPK, c.node, c.code, digests(first))
		if err != nil || len(got) != 0 {
			t.Errorf("LookupItems(%s, %x) = %d rows, %v; want none", c.node, c.code[:4], len(got), err)
		}
	}
	rows, size, err := store.LedgerUsage(ctx, pool, r.TaskPK)
	if err != nil || rows != 110 {
		t.Fatalf("LedgerUsage = %d rows, %d bytes, %v; want 110 rows", rows, size, err)
	}
	var wantBytes int64
	for _, e := range ledgerEntries("0.1", code, 0, 110) {
		wantBytes += int64(len(e.Result))
	}
	if size != wantBytes {
		t.Errorf("LedgerUsage bytes = %d, want %d", size, wantBytes)
	}
}

func TestLedgerStaleRunWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r, _ := runningRun(t, pool, "ledger")
	code := sha256.Sum256([]byte("code"))
	for name, stale := range map[string]store.Run{
		"older attempt":    {TaskPK: r.TaskPK, Attempt: r.Attempt + 1, Gen: r.Gen, RunID: r.RunID},
		"other generation": {TaskPK: r.TaskPK, Attempt: r.Attempt, Gen: r.Gen + 1, RunID: r.RunID},
		"other run":        {TaskPK: r.TaskPK, Attempt: r.Attempt, Gen: r.Gen, RunID: "00000000-0000-4000-8000-000000000000"},
	} {
		n, _, err := store.RecordItems(ctx, pool, stale, ledgerEntries("0.1", code, 0, 5))
		if !errors.Is(err, store.ErrStaleRun) || n != 0 {
			t.Errorf("%s: RecordItems = %d, %v; want ErrStaleRun", name, n, err)
		}
	}
	// A run whose task has left RUNNING is stale too.
	if _, err := pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'CANCELLING' WHERE id = $1`, r.TaskPK); err != nil {
		t.Fatal(err)
	}
	if n, _, err := store.RecordItems(ctx, pool, r, ledgerEntries("0.1", code, 0, 5)); !errors.Is(err, store.ErrStaleRun) || n != 0 {
		t.Errorf("cancelling: RecordItems = %d, %v; want ErrStaleRun", n, err)
	}
	if rows, _, err := store.LedgerUsage(ctx, pool, r.TaskPK); err != nil || rows != 0 {
		t.Errorf("LedgerUsage = %d rows, %v; want none written", rows, err)
	}
}

func TestLedgerResultCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r, _ := runningRun(t, pool, "ledger")
	code := sha256.Sum256([]byte("code"))
	es := ledgerEntries("0.1", code, 0, 2)
	es[0].Result = bytes.Repeat([]byte("x"), store.MaxLedgerResultBytes)
	if n, _, err := store.RecordItems(ctx, pool, r, es[:1]); err != nil || n != 1 {
		t.Fatalf("a result at the cap: RecordItems = %d, %v; want 1 row", n, err)
	}
	es[1].Result = bytes.Repeat([]byte("x"), store.MaxLedgerResultBytes+1)
	if n, _, err := store.RecordItems(ctx, pool, r, es[1:]); !errors.Is(err, store.ErrLedgerResultTooLarge) || n != 0 {
		t.Fatalf("a result one byte over the cap: RecordItems = %d, %v; want ErrLedgerResultTooLarge", n, err)
	}
	// The column refuses it too, whatever a writer checks.
	_, err := pool.Exec(ctx, `INSERT INTO rayflow_item_ledger (task_pk, node_id, code_identity, input_digest, result, attempt_number, execution_generation)
 VALUES ($1, '0.1', $2, $3, $4, 1, 0)`, r.TaskPK, code[:], es[1].Input[:], es[1].Result)
	if sqlState(err) != "23514" {
		t.Errorf("inserting a result over the cap: %v; want a check violation", err)
	}
}

func TestLedgerCopyAndCascade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	origin, _ := runningRun(t, pool, "ledger")
	repair, _ := runningRun(t, pool, "ledger")
	code := sha256.Sum256([]byte("code"))
	es := ledgerEntries("0.1", code, 0, 50)
	if _, _, err := store.RecordItems(ctx, pool, origin, es); err != nil {
		t.Fatal(err)
	}
	if n, err := store.CopyItems(ctx, pool, origin.TaskPK, repair.TaskPK); err != nil || n != 50 {
		t.Fatalf("CopyItems = %d, %v; want 50", n, err)
	}
	got, err := store.LookupItems(ctx, pool, repair.TaskPK, "0.1", code, digests(es))
	if err != nil || len(got) != 50 {
		t.Fatalf("the repair's LookupItems = %d rows, %v; want 50", len(got), err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM rayflow_tasks WHERE id = $1`, origin.TaskPK); err != nil {
		t.Fatal(err)
	}
	if rows, _, err := store.LedgerUsage(ctx, pool, origin.TaskPK); err != nil || rows != 0 {
		t.Errorf("after deleting the task: %d ledger rows, %v; want none", rows, err)
	}
	if rows, _, err := store.LedgerUsage(ctx, pool, repair.TaskPK); err != nil || rows != 50 {
		t.Errorf("the repair's ledger after its origin is deleted: %d rows, %v; want 50", rows, err)
	}
}

// The item ledger follows the progress retention of its task's last run:
// cleanup deletes it with that run's expired detail once the task has
// ended, and keeps it while the task may still run again.
func TestLedgerFollowsProgressRetention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		task    string // the task's change after its attempt 1 ran
		deleted bool
	}{
		{"succeeded", `UPDATE rayflow_tasks SET state = 'SUCCEEDED', finished_at = now() WHERE id = $1`, true},
		{"failed", `UPDATE rayflow_tasks SET state = 'FAILED', finished_at = now() WHERE id = $1`, true},
		{"cancelled", `UPDATE rayflow_tasks SET state = 'CANCELLED', finished_at = now() WHERE id = $1`, true},
		{"lost", `UPDATE rayflow_tasks SET state = 'LOST', finished_at = now() WHERE id = $1`, true},
		{"queued for attempt 2", `UPDATE rayflow_tasks SET state = 'QUEUED', attempt_number = 2, execution_generation = 1,
 workflow_run_id = NULL, claimed_by = NULL, started_at = NULL WHERE id = $1`, false},
		{"failed at attempt 2", `UPDATE rayflow_tasks SET state = 'FAILED', attempt_number = 2, execution_generation = 1, finished_at = now() WHERE id = $1`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.MigratedPool(t)
			r, _ := runningRun(t, pool, "ledger")
			other, _ := runningRun(t, pool, "ledger")
			code := sha256.Sum256([]byte("code"))
			for _, run := range []store.Run{r, other} {
				if _, _, err := store.RecordItems(ctx, pool, run, ledgerEntries("0.1", code, 0, 5)); err != nil {
					t.Fatal(err)
				}
			}
			b := &pgx.Batch{}
			store.QueueRunInsert(b, r, 1)
			br := pool.SendBatch(ctx, b)
			var runPK int64
			var inserted bool
			var one int64
			if err := br.QueryRow().Scan(&runPK, &inserted, &one); err != nil {
				t.Fatal(err)
			}
			br.Close()
			if _, err := pool.Exec(ctx, c.task, r.TaskPK); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `UPDATE rayflow_progress_runs SET detail_expires_at = now() - interval '1 day' WHERE id = $1`, runPK); err != nil {
				t.Fatal(err)
			}
			now, err := store.Now(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			var gone bool
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				gone, err = store.CleanupDelete(ctx, tx, store.CleanupExpiredRun, now, fmt.Sprint(runPK))
				return err
			})
			if err != nil || !gone {
				t.Fatalf("CleanupDelete of the expired run = %v, %v; want deleted", gone, err)
			}
			want := int64(5)
			if c.deleted {
				want = 0
			}
			if rows, _, err := store.LedgerUsage(ctx, pool, r.TaskPK); err != nil || rows != want {
				t.Errorf("the task's ledger holds %d rows, %v; want %d", rows, err, want)
			}
			if rows, _, err := store.LedgerUsage(ctx, pool, other.TaskPK); err != nil || rows != 5 {
				t.Errorf("another task's ledger holds %d rows, %v; want its 5", rows, err)
			}
		})
	}
}
