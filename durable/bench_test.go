package durable

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
)

// TestBenchDurable is `make bench-durable` (it runs only with
// RAYFLOW_BENCH_DURABLE=1): the reference system's polling benchmark
// (docs/operations.md#benchmarks: 100 tasks per phase enqueued every 50 ms) for 1, 4 and 8 workers with
// the default options, then a saturation run of no-op tasks.
func TestBenchDurable(t *testing.T) {
	mode := os.Getenv("RAYFLOW_BENCH_DURABLE")
	if mode != "1" && mode != "saturation" && mode != "schedule" {
		t.Skip("set RAYFLOW_BENCH_DURABLE=1 (make bench-durable; =saturation or =schedule for that table alone)")
	}
	server := pgtest.ServerURL(t)
	if mode == "1" || mode == "schedule" {
		benchScheduleTable(t, server)
		if mode == "schedule" {
			return
		}
	}
	if mode == "1" {
		fmt.Println("| Workers | Claim p50 ms | p95 ms | Idle queries/worker/s | Phase claims/s | Offered/s |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|")
		for _, workers := range []int{1, 4, 8} {
			r := benchPhase(t, server, workers)
			fmt.Printf("| %d | %.2f | %.2f | %.2f | %.1f | %.1f |\n", workers, r.p50, r.p95, r.idle, r.claimRate, r.offered)
		}
		fmt.Println()
		const runs = 3
		var rec []float64
		for range runs {
			rec = append(rec, benchCrashRecovery(t, server).Seconds())
		}
		slices.Sort(rec)
		fmt.Println("| Crash recovery, default options | Runs | Median s | Max s | Goal s |")
		fmt.Println("|---|---:|---:|---:|---:|")
		fmt.Printf("| kill -9 of a worker mid-task → attempt 2 RUNNING | %d | %.2f | %.2f | ≤ 5 |\n", runs, rec[runs/2], rec[runs-1])
		fmt.Println()
	}
	fmt.Println("| Saturation: workers × concurrency | Progress storage | No-op tasks | Wall s | Tasks/s end to end | Go CPU µs/task | PostgreSQL CPU µs/task |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	// progress: "off", "on" (the default full policy) or "terminal" (a
	// flow materialized with the terminal_only policy: summary only).
	type satCase struct {
		workers, n int
		progress   string
	}
	cases := []satCase{{1, 5000, "off"}, {4, 5000, "off"}, {8, 5000, "off"}, {1, 5000, "on"}, {4, 5000, "on"}, {8, 5000, "on"},
		{4, 5000, "terminal"}}
	if v := os.Getenv("RAYFLOW_BENCH_DURABLE_CASES"); v != "" { // e.g. "4:on:3000,8:off:5000,4:terminal:3000" (profiling)
		cases = nil
		for _, f := range strings.Split(v, ",") {
			var c satCase
			if _, err := fmt.Sscanf(strings.ReplaceAll(f, ":", " "), "%d %s %d", &c.workers, &c.progress, &c.n); err != nil {
				t.Fatalf("RAYFLOW_BENCH_DURABLE_CASES %q: %v", f, err)
			}
			cases = append(cases, c)
		}
	}
	label := map[string]string{"on": "on (default, full policy)", "off": "off", "terminal": "on, terminal_only policy (summary only)"}
	for _, c := range cases {
		flow := "test.noop"
		if c.progress == "terminal" {
			flow = "test.noop.terminal"
		}
		r := benchSaturation(t, server, c.workers, c.n, c.progress != "off", flow)
		fmt.Printf("| %d × %d | %s | %d | %.2f | %.0f | %.0f | %.0f |\n", c.workers, DefaultConcurrency, label[c.progress],
			c.n, r.wall.Seconds(), float64(c.n)/r.wall.Seconds(), r.goCPU.Seconds()*1e6/float64(c.n), r.pgCPU.Seconds()*1e6/float64(c.n))
	}
}

type phaseResult struct{ p50, p95, idle, claimRate, offered float64 }

func benchWorkers(t *testing.T, url string, n int, progress bool) ([]*Worker, func()) {
	var ws []*Worker
	var stops []func()
	for i := range n {
		o := WorkerOptions{ID: fmt.Sprintf("bench-%d", i), Logger: slog.New(slog.DiscardHandler), NoProgressStore: !progress}
		w, stop := runWorkerW(t, pgtest.PoolAt(t, url), o)
		ws = append(ws, w)
		stops = append(stops, stop)
	}
	return ws, func() {
		for _, s := range stops {
			s()
		}
	}
}

func benchPhase(t *testing.T, server string, workers int) phaseResult {
	url := pgtest.NewDatabase(t, server)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c := NewClient(pool, nil)
	ws, stop := benchWorkers(t, url, workers, true)
	defer stop()
	time.Sleep(3 * time.Second) // workers settle into idle polling
	const n, interval = 100, 50 * time.Millisecond
	start := time.Now()
	for i := range n {
		if _, err := c.EnqueueJSON(ctx, "test.noop", []byte(fmt.Sprint(10_000_000+i)), EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * interval)))
	}
	offered := float64(n) / time.Since(start).Seconds()
	waitSucceeded(t, pool, n, 20*time.Millisecond)
	rows, err := pool.Query(ctx, `SELECT extract(epoch FROM started_at - enqueued_at) * 1000 FROM rayflow_tasks`)
	if err != nil {
		t.Fatal(err)
	}
	var lat []float64
	for rows.Next() {
		var ms float64
		if err := rows.Scan(&ms); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, ms)
	}
	slices.Sort(lat)
	var span float64
	if err := pool.QueryRow(ctx, `SELECT extract(epoch FROM max(started_at) - min(started_at)) FROM rayflow_tasks`).Scan(&span); err != nil {
		t.Fatal(err)
	}
	// Idle: queries sent by the workers over 10 s with nothing to do.
	before := int64(0)
	for _, w := range ws {
		before += w.Stats().Queries()
	}
	const idle = 10 * time.Second
	time.Sleep(idle)
	after := int64(0)
	for _, w := range ws {
		after += w.Stats().Queries()
	}
	return phaseResult{p50: pct(lat, 0.50), p95: pct(lat, 0.95),
		idle: float64(after-before) / float64(workers) / idle.Seconds(), claimRate: float64(n-1) / span, offered: offered}
}

// benchCrashRecovery is the time from kill -9 of a worker process (this
// test binary, default options) running a task to the task's attempt 2
// RUNNING on another worker with the default options, idle at its
// longest poll interval.
func benchCrashRecovery(t *testing.T, server string) time.Duration {
	url := pgtest.NewDatabase(t, server)
	pool := pgtest.PoolAt(t, url)
	if _, err := Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: url, pool: pool, c: NewClient(pool, nil)}
	cmd := e.startChild("bench-doomed", true)
	id := e.enqueue("test.sleep", `50`, EnqueueOptions{})
	e.waitState(id, StateRunning, 20*time.Second)
	survivor, stop := runWorkerW(t, pgtest.PoolAt(t, url), WorkerOptions{ID: "bench-survivor", Logger: slog.New(slog.DiscardHandler)})
	defer stop()
	testwait.Until(t, 30*time.Second, "the survivor polling at its longest interval", func() bool {
		return survivor.Stats().ClaimQueries >= 7
	})
	return killAndTimeRecovery(t, pool, cmd, id)
}

// waitSucceeded polls every interval until n tasks are SUCCEEDED (an
// interval coarse enough not to weigh on what the benchmark measures).
func waitSucceeded(t *testing.T, pool *pgxpool.Pool, n int, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	err := testwait.Poll(ctx, interval, fmt.Sprintf("%d tasks SUCCEEDED", n), func(ctx context.Context) (bool, error) {
		var done int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE state = 'SUCCEEDED'`).Scan(&done)
		return done == n, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

type saturation struct{ wall, goCPU, pgCPU time.Duration }

// benchSaturation runs n queued no-op tasks with workers workers. The
// wall time ends at the last task's finished_at (same host clock), so the
// completion poll can be coarse; CPU is this process's (the workers) and
// the run database's server backends' (from /proc; 0 when not readable).
func benchSaturation(t *testing.T, server string, workers, n int, progress bool, flow string) saturation {
	url := pgtest.NewDatabase(t, server)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, queue_deadline_at)
SELECT gen_random_uuid(), $2, i::text, now() + interval '1 day' FROM generate_series(1, $1) i`, n, flow); err != nil {
		t.Fatal(err)
	}
	var db string
	if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	pg0 := backendCPU(t, pool, db)
	go0 := processCPU()
	start := time.Now()
	ws, stop := benchWorkers(t, url, workers, progress)
	defer stop()
	waitSucceeded(t, pool, n, 50*time.Millisecond)
	goCPU := processCPU() - go0
	if os.Getenv("RAYFLOW_BENCH_DURABLE_GROUPS") != "" {
		var g, n, cq, cl int64
		for _, w := range ws {
			g, n, cq, cl = g+w.stats.groups.Load(), n+w.stats.grouped.Load(), cq+w.stats.claimQueries.Load(), cl+w.stats.claimed.Load()
		}
		fmt.Printf("BENCH groups %d (%.1f transitions each), claims %d (%.1f tasks each)\n", g, float64(n)/float64(max(g, 1)), cq, float64(cl)/float64(max(cq, 1)))
	}
	pgCPU := backendCPU(t, pool, db) - pg0
	var last time.Time
	if err := pool.QueryRow(ctx, `SELECT max(finished_at) FROM rayflow_tasks`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	return saturation{wall: last.Sub(start), goCPU: goCPU, pgCPU: pgCPU}
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU sums the CPU time of db's server backends (the server runs
// on this host; backends that already exited are not counted, so pools
// must stay open until it is read).
func backendCPU(t *testing.T, pool *pgxpool.Pool, db string) time.Duration {
	rows, err := pool.Query(t.Context(), `SELECT pid FROM pg_stat_activity WHERE datname = $1`, db)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * time.Second / 100 // USER_HZ
	}
	return total
}

// benchScheduleTable prints the schedule row of make bench-durable: an
// @every 1s schedule (missed ticks: skip) fired by a worker process with
// the default options, kill -9 of that process mid-run while a second
// worker (default options) waits for the lease; 3 runs.
func benchScheduleTable(t *testing.T, server string) {
	const runs = 3
	var jitter, handOver []float64
	var ticks, dups, missed int
	for range runs {
		r := benchScheduleHandOver(t, server)
		jitter = append(jitter, r.jitterMS...)
		handOver = append(handOver, r.handOver.Seconds()*1000)
		ticks += r.ticks
		dups += r.dups
		missed += r.missed
	}
	slices.Sort(jitter)
	slices.Sort(handOver)
	fmt.Println("| Schedule @every 1s, kill -9 of the lease holder (a worker process) mid-run | Runs | Ticks | Fire jitter p50 / p99 / max ms | Duplicates | Missed | Hand-over median / max ms | Goal |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	fmt.Printf("| default options, skip policy, a second worker waiting | %d | %d | %.1f / %.1f / %.1f | %d | %d | %.1f / %.1f | jitter ≤ 1000 ms, 0 duplicates, 0 missed |\n",
		runs, ticks, pct(jitter, 0.5), pct(jitter, 0.99), jitter[len(jitter)-1], dups, missed, handOver[runs/2], handOver[runs-1])
	fmt.Println()
}

type scheduleRun struct {
	jitterMS            []float64 // task created_at − its tick, per tick
	ticks, dups, missed int
	handOver            time.Duration // kill -9 → the survivor holds the lease
}

func benchScheduleHandOver(t *testing.T, server string) scheduleRun {
	url := pgtest.NewDatabase(t, server)
	pool := pgtest.PoolAt(t, url)
	if _, err := Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: url, pool: pool, c: NewClient(pool, nil)}
	cmd := e.startChild("bench-lease-holder", true)
	testwait.Until(t, 30*time.Second, "the worker process holding the scheduler lease", func() bool { return e.schedulerPID() != 0 })
	survivor, stop := runWorkerW(t, pgtest.PoolAt(t, url), WorkerOptions{ID: "bench-survivor", Logger: slog.New(slog.DiscardHandler)})
	defer stop()
	e.addSchedule(Schedule{Name: "bench", Flow: "test.noop", Input: []byte(`1`), Cron: "@every 1s"})
	e.waitTicks("bench", 5, 30*time.Second)
	if survivor.leading.Load() {
		t.Fatal("the in-process worker took the lease before the kill")
	}
	time.Sleep(300 * time.Millisecond) // mid-way between two ticks
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for !survivor.leading.Load() {
		if time.Since(killed) > 30*time.Second {
			t.Fatal("no hand-over within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	r := scheduleRun{handOver: time.Since(killed)}
	n := len(e.scheduledTicks("bench"))
	e.waitTicks("bench", n+5, 30*time.Second)
	stop()
	rows, err := pool.Query(t.Context(), `SELECT schedule_tick, extract(epoch FROM created_at - schedule_tick)::float8 * 1000
FROM rayflow_tasks WHERE schedule_name = 'bench' ORDER BY schedule_tick`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last time.Time
	for rows.Next() {
		var tick time.Time
		var ms float64
		if err := rows.Scan(&tick, &ms); err != nil {
			t.Fatal(err)
		}
		switch d := tick.Sub(last); {
		case last.IsZero():
		case d == 0:
			r.dups++
		case d > time.Second:
			r.missed += int(d/time.Second) - 1
		}
		last = tick
		r.ticks++
		r.jitterMS = append(r.jitterMS, ms)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}
