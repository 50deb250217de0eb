package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// TestQueueAdmission: over 100,000 tasks (half of them keyed, over 1,000
// keys and three queues, one with a per-key limit of 3; a seventh of
// them queued and a seventh running), the admission gauges of every
// queue are the counts of the tasks, and the statement reads the keyed
// queued and running tasks through partial indexes: no row of an ended
// task (whose number only grows).
func TestQueueAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	seedAdmission(t, pool)
	rate, burst := 2.5, 5
	if err := store.SetQueueLimits(ctx, pool, "limits-only", nil, &rate, &burst); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rayflow_tasks`); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Queue       string
		PerKey      *int64
		Rate        *float64
		Burst       *int64
		Tokens      *float64
		KeyedQueued int64
		KeysRunning int64
		KeysAtLimit int64
	}
	rows, err := store.QueueAdmission(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	// The expected counts, from the tasks themselves.
	want := map[string][3]int64{}
	crows, err := pool.Query(ctx, `SELECT queue_name, count(*) FILTER (WHERE state = 'QUEUED'),
  count(DISTINCT concurrency_key) FILTER (WHERE state IN ('RUNNING', 'CANCELLING')),
  (SELECT count(*) FROM (SELECT 1 FROM rayflow_tasks r WHERE r.queue_name = t.queue_name AND r.queue_name = 'gpu'
     AND r.state IN ('RUNNING', 'CANCELLING') AND r.concurrency_key IS NOT NULL GROUP BY r.concurrency_key HAVING count(*) >= 3) a)
FROM rayflow_tasks t WHERE concurrency_key IS NOT NULL GROUP BY queue_name`)
	if err != nil {
		t.Fatal(err)
	}
	for crows.Next() {
		var q string
		var v [3]int64
		if err := crows.Scan(&q, &v[0], &v[1], &v[2]); err != nil {
			t.Fatal(err)
		}
		want[q] = v
	}
	if err := crows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d rows, want batch, default, gpu and limits-only: %+v", len(got), got)
	}
	for _, r := range got {
		if w := want[r.Queue]; [3]int64{r.KeyedQueued, r.KeysRunning, r.KeysAtLimit} != w {
			t.Errorf("%s: keyed queued, keys running, at limit %d, %d, %d; want %v", r.Queue, r.KeyedQueued, r.KeysRunning, r.KeysAtLimit, w)
		}
		switch r.Queue {
		case "gpu":
			if r.PerKey == nil || *r.PerKey != 3 || r.Rate != nil || r.Burst != nil || r.Tokens != nil || r.KeysAtLimit == 0 {
				t.Errorf("gpu: %+v", r)
			}
		case "limits-only":
			if r.PerKey != nil || r.Rate == nil || *r.Rate != 2.5 || r.Burst == nil || *r.Burst != 5 || r.Tokens == nil || *r.Tokens != 5 {
				t.Errorf("limits-only: %+v", r)
			}
		default:
			if r.PerKey != nil || r.Rate != nil || r.KeysAtLimit != 0 || r.KeyedQueued == 0 {
				t.Errorf("%s: %+v", r.Queue, r)
			}
		}
	}

	var raw []byte
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+store.QueueAdmissionSQL).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN: %v %s", err, raw)
	}
	var keyed, active int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE concurrency_key IS NOT NULL), count(*) FROM rayflow_tasks
  WHERE state IN ('QUEUED', 'RUNNING', 'CANCELLING')`).Scan(&keyed, &active); err != nil {
		t.Fatal(err)
	}
	var read float64
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == "rayflow_tasks" {
			read += (n.Rows + n.Removed) * n.Loops
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plan[0].Plan)
	// The planner may read a queued task without a key (through another
	// partial index of queued tasks), never an ended one.
	if read < float64(keyed) || read > float64(active) {
		t.Errorf("read %v task rows, want at least the %d keyed queued and running tasks and at most the %d queued and running of 100,000\n%s",
			read, keyed, active, raw)
	}
	t.Logf("read %v task rows: %d keyed queued and running, %d queued and running, of 100,000", read, keyed, active)
}

// BenchmarkQueueAdmission measures the statement of one /metrics
// scrape's fair admission gauges over 100,000 tasks, 14,286 of them
// keyed and queued or running over 1,000 keys and three queues.
func BenchmarkQueueAdmission(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.MigratedPool(b)
	seedAdmission(b, pool)
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rayflow_tasks`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rows, err := store.QueueAdmission(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if rows.Err() != nil || n != 3 {
			b.Fatalf("%d rows: %v", n, rows.Err())
		}
	}
}

// seedAdmission inserts 100,000 tasks over three queues in every state,
// half of them keyed over 1,000 keys, and gives queue gpu a per-key limit
// of 3.
func seedAdmission(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, state, input_json, claimed_by,
  workflow_run_id, started_at, concurrency_key)
SELECT gen_random_uuid(), 'flow', (ARRAY['default', 'gpu', 'batch'])[1 + g % 3],
  (ARRAY['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'FAILED', 'QUEUED', 'RUNNING', 'CANCELLED'])[1 + g % 7], '{}', 'w',
  gen_random_uuid(), now(), CASE WHEN g % 2 = 0 THEN 'k' || (g % 1000) END
FROM generate_series(1, 100000) g`); err != nil {
		tb.Fatal(err)
	}
	if err := store.SetQueueLimits(ctx, pool, "gpu", ptr(3), nil, nil); err != nil {
		tb.Fatal(err)
	}
}
