package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// enqueueKeyed inserts a task of queue with concurrency key key ("" for
// none) and returns its pk.
func enqueueKeyed(t *testing.T, pool *pgxpool.Pool, queue, key string) int64 {
	t.Helper()
	nt := store.NewTask{TaskID: newTaskID(t, pool), Flow: "flow", Queue: queue, MaxAttempts: 1, InputJSON: `1`}
	if key != "" {
		nt.ConcurrencyKey = &key
	}
	pk, err := store.InsertTask(context.Background(), pool, nt)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// keyedClaim is one keyed claim: its tasks and its marker rows' answers.
type keyedClaim struct {
	tasks   []claimedRow
	marker  int64 // -1 keyed, -2 plain
	wait    float64
	cursor  string
	orphans bool
}

func claimAll(t *testing.T, pool *pgxpool.Pool, c store.Claim) keyedClaim {
	t.Helper()
	rows, err := store.ClaimTasks(context.Background(), pool, c)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[claimedRow])
	if err != nil {
		t.Fatal(err)
	}
	var k keyedClaim
	for _, r := range all {
		switch {
		case r.PK > 0:
			k.tasks = append(k.tasks, r)
		case r.PK == 0:
			k.orphans = true
		default:
			k.marker, k.wait, k.cursor = r.PK, r.Waited, r.Key
		}
	}
	return k
}

func finish(t *testing.T, pool *pgxpool.Pool, r claimedRow) {
	t.Helper()
	f := store.Fence{PK: r.PK, States: running, Attempt: r.Attempt, Gen: r.Gen, RunID: &r.RunID}
	tag, err := store.Transition(context.Background(), pool, f, store.Outcome{State: "SUCCEEDED", Result: ptr(`1`)})
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("finishing task %d: %v, %d rows", r.PK, err, tag.RowsAffected())
	}
}

// The plain claim takes only tasks without a key, nothing of a queue with
// limits, and its marker says which claim the queue needs.
func TestPlainClaimMarkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	plain := enqueueKeyed(t, pool, "plain", "")
	got := claimAll(t, pool, store.Claim{Queue: "plain", N: 5, Worker: "w", Runner: "local"})
	if len(got.tasks) != 1 || got.tasks[0].PK != plain || got.marker != -2 {
		t.Errorf("plain queue: %+v, want task %d and marker -2", got, plain)
	}
	enqueueKeyed(t, pool, "mixed", "tenant")
	unkeyed := enqueueKeyed(t, pool, "mixed", "")
	got = claimAll(t, pool, store.Claim{Queue: "mixed", N: 5, Worker: "w", Runner: "local"})
	if len(got.tasks) != 1 || got.tasks[0].PK != unkeyed || got.marker != -1 {
		t.Errorf("queue with a keyed task: %+v, want the unkeyed task %d and marker -1", got, unkeyed)
	}
	enqueueKeyed(t, pool, "limited", "")
	if err := store.SetQueueLimits(ctx, pool, "limited", nil, ptr(100.0), ptr(100)); err != nil {
		t.Fatal(err)
	}
	got = claimAll(t, pool, store.Claim{Queue: "limited", N: 5, Worker: "w", Runner: "local"})
	if len(got.tasks) != 0 || got.marker != -1 {
		t.Errorf("queue with limits, plain claim: %+v, want nothing and marker -1", got)
	}
	got = claimAll(t, pool, store.Claim{Queue: "limited", N: 5, Worker: "w", Runner: "local", Keyed: true})
	if len(got.tasks) != 1 || got.marker != -1 {
		t.Errorf("queue with limits, keyed claim: %+v, want its task and marker -1", got)
	}
}

// Keyed claims go round-robin across keys from the claimer's cursor,
// tasks without a key first in each round, and never past a key's limit.
func TestKeyedClaimRoundRobinWithinLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	keyOf := map[int64]string{}
	for _, k := range []string{"a", "a", "a", "b", "b", "b", "c", "c", "c", ""} {
		keyOf[enqueueKeyed(t, pool, "q", k)] = k
	}
	if err := store.SetQueueLimits(ctx, pool, "q", ptr(2), nil, nil); err != nil {
		t.Fatal(err)
	}
	var order []string
	var claimed []claimedRow
	cursor := ""
	for range 9 {
		got := claimAll(t, pool, store.Claim{Queue: "q", N: 1, Worker: "w", Runner: "local", Keyed: true, Cursor: cursor})
		if got.marker != -1 {
			t.Fatalf("marker %d, want -1", got.marker)
		}
		cursor = got.cursor
		for _, r := range got.tasks {
			order = append(order, keyOf[r.PK])
			if r.Key != keyOf[r.PK] {
				t.Errorf("task %d claimed with key %q, enqueued with %q", r.PK, r.Key, keyOf[r.PK])
			}
			claimed = append(claimed, r)
		}
	}
	if want := []string{"", "a", "b", "c", "a", "b", "c"}; !cmp.Equal(order, want) {
		t.Fatalf("claim order %q, want %q (then every key at its limit of 2)", order, want)
	}
	// One of a's tasks ends: a may start one more, and only a.
	finish(t, pool, claimed[1])
	got := claimAll(t, pool, store.Claim{Queue: "q", N: 5, Worker: "w", Runner: "local", Keyed: true, Cursor: cursor})
	if len(got.tasks) != 1 || got.tasks[0].Key != "a" {
		t.Fatalf("after one of a's tasks ended: %+v, want a's last task", got.tasks)
	}
	// Raising the limit lets b and c start their last tasks in one claim.
	if err := store.SetQueueLimits(ctx, pool, "q", ptr(3), nil, nil); err != nil {
		t.Fatal(err)
	}
	got = claimAll(t, pool, store.Claim{Queue: "q", N: 5, Worker: "w", Runner: "local", Keyed: true, Cursor: got.cursor})
	if keys := []string{got.tasks[0].Key, got.tasks[1].Key}; len(got.tasks) != 2 || keys[0] == keys[1] || keys[0] == "a" || keys[1] == "a" {
		t.Fatalf("after raising the limit: %+v, want b's and c's last tasks", got.tasks)
	}
}

// A claim visits at most 256 keys; the cursor then moves past the last
// visited key, so keys beyond it are served by the next claim.
func TestKeyedClaimCursorPassesFullKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	const keys = 300
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, input_json, concurrency_key)
SELECT gen_random_uuid(), 'flow', 'many', '1', format('k%s', lpad(i::text, 3, '0')) FROM generate_series(1, $1) i, generate_series(1, 2)`, keys); err != nil {
		t.Fatal(err)
	}
	if err := store.SetQueueLimits(ctx, pool, "many", ptr(1), nil, nil); err != nil {
		t.Fatal(err)
	}
	first := claimAll(t, pool, store.Claim{Queue: "many", N: 1000, Worker: "w", Runner: "local", Keyed: true})
	if len(first.tasks) != 256 || first.cursor != "k256" {
		t.Fatalf("first claim: %d tasks, cursor %q; want 256 tasks (one per key visited), cursor k256", len(first.tasks), first.cursor)
	}
	second := claimAll(t, pool, store.Claim{Queue: "many", N: 1000, Worker: "w", Runner: "local", Keyed: true, Cursor: first.cursor})
	if len(second.tasks) != keys-256 {
		t.Fatalf("second claim: %d tasks, want %d (the keys past the cursor)", len(second.tasks), keys-256)
	}
	seen := map[string]bool{}
	for _, r := range append(first.tasks, second.tasks...) {
		if seen[r.Key] {
			t.Fatalf("key %s claimed twice past its limit of 1", r.Key)
		}
		seen[r.Key] = true
	}
}

// The start rate is a token bucket: a burst, then nothing until a token
// refills, and the marker says when that is.
func TestKeyedClaimStartRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	for range 6 {
		enqueueKeyed(t, pool, "rated", "")
	}
	if err := store.SetQueueLimits(ctx, pool, "rated", nil, ptr(1.0), ptr(2)); err != nil {
		t.Fatal(err)
	}
	c := store.Claim{Queue: "rated", N: 10, Worker: "w", Runner: "local", Keyed: true}
	if got := claimAll(t, pool, c); len(got.tasks) != 2 {
		t.Fatalf("first claim took %d tasks, want the burst of 2", len(got.tasks))
	}
	got := claimAll(t, pool, c)
	if len(got.tasks) != 0 || got.wait <= 0 || got.wait > 1 {
		t.Fatalf("claim after the burst: %d tasks, next token in %.3f s; want none, within (0, 1] s", len(got.tasks), got.wait)
	}
	time.Sleep(time.Duration(got.wait*float64(time.Second)) + 50*time.Millisecond)
	if got := claimAll(t, pool, c); len(got.tasks) != 1 {
		t.Fatalf("claim once a token refilled: %d tasks, want 1", len(got.tasks))
	}
}

// Many claimers at once never start more than a key's limit: checked
// from the attempt rows (no two intervals of one key overlap beyond the
// limit) and, while they claim, from the running tasks.
func TestKeyedClaimExactUnderConcurrentClaimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	const limit, keys, perKey, claimers = 3, 5, 30, 8
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, input_json, concurrency_key)
SELECT gen_random_uuid(), 'flow', 'busy', '1', format('k%s', i % $1) FROM generate_series(1, $2) i`, keys, keys*perKey); err != nil {
		t.Fatal(err)
	}
	if err := store.SetQueueLimits(ctx, pool, "busy", ptr(limit), nil, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var overLimit []string
	var mu sync.Mutex
	go func() { // watch the running tasks while the claimers run
		for {
			select {
			case <-done:
				return
			default:
			}
			var k string
			var n int
			err := pool.QueryRow(ctx, `SELECT concurrency_key, count(*) FROM rayflow_tasks WHERE queue_name = 'busy'
  AND state IN ('RUNNING', 'CANCELLING') GROUP BY 1 ORDER BY 2 DESC LIMIT 1`).Scan(&k, &n)
			if err == nil && n > limit {
				mu.Lock()
				if len(overLimit) == 5 {
					overLimit = append(overLimit, "…")
				}
				if len(overLimit) >= 5 {
					mu.Unlock()
					continue
				}
				overLimit = append(overLimit, fmt.Sprintf("%s ran %d", k, n))
				mu.Unlock()
			}
		}
	}()
	for i := range claimers {
		wg.Go(func() {
			cursor := ""
			var mine []claimedRow
			for idle := 0; idle < 50; {
				got := claimAll(t, pool, store.Claim{Queue: "busy", N: 1 + rand.IntN(4), Worker: fmt.Sprint("w", i),
					Runner: "local", Keyed: true, Cursor: cursor})
				cursor = got.cursor
				mine = append(mine, got.tasks...)
				if len(got.tasks) == 0 {
					idle++
				}
				// End a random part of this claimer's running tasks.
				rand.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
				end := rand.IntN(len(mine) + 1)
				for _, r := range mine[:end] {
					finish(t, pool, r)
				}
				mine = mine[end:]
				var left int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE queue_name = 'busy' AND state <> 'SUCCEEDED'`).Scan(&left); err != nil {
					t.Error(err)
					return
				}
				if left == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE queue_name = 'busy' AND state <> 'SUCCEEDED'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d tasks not run (%v)", left, err)
	}
	if len(overLimit) > 0 {
		t.Errorf("running tasks over the limit of %d: %v", limit, overLimit)
	}
	// The attempt rows: the most attempts of one key that ran at once.
	var maxAtOnce int
	if err := pool.QueryRow(ctx, `SELECT max(n) FROM (
  SELECT t.concurrency_key, (SELECT count(*) FROM rayflow_task_attempts b JOIN rayflow_tasks u ON u.id = b.task_pk
     WHERE u.concurrency_key = t.concurrency_key AND b.started_at <= a.started_at AND b.finished_at > a.started_at) AS n
  FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk WHERE t.queue_name = 'busy') x`).Scan(&maxAtOnce); err != nil {
		t.Fatal(err)
	}
	if maxAtOnce > limit || maxAtOnce < 2 {
		t.Errorf("attempt rows: at most %d attempts of one key ran at once, want 2…%d (the limit, and some overlap)", maxAtOnce, limit)
	}
}

// A start rate added to a queue that had only a per-key limit starts with
// a full bucket; a lower burst caps the tokens of a bucket that had a rate.
func TestSetQueueLimitsBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	tokens := func() float64 {
		var v *float64
		if err := store.QueueStatus(ctx, pool, "b").Scan(new(any), new(any), new(any), &v, new(any), new(any), new(any), new(any), new(any)); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return -1
		}
		return *v
	}
	if err := store.SetQueueLimits(ctx, pool, "b", ptr(1), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.SetQueueLimits(ctx, pool, "b", ptr(1), ptr(0.001), ptr(500)); err != nil {
		t.Fatal(err)
	}
	if got := tokens(); got < 500 || got > 500.01 {
		t.Fatalf("a rate added to a queue with limits: %v tokens, want the full burst 500", got)
	}
	if err := store.SetQueueLimits(ctx, pool, "b", ptr(1), ptr(0.001), ptr(7)); err != nil {
		t.Fatal(err)
	}
	if got := tokens(); got < 7 || got > 7.01 {
		t.Fatalf("a lower burst: %v tokens, want 7", got)
	}
}
