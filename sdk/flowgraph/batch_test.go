package flowgraph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestBatchSize(t *testing.T) {
	for _, c := range []struct{ perTask, window, want int }{
		{0, 0, 1}, {1, 0, 1}, {-3, 8, 1}, {16, 0, 16}, {16, -1, 16},
		{16, 64, 16}, {64, 16, 16}, {16, 16, 16}, {16, 1, 1}, {1024, 4096, 1024},
	} {
		m := &Map{ItemsPerTask: c.perTask}
		if got := m.BatchSize(c.window); got != c.want {
			t.Errorf("ItemsPerTask %d, window %d: BatchSize %d, want %d", c.perTask, c.window, got, c.want)
		}
	}
}

var errItem = errors.New("item failed")

func TestRunBatch(t *testing.T) {
	canceled, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stopped by the test")
	cancel(cause)
	for _, c := range []struct {
		name    string
		ctx     context.Context
		n       int
		fail    int // index that fails (-1: none)
		panicAt int // index that panics (-1: none)
		ran     []int
		wantErr func(i int, err error) bool
	}{
		{"all succeed", context.Background(), 5, -1, -1, []int{0, 1, 2, 3, 4}, nil},
		{"empty", context.Background(), 0, -1, -1, nil, nil},
		{"first fails", context.Background(), 4, 0, -1, []int{0}, nil},
		{"middle fails", context.Background(), 5, 2, -1, []int{0, 1, 2}, nil},
		{"last fails", context.Background(), 3, 2, -1, []int{0, 1, 2}, nil},
		{"panic", context.Background(), 4, -1, 1, []int{0, 1}, func(i int, err error) bool {
			var pe *PanicError
			return i != 1 || (errors.As(err, &pe) && pe.Value == "boom" && pe.Stack != "")
		}},
		{"context done first", canceled, 3, -1, -1, nil, func(_ int, err error) bool {
			return errors.Is(err, ErrNotRun) && errors.Is(err, cause)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ran, seen []int
			outs := RunBatch(c.ctx, c.n, func(_ context.Context, i int) (int, error) {
				ran = append(ran, i)
				switch i {
				case c.fail:
					return -1, fmt.Errorf("item %d: %w", i, errItem)
				case c.panicAt:
					panic("boom")
				}
				return i * 10, nil
			}, func(i int, o Outcome[int]) { seen = append(seen, i) })
			if !slices.Equal(ran, c.ran) {
				t.Fatalf("ran %v, want %v", ran, c.ran)
			}
			if len(seen) != c.n || !slices.IsSorted(seen) || (c.n > 0 && seen[c.n-1] != c.n-1) {
				t.Fatalf("each saw %v, want every index of %d in order", seen, c.n)
			}
			if len(outs) != c.n {
				t.Fatalf("%d outcomes for %d items", len(outs), c.n)
			}
			stopped := false
			for i, o := range outs {
				if o.Ran != slices.Contains(c.ran, i) {
					t.Fatalf("item %d: Ran %v", i, o.Ran)
				}
				switch {
				case !o.Ran:
					if !errors.Is(o.Err, ErrNotRun) {
						t.Fatalf("item %d was not run but its error is %v", i, o.Err)
					}
				case i == c.fail:
					if !errors.Is(o.Err, errItem) || o.Value != 0 {
						t.Fatalf("failed item %d: %v, value %d (want the item's error, zero value)", i, o.Err, o.Value)
					}
					stopped = true
				case i == c.panicAt:
					stopped = true
				default:
					if o.Err != nil || o.Value != i*10 || stopped {
						t.Fatalf("item %d: %d, %v", i, o.Value, o.Err)
					}
				}
				if c.wantErr != nil && o.Err != nil && !c.wantErr(i, o.Err) {
					t.Fatalf("item %d: unexpected error %v", i, o.Err)
				}
			}
		})
	}
}

// A context cancelled while an item runs stops the batch before the next
// item; the running item finishes with its own outcome.
func TestRunBatchStopsBeforeTheNextItem(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outs := RunBatch(ctx, 4, func(ctx context.Context, i int) (int, error) {
		if i == 1 {
			cancel()
		}
		return i, nil
	}, nil)
	for i, o := range outs {
		if want := i <= 1; o.Ran != want {
			t.Fatalf("item %d: Ran %v, want %v", i, o.Ran, want)
		}
		if i > 1 && (!errors.Is(o.Err, ErrNotRun) || !errors.Is(o.Err, context.Canceled)) {
			t.Fatalf("item %d: %v", i, o.Err)
		}
	}
}
