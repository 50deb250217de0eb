package durable

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// TestBenchFair is fair admission's row of `make bench-durable` (it runs
// only with RAYFLOW_BENCH_DURABLE=1 or =fair): tenant A enqueues 10,000
// no-op tasks, tenant B then 10, on 4 workers of the default options;
// the same run without keys beside it. It prints B's start latency (from
// enqueue to start), the throughput of the whole run and the most tasks of
// one key that ran at once (from the attempt rows) beside the goals.
func TestBenchFair(t *testing.T) {
	if m := os.Getenv("RAYFLOW_BENCH_DURABLE"); m != "1" && m != "fair" {
		t.Skip("set RAYFLOW_BENCH_DURABLE=1 (make bench-durable; =fair for this table alone)")
	}
	server := pgtest.ServerURL(t)
	const rounds, perKey = 2, 20
	type row struct {
		name  string
		keyed bool
		limit int
		runs  []fairRun
	}
	rows := []*row{{name: "no keys (FIFO)"}, {name: "keys A and B, no limit (round-robin)", keyed: true},
		{name: fmt.Sprintf("keys A and B, per-key limit %d", perKey), keyed: true, limit: perKey}}
	for range rounds { // interleaved, so that load drifts hit both alike
		for _, r := range rows {
			r.runs = append(r.runs, benchFairRun(t, server, r.keyed, r.limit))
		}
	}
	fmt.Println("| Fair admission: A enqueues 10,000 no-op tasks, then B 10; 4 workers × 10 | Runs | B start p50 ms | B start p99 ms | Tasks/s (median) | Throughput vs no keys | Go CPU µs/task | PostgreSQL CPU µs/task | Most of one key at once |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	var base float64
	for _, r := range rows {
		var p50, p99, tput, goCPU, pgCPU []float64
		most := 0
		for _, run := range r.runs {
			p50, p99, tput = append(p50, run.bP50), append(p99, run.bP99), append(tput, run.tasksPerSecond)
			goCPU, pgCPU = append(goCPU, float64(run.goCPU.Microseconds())), append(pgCPU, float64(run.pgCPU.Microseconds()))
			most = max(most, run.mostAtOnce)
		}
		slices.Sort(goCPU)
		slices.Sort(pgCPU)
		slices.Sort(p50)
		slices.Sort(p99)
		slices.Sort(tput)
		med := tput[len(tput)/2]
		if base == 0 {
			base = med
		}
		limit := "—"
		if r.limit > 0 {
			limit = fmt.Sprintf("%d (limit %d)", most, r.limit)
		}
		fmt.Printf("| %s | %d | %.0f | %.0f | %.0f | %.2f× | %.0f | %.0f | %s |\n", r.name, len(r.runs), p50[len(p50)/2], p99[len(p99)-1], med, med/base,
			goCPU[len(goCPU)/2], pgCPU[len(pgCPU)/2], limit)
	}
	fmt.Println("| goal (keys) | | | ≤ 1,000 | | ≥ 0.90× | | | ≤ the limit |")
	fmt.Println()
}

type fairRun struct {
	bP50, bP99     float64 // ms from enqueue to start of B's tasks
	tasksPerSecond float64
	mostAtOnce     int           // the most attempts of one key that ran at once
	goCPU, pgCPU   time.Duration // per task: this process's (the workers') and the database's backends'
}

func benchFairRun(t *testing.T, server string, keyed bool, limit int) fairRun {
	url := pgtest.NewDatabase(t, server)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c := NewClient(pool, nil)
	if limit > 0 {
		if err := c.SetQueueLimits(ctx, "default", QueueLimits{PerKeyRunning: limit}); err != nil {
			t.Fatal(err)
		}
	}
	ws, stop := benchWorkers(t, url, 4, false)
	defer stop()
	time.Sleep(500 * time.Millisecond) // the workers settle into idle polling
	keyA, keyB := "", ""
	if keyed {
		keyA, keyB = "A", "B"
	}
	const n, nB = 10_000, 10
	var db string
	if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	pg0, go0 := backendCPU(t, pool, db), processCPU()
	start := time.Now()
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, concurrency_key)
SELECT gen_random_uuid(), 'test.noop', i::text, nullif($2, '') FROM generate_series(1, $1) i`, n, keyA); err != nil {
		t.Fatal(err)
	}
	if err := store.Notify(ctx, pool, "q:default"); err != nil {
		t.Fatal(err)
	}
	var bIDs []string
	for i := range nB {
		id, err := c.EnqueueJSON(ctx, "test.noop", []byte(fmt.Sprint(n+i+1)), EnqueueOptions{ConcurrencyKey: keyB})
		if err != nil {
			t.Fatal(err)
		}
		bIDs = append(bIDs, id)
	}
	waitSucceeded(t, pool, n+nB, 50*time.Millisecond)
	var r fairRun
	r.goCPU = (processCPU() - go0) / (n + nB)
	if os.Getenv("RAYFLOW_BENCH_DURABLE_GROUPS") != "" {
		var cq, cl, g int64
		for _, w := range ws {
			cq, cl, g = cq+w.stats.claimQueries.Load(), cl+w.stats.claimed.Load(), g+w.stats.groups.Load()
		}
		var runMS, busy float64
		if err := pool.QueryRow(ctx, `SELECT avg(extract(epoch FROM finished_at - started_at)) * 1000,
  sum(extract(epoch FROM finished_at - started_at)) / extract(epoch FROM max(finished_at) - min(started_at)) FROM rayflow_tasks`).Scan(&runMS, &busy); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("BENCH keyed %v limit %d: claims %d (%.1f tasks each), transition groups %d, a task RUNNING %.1f ms on average, %.1f at once\n",
			keyed, limit, cq, float64(cl)/float64(max(cq, 1)), g, runMS, busy)
	}
	r.pgCPU = (backendCPU(t, pool, db) - pg0) / (n + nB)
	var last time.Time
	if err := pool.QueryRow(ctx, `SELECT max(finished_at) FROM rayflow_tasks`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	r.tasksPerSecond = float64(n+nB) / last.Sub(start).Seconds()
	rows, err := pool.Query(ctx, `SELECT extract(epoch FROM started_at - enqueued_at) * 1000 FROM rayflow_tasks WHERE task_id = ANY($1::uuid[])`, bIDs)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	r.bP50, r.bP99 = pct(lat, 0.50), pct(lat, 0.99)
	// The attempt rows, as a sweep: +1 at each start, −1 at each end (an
	// end before a start at the same instant), summed per key in time order.
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(s), 0) FROM (
  SELECT sum(d) OVER (PARTITION BY k ORDER BY ts, d ROWS UNBOUNDED PRECEDING) AS s FROM (
    SELECT t.concurrency_key AS k, a.started_at AS ts, 1 AS d FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk
      WHERE t.concurrency_key IS NOT NULL
    UNION ALL
    SELECT t.concurrency_key, a.finished_at, -1 FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk
      WHERE t.concurrency_key IS NOT NULL) e) x`).Scan(&r.mostAtOnce); err != nil {
		t.Fatal(err)
	}
	return r
}
