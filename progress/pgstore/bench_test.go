package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

func walLSN(t *testing.T, pool *pgxpool.Pool) int64 {
	var b int64
	if err := pool.QueryRow(context.Background(), `SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func relSize(t *testing.T, pool *pgxpool.Pool) int64 {
	var b int64
	if err := pool.QueryRow(context.Background(), `SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
 WHERE c.relkind = 'r' AND (c.relname LIKE 'rayflow_progress_%' OR c.relname = 'rayflow_tasks')`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBenchProgress is make bench-progress (RAYFLOW_BENCH_PROGRESS=1): the
// reference system's table (docs/operations.md#benchmarks) for chains of 1k–100k observed nodes, and the peak
// heap of preparing 250k observed nodes / 2M edges.
func TestBenchProgress(t *testing.T) {
	if os.Getenv("RAYFLOW_BENCH_PROGRESS") == "" {
		t.Skip("set RAYFLOW_BENCH_PROGRESS=1 (make bench-progress)")
	}
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	// Bounded preparation: 250,000 observed nodes, 2,000,000 edges, streamed.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var m runtime.MemStats
		var p uint64
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				peak <- p
				return
			case <-tk.C:
				runtime.ReadMemStats(&m)
				p = max(p, m.HeapInuse)
			}
		}
	}()
	t0 := time.Now()
	nodes := func(yield func(topology.Node) bool) {
		for i := range 250000 {
			if !yield(topology.Node{NodeID: fmt.Sprintf("n%07d", i), Kind: topology.NodeKindTask, Label: "leaf", RuntimeEnv: nil, RayOptions: nil}) {
				return
			}
		}
	}
	edges := func(yield func(topology.Edge) bool) {
		for i := range 2000000 {
			s, d := i%250000, (i%250000+i/250000+1)%250000 // 8 distinct successors per node
			if !yield(topology.Edge{Source: fmt.Sprintf("n%07d", s), Target: fmt.Sprintf("n%07d", d)}) {
				return
			}
		}
	}
	top, err := pgstore.PrepareTopology(newTask(t, pool), 1, "bench-1", nodes, edges, pgstore.V1())
	close(stop)
	pk := <-peak
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	var rss string
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range slices.Collect(splitLines(string(b))) {
			if len(l) > 6 && l[:6] == "VmHWM:" {
				rss = l
			}
		}
	}
	t.Logf("prepare 250,000 nodes / 2,000,000 edges: %.0f ms, retained %d/%d, %d pages, reasons %v, peak heap in use %.1f MiB (before %.1f MiB), process %s",
		ms(time.Since(t0)), top.NodeCount, top.EdgeCount, len(top.Pages), top.Reasons, float64(pk)/(1<<20), float64(before.HeapInuse)/(1<<20), rss)

	t.Logf("| Observed | Retained | Initial prepare ms | Initial publish ms | Sparse publish ms (median of 9) | Pages | Initial WAL B | Initial rel. delta B | Sparse SQL stmts | Sparse WAL B |")
	for _, n := range []int{1000, 10000, 25000, 50000, 100000} {
		id := newTask(t, pool)
		sink := newSink(t, pool)
		c := pgstoretest.NewChain(id, n)
		p := c.Pub(true, false)
		if n > 25000 { // the collector retains 25,000; storage sees what it retained
			p.Nodes, p.Edges, p.Details = p.Nodes[:25000], p.Edges[:24999], p.Details[:25000]
			p.Summary.NodeCounts.RetainedTopology, p.Summary.NodeCounts.RetainedDetail = 25000, 25000
			p.Summary.EdgeCounts.RetainedTopology = 24999
			c.States = c.States[:25000]
			p = c.Pub(true, false)
		}
		w0, r0 := walLSN(t, pool), relSize(t, pool)
		if err := sink.Publish(ctx, p); err != nil {
			t.Fatal(err)
		}
		st := sink.LastStats()
		w1, r1 := walLSN(t, pool), relSize(t, pool)
		// Sparse updates: one node PENDING→RUNNING each, sparseReps times
		// (different nodes); the median publish time and the worst, the
		// statements and WAL of the first.
		const sparseReps = 9
		var sparse []float64
		var ss pgstore.PublishStats
		var w2, w3 int64
		for i := range sparseReps {
			c.States[len(c.States)/2+i] = detail.NodeStateRunning
			sp := c.Pub(false, false)
			wa := walLSN(t, pool)
			if err := sink.Publish(ctx, sp); err != nil {
				t.Fatal(err)
			}
			wb := walLSN(t, pool)
			st := sink.LastStats()
			if i == 0 {
				ss, w2, w3 = st, wa, wb
			}
			sparse = append(sparse, ms(st.Publish))
		}
		slices.Sort(sparse)
		t.Logf("%d: stage %.1f ms, transaction %.1f ms; sparse publish ms over %d: %v", n, ms(st.Stage), ms(st.Publish), sparseReps, sparse)
		t.Logf("| %d | %d | %.1f | %.1f | %.3f (max %.3f) | %d | %d | %d | %d | %d |", n, min(n, 25000), ms(st.Prepare), ms(st.Stage+st.Publish),
			sparse[sparseReps/2], sparse[sparseReps-1], st.Pages, w1-w0, r1-r0, ss.Statements, w3-w2)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func splitLines(s string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := range len(s) {
			if s[i] == '\n' {
				if !yield(s[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}
