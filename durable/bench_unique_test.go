package durable

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/pgtest"
)

// TestBenchUnique is the unique-enqueue part of `make bench-durable`
// (RAYFLOW_BENCH_DURABLE=1, or =unique for it alone): plain and unique
// enqueues side by side in one run on one database, in alternating
// blocks so that both see the same server load, each figure printed
// beside its goal; and the checked row that 8 concurrent enqueues of one
// key make one task, round after round.
func TestBenchUnique(t *testing.T) {
	mode := os.Getenv("RAYFLOW_BENCH_DURABLE")
	if mode != "1" && mode != "unique" {
		t.Skip("set RAYFLOW_BENCH_DURABLE=1 (make bench-durable; =unique for the unique-enqueue table alone)")
	}
	url := pgtest.NewDatabase(t, pgtest.ServerURL(t))
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c := NewClient(pool, nil)
	later := time.Now().Add(24 * time.Hour) // no worker: the tasks stay QUEUED
	const blocks, perBlock = 10, 200
	var plain, unique, dup []float64 // µs per enqueue
	n := 0
	enqueue := func(o EnqueueOptions) float64 {
		n++
		start := time.Now()
		if _, err := c.EnqueueJSONDetail(ctx, "test.noop", []byte(fmt.Sprint(n)), o); err != nil {
			t.Fatal(err)
		}
		return float64(time.Since(start).Microseconds())
	}
	for range perBlock { // warm-up: connections, plans, caches
		enqueue(EnqueueOptions{RunAfter: later})
		enqueue(EnqueueOptions{RunAfter: later, Unique: Unique{Key: fmt.Sprintf("warm-%d", n)}})
	}
	for b := range blocks {
		first, second := &plain, &unique
		if b%2 == 1 {
			first, second = second, first
		}
		for _, into := range []*[]float64{first, second} {
			for range perBlock {
				o := EnqueueOptions{RunAfter: later}
				if into == &unique {
					o.Unique = Unique{Key: fmt.Sprintf("key-%d", n)}
				}
				*into = append(*into, enqueue(o))
			}
		}
		for range perBlock / 4 {
			dup = append(dup, enqueue(EnqueueOptions{RunAfter: later, Unique: Unique{Key: "dup"}}))
		}
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	median := func(xs []float64) float64 {
		ys := slices.Clone(xs)
		slices.Sort(ys)
		return ys[len(ys)/2]
	}
	// The goal is judged on the medians: on a shared machine a few
	// stalls of seconds move the means more than the statement does.
	ratio, meanRatio := median(unique)/median(plain), mean(unique)/mean(plain)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Println("| Unique enqueue (sequential, one connection at a time) | Enqueues | Mean µs | Median µs | Goal | Verdict |")
	fmt.Println("|---|---:|---:|---:|---|---|")
	fmt.Printf("| plain enqueue | %d | %.0f | %.0f | reference | |\n", len(plain), mean(plain), median(plain))
	fmt.Printf("| unique enqueue, new key | %d | %.0f | %.0f | median ≤ 1.20 × plain's: %.2f × (means %.2f ×) | %s |\n",
		len(unique), mean(unique), median(unique), ratio, meanRatio, verdict(ratio <= 1.20))
	fmt.Printf("| unique enqueue, held key (duplicate) | %d | %.0f | %.0f | none (returns the holder) | |\n", len(dup), mean(dup), median(dup))
	// The checked row: 8 concurrent enqueues of one key, 50 rounds.
	const rounds, workers = 50, 8
	good := 0
	for r := range rounds {
		key := fmt.Sprintf("race-%d", r)
		ids := make([]string, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ids[i], errs[i] = c.EnqueueJSON(ctx, "test.noop", []byte(fmt.Sprint(i)), EnqueueOptions{RunAfter: later, Unique: Unique{Key: key}})
			}()
		}
		close(start)
		wg.Wait()
		var rows int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE unique_key = $1`, key).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		ok := rows == 1
		for i := range workers {
			ok = ok && errs[i] == nil && ids[i] == ids[0]
		}
		if ok {
			good++
		} else {
			t.Errorf("round %d: %d tasks for one key, ids %v, errors %v", r, rows, ids, errs)
		}
	}
	fmt.Println()
	fmt.Println("| Concurrent duplicates | Rounds | Rounds with one task, one id | Goal | Verdict |")
	fmt.Println("|---|---:|---:|---|---|")
	fmt.Printf("| %d concurrent enqueues of one key yield one task | %d | %d | all | %s |\n", workers, rounds, good, verdict(good == rounds))
	fmt.Println()
}
