package executor_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/executor"
	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/itemledger/itemledgertest"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// squares is a resumable backend: item v's result is v*v (its encoded
// input and result are decimal text), or an error for the item failAt.
// It counts the items it runs and the most it runs at once.
type squares struct {
	failAt  int // -1: none
	big     int // results of items ≥ big are padded past any small cap (0: none)
	runs    atomic.Int64
	mu      sync.Mutex
	running int
	peak    int
}

func (s *squares) Item(_ context.Context, _ int, v int) (int, error) {
	s.runs.Add(1)
	s.mu.Lock()
	s.running++
	s.peak = max(s.peak, s.running)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running--
		s.mu.Unlock()
	}()
	if v == s.failAt {
		return 0, errors.New("deterministic failure")
	}
	return v * v, nil
}

func (s *squares) Batch(ctx context.Context, base int, items []int, each func(int, int, error)) {
	for j, v := range items {
		out, err := s.Item(ctx, base+j, v)
		each(j, out, err)
		if err != nil {
			return
		}
	}
}
func (*squares) Discard(int, int)                            {}
func (*squares) Abort(context.Context, error, time.Duration) {}

func (*squares) Input(v int) ([]byte, error) { return []byte(strconv.Itoa(v)), nil }
func (s *squares) Result(_ context.Context, _ int, out int) ([]byte, error) {
	b := []byte(strconv.Itoa(out))
	if s.big > 0 && out >= s.big*s.big {
		b = append(b, make([]byte, 100)...)
	}
	return b, nil
}
func (*squares) Reuse(_ context.Context, _ int, result []byte) (int, error) {
	n := len(result)
	for n > 0 && result[n-1] == 0 {
		n--
	}
	return strconv.Atoi(string(result[:n]))
}

// orderSink collects results and the order it got them in.
type orderSink struct {
	results []int
	order   []int
}

func (s *orderSink) Add(_ context.Context, index int, v int) error {
	for len(s.results) <= index {
		s.results = append(s.results, 0)
	}
	s.results[index] = v
	s.order = append(s.order, index)
	return nil
}

func (s *orderSink) Finish(_ context.Context, n int) ([]int, error) { return s.results[:n], nil }

func seqOf(n int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := range n {
			if !yield(i, nil) {
				return
			}
		}
	}
}

func wantSquares(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i * i
	}
	return out
}

// failingLedger fails every call with err.
type failingLedger struct{ err error }

func (l failingLedger) Lookup(context.Context, itemledger.Scope, [][32]byte) (map[[32]byte][]byte, error) {
	return nil, l.err
}
func (l failingLedger) Record(context.Context, itemledger.Scope, []itemledger.Item) (int, error) {
	return 0, l.err
}

func resumeLimits(l itemledger.Ledger, window, maxItems, capBytes int) executor.Limits {
	return executor.Limits{Node: "0.1", Window: window, MaxItems: maxItems, Resume: &executor.Resume{
		Ledger: l, Scope: itemledger.Scope{Node: "0.1", Code: [32]byte{1}}, MaxResultBytes: capBytes}}
}

// A resumable map's first run records every item's result in batches (at
// most 2 ledger statements per window chunk), a second run reuses them all
// without running one, and a run that failed at an item leaves the items
// before it for the next run, which runs only the others.
func TestResumeScheduler(t *testing.T) {
	const n = 1000
	cases := []struct {
		name    string
		window  int
		batch   int
		ordered bool
		inOrder bool
		indexed bool
	}{
		{name: "window 16", window: 16},
		{name: "window 16, indexed", window: 16, indexed: true},
		{name: "window 1", window: 1},
		{name: "eager", window: 0},
		{name: "batched by 4", window: 16, batch: 4},
		{name: "ordered fold", window: 16, ordered: true, inOrder: true},
		{name: "ordered sink", window: 16, ordered: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunk := c.window
			if chunk <= 0 {
				chunk = executor.MaxLedgerChunk
			}
			chunks := (n + chunk - 1) / chunk
			run := func(l itemledger.Ledger, b *squares) ([]int, []progress.MapCounters, *orderSink, error) {
				lim := resumeLimits(l, c.window, n, 64)
				lim.BatchSize, lim.Ordered, lim.InOrder = c.batch, c.ordered, c.inOrder
				var reports []progress.MapCounters
				var mu sync.Mutex
				report := func(m progress.MapCounters) { mu.Lock(); reports = append(reports, m); mu.Unlock() }
				sink := &orderSink{}
				var out []int
				var err error
				if c.indexed {
					out, err = executor.RunIndexed(context.Background(), lim, n, func(i int) int { return i }, executor.Backend[int, int](b), executor.Sink[int, []int](sink), report)
				} else {
					out, err = executor.Run(context.Background(), lim, seqOf(n), executor.Backend[int, int](b), executor.Sink[int, []int](sink), report)
				}
				return out, reports, sink, err
			}
			mem := &itemledgertest.Memory{}
			// An attempt failing at item 700.
			first := &squares{failAt: 700}
			if _, _, _, err := run(mem, first); err == nil {
				t.Fatal("the first run did not fail")
			}
			kept := mem.Entries()
			if c.window > 0 && kept < 700-c.window {
				t.Fatalf("the failed run kept %d results, want at least %d (the items before the failing one, less a window)", kept, 700-c.window)
			}
			// The retry runs only the items without a result.
			mem.ResetCalls()
			second := &squares{failAt: -1}
			out, reports, sink, err := run(mem, second)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(wantSquares(n), out); d != "" {
				t.Fatalf("the resumed result differs from an uninterrupted run's (-want +got):\n%s", d)
			}
			if got := int(second.runs.Load()); got != n-kept {
				t.Fatalf("the retry ran %d items, want %d (the %d without a result)", got, n-kept, n-kept)
			}
			lookups, records := mem.Calls()
			if lookups > chunks || records > chunks+1 {
				t.Fatalf("%d lookups and %d records for %d chunks of %d: more than 2 statements per window chunk", lookups, records, chunks, chunk)
			}
			if c.window > 0 && second.peak > c.window {
				t.Fatalf("%d items ran at once, window %d", second.peak, c.window)
			}
			if c.inOrder && !slices.IsSorted(sink.order) {
				t.Fatal("an in-order sink got the items out of order")
			}
			last := reports[len(reports)-1]
			if want := (progress.MapCounters{Node: "0.1", Admitted: n, Completed: n, Exhausted: true, Reused: kept}); last != want {
				t.Fatalf("final counters %+v, want %+v", last, want)
			}
			// A third run reuses every item.
			mem.ResetCalls()
			third := &squares{failAt: -1}
			out, _, _, err = run(mem, third)
			if err != nil || !slices.Equal(out, wantSquares(n)) {
				t.Fatalf("third run: %v", err)
			}
			if got := third.runs.Load(); got != 0 {
				t.Fatalf("the third run ran %d items, want 0", got)
			}
			if lookups, records := mem.Calls(); lookups > chunks || records != 0 {
				t.Fatalf("third run: %d lookups, %d records; want ≤ %d and 0", lookups, records, chunks)
			}
		})
	}
}

// The edges of a resumable map: MaxItems counts reused items (exactly
// MaxItems pass, one more fails), a result over the cap is not kept, the
// fence lost stops the run with ErrFenceLost, and a ledger that fails
// otherwise only loses its entries.
func TestResumeEdges(t *testing.T) {
	ctx := context.Background()
	fill := func(n int) *itemledgertest.Memory {
		mem := &itemledgertest.Memory{}
		if _, err := executor.Run(ctx, resumeLimits(mem, 8, 0, 0), seqOf(n), executor.Backend[int, int](&squares{failAt: -1}), executor.Sink[int, []int](&orderSink{}), nil); err != nil {
			t.Fatal(err)
		}
		return mem
	}
	t.Run("MaxItems exactly, all reused", func(t *testing.T) {
		mem := fill(100)
		b := &squares{failAt: -1}
		out, err := executor.Run(ctx, resumeLimits(mem, 8, 100, 0), seqOf(100), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil)
		if err != nil || !slices.Equal(out, wantSquares(100)) || b.runs.Load() != 0 {
			t.Fatalf("err %v, %d runs", err, b.runs.Load())
		}
	})
	t.Run("MaxItems+1, all reused", func(t *testing.T) {
		mem := fill(101)
		b := &squares{failAt: -1}
		_, err := executor.Run(ctx, resumeLimits(mem, 8, 100, 0), seqOf(101), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil)
		var mi *flowgraph.MaxItemsError
		if !errors.As(err, &mi) || mi.MaxItems != 100 {
			t.Fatalf("err = %v, want a MaxItemsError at 100", err)
		}
	})
	t.Run("result cap", func(t *testing.T) {
		for _, c := range []struct {
			name     string
			capBytes int
			rerun    int64
		}{
			// Items ≥ 90 have results padded by 100 bytes (at most 104).
			{"at the largest result", 104, 0},
			{"one under it", 103, 10},
			{"no cap", 0, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				mem := &itemledgertest.Memory{}
				run := func() *squares {
					b := &squares{failAt: -1, big: 90}
					out, err := executor.Run(ctx, resumeLimits(mem, 8, 0, c.capBytes), seqOf(100), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil)
					if err != nil || !slices.Equal(out, wantSquares(100)) {
						t.Fatalf("run: %v", err)
					}
					return b
				}
				run()
				if got := run().runs.Load(); got != c.rerun {
					t.Fatalf("the second run ran %d items, want %d", got, c.rerun)
				}
			})
		}
	})
	t.Run("fence lost", func(t *testing.T) {
		mem := &itemledgertest.Memory{}
		mem.LoseFence()
		b := &squares{failAt: -1}
		_, err := executor.Run(ctx, resumeLimits(mem, 8, 0, 0), seqOf(100), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil)
		if !errors.Is(err, itemledger.ErrFenceLost) {
			t.Fatalf("err = %v, want ErrFenceLost", err)
		}
		// The first Record (after 8 items) reports the lost fence while
		// the map goes on: a few windows of items run, not the 100.
		if got := b.runs.Load(); got > 4*8 {
			t.Fatalf("%d items ran after the fence was lost at the first chunk (window 8)", got)
		}
	})
	t.Run("a failing ledger", func(t *testing.T) {
		b := &squares{failAt: -1}
		out, err := executor.Run(ctx, resumeLimits(failingLedger{errors.New("down")}, 8, 0, 0), seqOf(100), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil)
		if err != nil || !slices.Equal(out, wantSquares(100)) || b.runs.Load() != 100 {
			t.Fatalf("err %v, %d runs", err, b.runs.Load())
		}
	})
	t.Run("no resume: no ledger work", func(t *testing.T) {
		mem := fill(100)
		mem.ResetCalls()
		b := &squares{failAt: -1}
		lim := resumeLimits(mem, 8, 0, 0)
		lim.Resume = nil
		if _, err := executor.Run(ctx, lim, seqOf(100), executor.Backend[int, int](b), executor.Sink[int, []int](&orderSink{}), nil); err != nil {
			t.Fatal(err)
		}
		if l, r := mem.Calls(); l != 0 || r != 0 || b.runs.Load() != 100 {
			t.Fatalf("%d lookups, %d records, %d runs", l, r, b.runs.Load())
		}
	})
}
