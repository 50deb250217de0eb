package durable

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/pgledger"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk"
)

// TestBenchResume is `make bench-resume` (it runs only with
// RAYFLOW_BENCH_RESUME=1): the goals of resumable maps, each beside its
// measurement, on the local runner and, with RAYFLOW_RAY_ADDRESS, on Ray.
func TestBenchResume(t *testing.T) {
	if os.Getenv("RAYFLOW_BENCH_RESUME") != "1" {
		t.Skip("set RAYFLOW_BENCH_RESUME=1 (make bench-resume)")
	}
	runners := []struct{ name, addr string }{{"local", ""}}
	if a := os.Getenv("RAYFLOW_RAY_ADDRESS"); a != "" {
		runners = append(runners, struct{ name, addr string }{"ray", a})
	}
	const n = 10_000
	fmt.Println("| Scenario (10,000-item resumable map, window 128) | Runner | Measured | Goal | Met |")
	fmt.Println("|---|---|---|---|---|")
	row := func(scenario, runner, measured, goal string, met bool) {
		yes := "yes"
		if !met {
			yes = "**no**"
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", scenario, runner, measured, goal, yes)
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			k := resumeAfterKill(t, r.addr)
			row("kill -9 of the worker at ~50 %: items attempt 2 executes", r.name,
				fmt.Sprintf("%d (attempt 1: %d before the kill)", k.second, k.first),
				fmt.Sprintf("≤ %d (50 %% + one window)", n/2+resumeWindow), k.second <= n/2+resumeWindow)
			again := k.first + k.second - n
			row("kill -9 of the worker at ~50 %: attempt 1's executions run again", r.name, fmt.Sprint(again),
				fmt.Sprintf("≤ %d (one window in flight, a chunk waiting, a chunk being recorded)", 3*resumeWindow), again <= 3*resumeWindow)
			row("kill -9 of the worker at ~50 %: final result", r.name, fmt.Sprintf("%s at attempt %d, %s", k.task.State, k.task.Attempt, k.task.Result),
				fmt.Sprintf("an uninterrupted run's (%d)", k.want), k.equal)
			p := repairAfterFailures(t, r.addr)
			row("1 % of items fail, repair after the fix: items the repair executes", r.name,
				fmt.Sprintf("%d (origin %s, %d items recorded)", p.executed, p.origin.State, p.recorded),
				fmt.Sprintf("exactly the %d failed", p.failed), p.executed == p.failed && p.equal)
			o := resumeOverhead(t, r.addr)
			row("no-op map: wall time with resume vs without (median of 5)", r.name,
				fmt.Sprintf("%.1f ms vs %.1f ms (%+.1f %%)", ms(o.with), ms(o.without), 100*(o.with.Seconds()/o.without.Seconds()-1)),
				"≤ +10 %", o.with.Seconds() <= 1.10*o.without.Seconds())
			perChunk := float64(o.lookups+o.records) / float64(o.chunks)
			row("no-op map: ledger statements per window chunk", r.name,
				fmt.Sprintf("%.2f (%d lookups + %d records / %d chunks; +%d usage read per attempt)", perChunk, o.lookups, o.records, o.chunks, o.usage),
				"≤ 2", perChunk <= 2)
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// NoopItem is the no-op leaf of the overhead benchmark.
func NoopItem(_ context.Context, i int) (int, error) { return i, nil }

func NoopItems(_ context.Context, n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

var (
	noopMap        = sdk.Map(sdk.Step(NoopItem)).WithLimits(sdk.Limits{MaxConcurrency: resumeWindow})
	noopFlow       = sdk.Then(sdk.Step(NoopItems), noopMap)
	noopResumeFlow = sdk.Then(sdk.Step(NoopItems), noopMap.WithResume())
)

// countingPool is a real pool that counts the item ledger's statements
// by kind.
type countingPool struct {
	*pgxpool.Pool
	lookups, records, usage atomic.Int64
}

func (c *countingPool) count(sql string) {
	switch {
	case strings.HasPrefix(sql, "SELECT d.digest"):
		c.lookups.Add(1)
	case strings.HasPrefix(sql, "WITH f AS"):
		c.records.Add(1)
	case strings.HasPrefix(sql, "SELECT count(*), coalesce"):
		c.usage.Add(1)
	}
}

func (c *countingPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.count(sql)
	return c.Pool.Exec(ctx, sql, args...)
}

func (c *countingPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.count(sql)
	return c.Pool.Query(ctx, sql, args...)
}

func (c *countingPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.count(sql)
	return c.Pool.QueryRow(ctx, sql, args...)
}

type overhead struct {
	with, without                   time.Duration
	lookups, records, usage, chunks int64
}

// resumeOverhead times a no-op 10,000-item map with and without
// WithResume (median of 5 runs each, alternating, after one warm-up run
// of each), each resumable run on
// a fresh task's item ledger (so that every item runs and is recorded),
// and counts the ledger's statements of the last one.
func resumeOverhead(t *testing.T, rayAddr string) overhead {
	t.Helper()
	const n, runs = 10_000, 5
	ctx := t.Context()
	pool := pgtest.MigratedPool(t)
	var opts []sdk.RunOption
	if rayAddr != "" {
		eng, err := rayengine.New(ctx, rayengine.Options{Address: rayAddr, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		opts = append(opts, sdk.WithEngine(eng))
	}
	resumable := func() (time.Duration, *countingPool) {
		r := store.Run{Attempt: 1}
		var taskID string
		if err := store.InsertRunningTask(ctx, pool, "bench", "bench").Scan(&taskID, &r.TaskPK, &r.RunID); err != nil {
			t.Fatal(err)
		}
		q := &countingPool{Pool: pool}
		l, err := pgledger.New(q, r, pgledger.Limits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := sdk.Run(itemledger.WithLedger(ctx, l), noopResumeFlow, n, opts...); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if rows, _, err := store.LedgerUsage(ctx, pool, r.TaskPK); err != nil || rows != n {
			t.Fatalf("the resumable run recorded %d items, %v; want %d", rows, err, n)
		}
		return took, q
	}
	plain := func() time.Duration {
		start := time.Now()
		if _, err := sdk.Run(ctx, noopFlow, n, opts...); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	plain() // warm-up
	resumable()
	var with, without []time.Duration
	var last *countingPool
	for range runs {
		without = append(without, plain())
		d, q := resumable()
		with, last = append(with, d), q
	}
	return overhead{with: median(with), without: median(without), lookups: last.lookups.Load(), records: last.records.Load(),
		usage: last.usage.Load(), chunks: (n + resumeWindow - 1) / resumeWindow}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
