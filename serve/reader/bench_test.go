package reader_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
	reader "github.com/rayflow/rayflow/serve/reader"
)

// BenchmarkReads measures every read on chain graphs of 1k, 10k and 25k
// nodes, page 100 (the reference system's shape, docs/operations.md#benchmarks); p50/p95 are reported as
// metrics, with the SQL statements one read sends (BEGIN and COMMIT
// included). "next" pages start from a cursor in the middle of the run.
// RAYFLOW_BENCH_READ_COLD=1 turns the decoded-record cache off.
func BenchmarkReads(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	type result struct{ p50, p95, sql float64 }
	results := map[string]map[int]result{} // read → size → result (the last, full run of each)
	sizes := []int{1000, 10000, 25000}
	var order []string
	defer func() {
		if len(results) == 0 {
			return
		}
		fmt.Printf("\n| read | 1,000 p50/p95 ms | 10,000 | 25,000 | SQL/read | reference 1,000 / 10,000 / 25,000 |\n|---|---:|---:|---:|---:|---|\n")
		for _, name := range order {
			fmt.Printf("| %s |", name)
			sql := 0.0
			for _, n := range sizes {
				r := results[name][n]
				fmt.Printf(" %.3f/%.3f |", r.p50, r.p95)
				sql = r.sql
			}
			fmt.Printf(" %.0f | %s |\n", sql, seedReads[name])
		}
	}()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			pool, taskID, _ := pgstoretest.NewPublished(b, n, 2)
			// The reads go through a pool that counts the statements sent.
			cfg, err := pgxpool.ParseConfig(pool.Config().ConnString())
			if err != nil {
				b.Fatal(err)
			}
			var stmts atomic.Int64
			cfg.ConnConfig.Tracer = countTracer{&stmts}
			rpool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(rpool.Close)
			svc := newService(b, rpool)
			if os.Getenv("RAYFLOW_BENCH_READ_COLD") != "" {
				svc.SetCacheBytes(0) // every read decodes and validates every record
			}
			svc.Now = time.Now
			// Cursors halfway through each collection.
			mid := func(f func(cur string) (*string, error)) string {
				cur := ""
				for range n / 200 {
					next, err := f(cur)
					if err != nil || next == nil {
						b.Fatal(err)
					}
					cur = *next
				}
				return cur
			}
			nodeCur := mid(func(cur string) (*string, error) {
				p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: cur})
				if err != nil {
					return nil, err
				}
				return p.NextCursor, nil
			})
			edgeCur := mid(func(cur string) (*string, error) {
				p, err := svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: cur})
				if err != nil {
					return nil, err
				}
				return p.NextCursor, nil
			})
			detCur := mid(func(cur string) (*string, error) {
				p, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: cur})
				if err != nil {
					return nil, err
				}
				return p.NextCursor, nil
			})
			reads := []struct {
				name string
				f    func() error
			}{
				{"summary", func() error { _, err := svc.Summary(ctx, "all", taskID, 0); return err }},
				{"nodes_first", func() error {
					_, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID})
					return err
				}},
				{"nodes_next", func() error {
					_, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: nodeCur})
					return err
				}},
				{"edges_first", func() error {
					_, err := svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID})
					return err
				}},
				{"edges_next", func() error {
					_, err := svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: edgeCur})
					return err
				}},
				{"details_first", func() error {
					_, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID})
					return err
				}},
				{"details_next", func() error {
					_, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: detCur})
					return err
				}},
				{"details_state", func() error {
					_, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, State: "SUCCEEDED"})
					return err
				}},
				{"single_node", func() error {
					_, err := svc.Node(ctx, "all", taskID, 0, pgstoretest.NodeID(n/2))
					return err
				}},
			}
			for _, r := range reads {
				b.Run(r.name, func(b *testing.B) {
					before := stmts.Load()
					if err := r.f(); err != nil { // warm-up
						b.Fatal(err)
					}
					sql := stmts.Load() - before
					ds := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for range b.N {
						t := time.Now()
						if err := r.f(); err != nil {
							b.Fatal(err)
						}
						ds = append(ds, time.Since(t))
					}
					b.StopTimer()
					slices.Sort(ds)
					b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, "p95-ms")
					b.ReportMetric(float64(sql), "sql/read")
					if results[r.name] == nil {
						results[r.name] = map[int]result{}
						order = append(order, r.name)
					}
					results[r.name][n] = result{float64(ds[len(ds)/2].Microseconds()) / 1000, float64(ds[len(ds)*95/100].Microseconds()) / 1000, float64(sql)}
				})
			}
		})
	}
}

// countTracer counts the statements a pool sends (BEGIN and COMMIT too).
type countTracer struct{ n *atomic.Int64 }

func (c countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// seedReads are the reference system's published p50/p95 (ms) of its reads
// (docs/operations.md#benchmarks).
var seedReads = map[string]string{
	"summary":       "1.439/1.738, 1.422/1.544, 2.552/3.686",
	"nodes_first":   "20.266/41.646, 20.233/20.685, 23.641/30.345",
	"nodes_next":    "22.184/28.095, 22.258/24.247, 22.612/27.420",
	"edges_first":   "20.582/25.617, 16.846/18.092, 19.444/30.027",
	"edges_next":    "16.626/16.818, 17.189/17.461, 29.475/31.836",
	"details_first": "20.498/25.670, 24.053/30.378, 30.516/32.888",
	"details_next":  "20.389/20.539, 33.928/35.329, 41.156/59.480",
	"details_state": "20.191/21.215, 24.118/24.497, 32.876/33.640",
	"single_node":   "8.539/9.717, 8.630/9.441, 9.138/9.804",
}
