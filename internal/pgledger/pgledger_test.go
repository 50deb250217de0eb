package pgledger_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/pgledger"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// counting is a real pool that counts the statements sent through it.
type counting struct {
	*pgxpool.Pool
	n atomic.Int64
}

func (c *counting) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n.Add(1)
	return c.Pool.Exec(ctx, sql, args...)
}

func (c *counting) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n.Add(1)
	return c.Pool.Query(ctx, sql, args...)
}

func (c *counting) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n.Add(1)
	return c.Pool.QueryRow(ctx, sql, args...)
}

// running inserts a RUNNING task and returns its attempt's fence.
func running(t *testing.T, pool *pgxpool.Pool) store.Run {
	t.Helper()
	r := store.Run{Attempt: 1}
	var taskID string
	if err := store.InsertRunningTask(context.Background(), pool, "ledger", "test").Scan(&taskID, &r.TaskPK, &r.RunID); err != nil {
		t.Fatal(err)
	}
	return r
}

var scope = itemledger.Scope{Node: "0.2", Code: sha256.Sum256([]byte("body v1"))}

// items are n items from index from, each with a result of size bytes.
func items(from, n, size int) []itemledger.Item {
	its := make([]itemledger.Item, n)
	for i := range its {
		its[i] = itemledger.Item{Input: sha256.Sum256(fmt.Appendf(nil, "in%d", from+i)),
			Result: bytes.Repeat([]byte{byte('a' + (from+i)%26)}, size)}
	}
	return its
}

func inputs(its []itemledger.Item) [][32]byte {
	ds := make([][32]byte, len(its))
	for i, it := range its {
		ds[i] = it.Input
	}
	return ds
}

func usage(t *testing.T, pool *pgxpool.Pool, r store.Run) (int64, int64) {
	t.Helper()
	rows, size, err := store.LedgerUsage(context.Background(), pool, r.TaskPK)
	if err != nil {
		t.Fatal(err)
	}
	return rows, size
}

func TestRecordAndLookUpOneStatementPerBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r := running(t, pool)
	q := &counting{Pool: pool}
	l, err := pgledger.New(q, r, pgledger.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := items(0, 500, 10)
	// On a task without rows, the first call reads the task's usage and
	// a lookup finds nothing without asking.
	for i, want := range []int64{1, 0} {
		if got, err := l.Lookup(ctx, scope, inputs(batch)); err != nil || len(got) != 0 {
			t.Fatalf("Lookup on an empty ledger = %d results, %v", len(got), err)
		}
		if n := q.n.Swap(0); n != want {
			t.Errorf("Lookup %d on an empty ledger sent %d statements, want %d", i+1, n, want)
		}
	}
	if kept, err := l.Record(ctx, scope, batch); err != nil || kept != 500 {
		t.Fatalf("Record = %d, %v; want 500 kept", kept, err)
	}
	if n := q.n.Swap(0); n != 1 {
		t.Errorf("Record sent %d statements, want 1", n)
	}
	if kept, err := l.Record(ctx, scope, items(500, 500, 10)); err != nil || kept != 500 {
		t.Fatalf("Record = %d, %v; want 500 kept", kept, err)
	}
	if n := q.n.Swap(0); n != 1 {
		t.Errorf("a later Record sent %d statements, want 1", n)
	}
	// A later attempt (a new Ledger) looks a chunk up in one statement:
	// recorded inputs are found, others are not.
	chunk := items(900, 200, 10)
	later, err := pgledger.New(q, store.Run{TaskPK: r.TaskPK, Attempt: 2, Gen: 1, RunID: r.RunID}, pgledger.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := later.Lookup(ctx, scope, inputs(chunk)); err != nil {
		t.Fatal(err)
	}
	if n := q.n.Swap(0); n != 2 {
		t.Errorf("the first Lookup of a later attempt sent %d statements, want 2 (usage, lookup)", n)
	}
	got, err := later.Lookup(ctx, scope, inputs(chunk))
	if err != nil {
		t.Fatal(err)
	}
	if n := q.n.Swap(0); n != 1 {
		t.Errorf("Lookup of a 200-item chunk sent %d statements, want 1", n)
	}
	want := map[[32]byte][]byte{}
	for _, it := range chunk[:100] {
		want[it.Input] = it.Result
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Lookup (-want +got):\n%s", d)
	}
	// Another code identity finds nothing.
	other := itemledger.Scope{Node: scope.Node, Code: sha256.Sum256([]byte("body v2"))}
	if got, err := later.Lookup(ctx, other, inputs(chunk)); err != nil || len(got) != 0 {
		t.Errorf("Lookup under another code identity = %d results, %v; want none", len(got), err)
	}
}

func TestStaleAttemptWritesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change string // what happens to the task after the ledger is bound
		lost   bool   // Record reports a lost fence (else: nothing kept, no error)
	}{
		{"a newer attempt", `UPDATE rayflow_tasks SET attempt_number = attempt_number + 1, execution_generation = execution_generation + 1 WHERE id = $1`, true},
		{"a new generation", `UPDATE rayflow_tasks SET execution_generation = execution_generation + 1 WHERE id = $1`, true},
		{"a new run id", `UPDATE rayflow_tasks SET workflow_run_id = gen_random_uuid() WHERE id = $1`, true},
		{"a LOST sweep", `UPDATE rayflow_tasks SET state = 'LOST' WHERE id = $1`, true},
		{"a cancellation", `UPDATE rayflow_tasks SET state = 'CANCELLING' WHERE id = $1`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.MigratedPool(t)
			r := running(t, pool)
			l, err := pgledger.New(pool, r, pgledger.Limits{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if kept, err := l.Record(ctx, scope, items(0, 3, 8)); err != nil || kept != 3 {
				t.Fatalf("Record while holding the task = %d, %v; want 3", kept, err)
			}
			if _, err := pool.Exec(ctx, c.change, r.TaskPK); err != nil {
				t.Fatal(err)
			}
			kept, err := l.Record(ctx, scope, items(3, 5, 8))
			switch {
			case c.lost && (!errors.Is(err, itemledger.ErrFenceLost) || !errors.Is(err, store.ErrStaleRun) || kept != 0):
				t.Fatalf("Record after %s = %d, %v; want 0 and an error wrapping ErrFenceLost and ErrStaleRun", c.name, kept, err)
			case !c.lost && (err != nil || kept != 0):
				t.Fatalf("Record after %s = %d, %v; want 0 kept and no error (the cancellation stops the run)", c.name, kept, err)
			}
			if rows, _ := usage(t, pool, r); rows != 3 {
				t.Errorf("after the stale Record the ledger holds %d rows, want the 3 recorded before", rows)
			}
			got, err := store.LookupItems(ctx, pool, r.TaskPK, scope.Node, scope.Code, inputs(items(0, 8, 8)))
			if err != nil || len(got) != 3 {
				t.Errorf("Lookup = %d results, %v; want the 3 recorded before", len(got), err)
			}
		})
	}
}

func TestLedgerCaps(t *testing.T) {
	t.Parallel()
	const size = 100
	for _, c := range []struct {
		name     string
		lim      pgledger.Limits
		earlier  int // rows an earlier attempt recorded
		record   int
		wantKept int
	}{
		{"rows exactly at the cap", pgledger.Limits{MaxRows: 10}, 0, 10, 10},
		{"rows one over the cap", pgledger.Limits{MaxRows: 10}, 0, 11, 10},
		{"rows at the cap with an earlier attempt's", pgledger.Limits{MaxRows: 10}, 4, 6, 6},
		{"rows one over with an earlier attempt's", pgledger.Limits{MaxRows: 10}, 4, 7, 6},
		{"bytes exactly at the cap", pgledger.Limits{MaxBytes: 10 * size}, 0, 10, 10},
		{"bytes one over the cap", pgledger.Limits{MaxBytes: 10*size + size - 1}, 0, 11, 10},
		{"bytes at the cap with an earlier attempt's", pgledger.Limits{MaxBytes: 10 * size}, 3, 7, 7},
		{"bytes one over with an earlier attempt's", pgledger.Limits{MaxBytes: 10 * size}, 3, 8, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.MigratedPool(t)
			r := running(t, pool)
			if c.earlier > 0 {
				first, err := pgledger.New(pool, r, c.lim, nil)
				if err != nil {
					t.Fatal(err)
				}
				if kept, err := first.Record(ctx, scope, items(0, c.earlier, size)); err != nil || kept != c.earlier {
					t.Fatalf("the earlier attempt's Record = %d, %v", kept, err)
				}
			}
			l, err := pgledger.New(pool, r, c.lim, nil)
			if err != nil {
				t.Fatal(err)
			}
			all := items(c.earlier, c.record, size)
			// Two batches, so that the cap holds across calls.
			half := len(all) / 2
			k1, err := l.Record(ctx, scope, all[:half])
			if err != nil {
				t.Fatal(err)
			}
			k2, err := l.Record(ctx, scope, all[half:])
			if err != nil {
				t.Fatal(err)
			}
			if k1+k2 != c.wantKept {
				t.Errorf("kept %d+%d, want %d", k1, k2, c.wantKept)
			}
			rows, bytes := usage(t, pool, r)
			if want := int64(c.earlier + c.wantKept); rows != want || bytes != want*size {
				t.Errorf("the ledger holds %d rows, %d bytes; want %d rows, %d bytes", rows, bytes, want, want*size)
			}
			// Beyond the cap nothing more is kept.
			if kept, err := l.Record(ctx, scope, items(1000, 1, size)); err != nil || kept != 0 {
				t.Errorf("Record beyond the cap = %d, %v; want 0 kept", kept, err)
			}
		})
	}
}

func TestResultOverOneMiBNeverSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r := running(t, pool)
	q := &counting{Pool: pool}
	l, err := pgledger.New(q, r, pgledger.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := items(0, 1, store.MaxLedgerResultBytes)
	over := items(1, 1, store.MaxLedgerResultBytes+1)
	if kept, err := l.Record(ctx, scope, append(at, over...)); err != nil || kept != 1 {
		t.Fatalf("Record(a result at 1 MiB, one over) = %d, %v; want 1 kept", kept, err)
	}
	q.n.Store(0)
	if kept, err := l.Record(ctx, scope, over); err != nil || kept != 0 {
		t.Fatalf("Record(a result over 1 MiB) = %d, %v; want 0 kept", kept, err)
	}
	if n := q.n.Load(); n != 0 {
		t.Errorf("a batch of only a result over 1 MiB sent %d statements, want none", n)
	}
	got, err := store.LookupItems(ctx, pool, r.TaskPK, scope.Node, scope.Code, inputs(append(at, over...)))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[[32]byte][]byte{at[0].Input: at[0].Result}, got); d != "" {
		t.Errorf("Lookup (-want +got):\n%s", d)
	}
}

func TestNewRejectsNegativeLimits(t *testing.T) {
	t.Parallel()
	for _, lim := range []pgledger.Limits{{MaxRows: -1}, {MaxBytes: -1}} {
		if _, err := pgledger.New(nil, store.Run{}, lim, nil); !errors.Is(err, pgledger.ErrInvalidLimits) {
			t.Errorf("New(%+v) = %v; want ErrInvalidLimits", lim, err)
		}
	}
}
