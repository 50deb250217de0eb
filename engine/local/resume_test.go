package local_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/itemledger/itemledgertest"
	"github.com/rayflow/rayflow/sdk"
)

// resumeRuns counts the executions of ResumeSquare; resumeFailAt is the
// item it fails at (-1: none).
var (
	resumeRuns   atomic.Int64
	resumeFailAt atomic.Int64
)

func ResumeBuild(_ context.Context, n int) ([]int, error) {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	return items, nil
}

// ResumeSquare squares v, failing at item resumeFailAt; items from 990 on
// return a long string (over a 64-byte cap).
func ResumeSquare(_ context.Context, v int) (string, error) {
	resumeRuns.Add(1)
	if int64(v) == resumeFailAt.Load() {
		return "", fmt.Errorf("item %d: %w", v, errBoom)
	}
	if v >= 990 {
		return fmt.Sprintf("%d%0100d", v*v, 0), nil
	}
	return fmt.Sprint(v * v), nil
}

func ResumeJoin(_ context.Context, vs []string) (string, error) {
	return fmt.Sprint(len(vs), vs[0], vs[len(vs)-1], vs[500]), nil
}

func resumeFlow(version string) sdk.Flow[int, string] {
	var opts []sdk.StepOption
	if version != "" {
		opts = append(opts, sdk.CodeVersion(version))
	}
	return sdk.Chain3(sdk.Step(ResumeBuild, sdk.CodeVersion("1")),
		sdk.Map(sdk.Step(ResumeSquare, opts...)).WithLimits(sdk.Limits{MaxConcurrency: 16, MaxItems: 1000}).WithResume(sdk.ResumeResultCap(64)),
		sdk.Step(ResumeJoin))
}

// runResume runs flow on 1,000 items with ledger l, failing at failAt,
// and returns the result and how many items ran.
func runResume(t *testing.T, l itemledger.Ledger, flow sdk.Flow[int, string], failAt int) (string, int, error) {
	t.Helper()
	resumeRuns.Store(0)
	resumeFailAt.Store(int64(failAt))
	ctx := context.Background()
	if l != nil {
		ctx = itemledger.WithLedger(ctx, l)
	}
	out, err := sdk.Run(ctx, flow, 1000)
	return out, int(resumeRuns.Load()), err
}

// A resumable 1,000-item map run in process: an attempt that fails at item
// 700 keeps the results of the items before it; the next attempt runs
// only the items without one (and the 10 whose results are over the cap)
// and returns what an uninterrupted run returns; an unchanged declared
// version reuses every item, a changed one reruns them all; a lost fence
// stops the run.
func TestResumableMapInProcess(t *testing.T) {
	want, runs, err := runResume(t, nil, resumeFlow("1"), -1)
	if err != nil || runs != 1000 {
		t.Fatalf("uninterrupted run: %v, %d items", err, runs)
	}
	mem := &itemledgertest.Memory{}
	if _, _, err := runResume(t, mem, resumeFlow("1"), 700); !errors.Is(err, errBoom) {
		t.Fatalf("first attempt: %v, want the item's failure", err)
	}
	kept := mem.Entries()
	if kept < 700-16 || kept >= 1000 {
		t.Fatalf("the failed attempt kept %d results, want at least the items before item 700 less a window, never the failing one", kept)
	}
	out, runs, err := runResume(t, mem, resumeFlow("1"), -1)
	if err != nil || out != want {
		t.Fatalf("second attempt: %q, %v; want %q", out, err, want)
	}
	if runs != 1000-kept {
		t.Fatalf("the second attempt ran %d items, want %d (those without a kept result)", runs, 1000-kept)
	}
	cases := []struct {
		name    string
		version string
		runs    int
	}{
		{"unchanged version", "1", 10}, // only the results over the 64-byte cap rerun
		{"changed version", "2", 1000},
		{"no version", "", 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, runs, err := runResume(t, mem, resumeFlow(c.version), -1)
			if err != nil || out != want {
				t.Fatalf("%q, %v; want %q", out, err, want)
			}
			if runs != c.runs {
				t.Fatalf("%d items ran, want %d", runs, c.runs)
			}
		})
	}
	t.Run("fence lost", func(t *testing.T) {
		lost := &itemledgertest.Memory{}
		lost.LoseFence()
		_, runs, err := runResume(t, lost, resumeFlow("1"), -1)
		if !errors.Is(err, itemledger.ErrFenceLost) {
			t.Fatalf("err = %v, want ErrFenceLost", err)
		}
		if runs >= 1000 {
			t.Fatalf("%d items ran: the lost fence did not stop the run", runs)
		}
	})
	t.Run("without a ledger", func(t *testing.T) {
		if _, runs, err := runResume(t, nil, resumeFlow("1"), -1); err != nil || runs != 1000 {
			t.Fatalf("%v, %d items", err, runs)
		}
	})
}

// resumeSeq yields 0 … n-1 lazily.
func resumeSeq(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// The edges of a resumable map in process, with every item reused: a
// sequence of exactly MaxItems items passes, one more fails with
// *sdk.MaxItemsError (the window's edges with reused items are checked by
// internal/executor's TestResumeScheduler).
func TestResumableMapEdgesInProcess(t *testing.T) {
	const maxItems, window = 100, 4
	flow := sdk.MapSeq(sdk.Step(ResumeSquare, sdk.CodeVersion("1"))).
		WithLimits(sdk.Limits{MaxConcurrency: window, MaxItems: maxItems}).WithResume()
	mem := &itemledgertest.Memory{}
	ctx := itemledger.WithLedger(context.Background(), mem)
	resumeFailAt.Store(-1)
	if _, err := sdk.Run(ctx, flow, resumeSeq(maxItems)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		n       int
		wantErr bool
		runs    int64
	}{
		{"exactly MaxItems, all reused", maxItems, false, 0},
		{"MaxItems+1, all reused before it", maxItems + 1, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resumeRuns.Store(0)
			out, err := sdk.Run(ctx, flow, resumeSeq(c.n))
			var mi *sdk.MaxItemsError
			if c.wantErr != errors.As(err, &mi) || c.wantErr && mi.MaxItems != maxItems {
				t.Fatalf("err = %v, want a MaxItemsError: %v", err, c.wantErr)
			}
			if !c.wantErr && len(out) != c.n {
				t.Fatalf("%d results, want %d", len(out), c.n)
			}
			if got := resumeRuns.Load(); got != c.runs {
				t.Fatalf("%d items ran, want %d", got, c.runs)
			}
		})
	}
}
