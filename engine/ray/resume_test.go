package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/itemledger/itemledgertest"
	"github.com/rayflow/rayflow/sdk"
)

// resumeWorkFlow maps Work over Jobs in a resumable map (window 16), its
// body declaring version (none when "").
func resumeWorkFlow(version string, maxItems int) sdk.Flow[JobsSpec, []int] {
	opts := []sdk.StepOption{quarter}
	if version != "" {
		opts = append(opts, sdk.CodeVersion(version))
	}
	return sdk.Then(sdk.Step(Jobs, sdk.CodeVersion("1")),
		sdk.Map(sdk.Step(Work, opts...)).WithLimits(sdk.Limits{MaxConcurrency: 16, MaxItems: maxItems}).WithResume())
}

// executions counts the items that ran (the lines of the Job log).
func executions(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// A resumable 1,000-item map on Ray behaves as in process: an attempt
// failing at item 700 keeps the results before it, the next attempt runs
// only the items without one (counted by the leaves' log) and returns an
// uninterrupted run's result; an unchanged declared version reuses every
// item, a changed one reruns them all; a lost fence stops the run.
func TestResumableMapOnRay(t *testing.T) {
	t.Parallel()
	for name, rt := range batchEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ir := &inlineRuntime{rayRuntime: rt, asked: map[objHandle]bool{}}
			e := newWithRuntime(ir, exeOf(t))
			log := filepath.Join(t.TempDir(), "leaves")
			spec := func(n, failAt int) JobsSpec { return JobsSpec{N: n, FailAt: failAt, Template: Job{Log: log}} }
			run := func(l itemledger.Ledger, f sdk.Flow[JobsSpec, []int], in JobsSpec) ([]int, int, error) {
				before := executions(t, log)
				ctx := context.Background()
				if l != nil {
					ctx = itemledger.WithLedger(ctx, l)
				}
				out, err := runOn(ctx, e, f, in, noProgress)
				return out, executions(t, log) - before, err
			}
			want, err := sdk.Run(context.Background(), resumeWorkFlow("1", 1000), JobsSpec{N: 1000, FailAt: -1})
			if err != nil {
				t.Fatal(err)
			}
			mem := &itemledgertest.Memory{}
			_, _, err = run(mem, resumeWorkFlow("1", 1000), spec(1000, 700))
			var jf *JobFailure
			if !errors.As(err, &jf) || jf.Item != 700 {
				t.Fatalf("first attempt: %v, want item 700's failure", err)
			}
			kept := mem.Entries()
			if kept < 700-16 || kept >= 1000 {
				t.Fatalf("the failed attempt kept %d results, want at least the items before item 700 less a window, never the failing one", kept)
			}
			out, ran, err := run(mem, resumeWorkFlow("1", 1000), spec(1000, -1))
			if err != nil || !slices.Equal(out, want) {
				t.Fatalf("second attempt: %v; the result equals an uninterrupted run's: %v", err, slices.Equal(out, want))
			}
			if ran != 1000-kept {
				t.Fatalf("the second attempt ran %d items, want %d (those without a kept result)", ran, 1000-kept)
			}
			// Each item's result, which the ledger records, came with its
			// leaf's ready event: no get of its own.
			if gets, served := ir.counts(); gets < 1000 || name == "ray" && served != gets {
				t.Fatalf("of %d item results got for the ledger, %d came with their ready events; want every one of at least 1,000 (on Ray)", gets, served)
			}
			// Declared versions, on a smaller map with a ledger of its own.
			small := &itemledgertest.Memory{}
			if _, ran, err := run(small, resumeWorkFlow("1", 100), spec(100, -1)); err != nil || ran != 100 {
				t.Fatalf("filling the ledger: %v, %d items ran", err, ran)
			}
			for _, c := range []struct {
				name, version string
				ran           int
			}{{"unchanged version", "1", 0}, {"changed version", "2", 100}} {
				out, ran, err := run(small, resumeWorkFlow(c.version, 100), spec(100, -1))
				if err != nil || !slices.Equal(out, want[:100]) || ran != c.ran {
					t.Fatalf("%s: %v, %d items ran, want %d", c.name, err, ran, c.ran)
				}
			}
			lost := &itemledgertest.Memory{}
			lost.LoseFence()
			if _, _, err := run(lost, resumeWorkFlow("1", 100), spec(100, -1)); !errors.Is(err, itemledger.ErrFenceLost) {
				t.Fatalf("a lost fence: %v, want ErrFenceLost", err)
			}
		})
	}
}

// inlineRuntime counts the results of leaves submitted with Inline that
// the engine gets, and how many of them the bridge answered from their
// ready events.
type inlineRuntime struct {
	rayRuntime
	mu          sync.Mutex
	asked       map[objHandle]bool
	gets, inRdy int
}

func (r *inlineRuntime) Submit(ctx context.Context, t leafTask) (objHandle, error) {
	h, err := r.rayRuntime.Submit(ctx, t)
	if err == nil && t.Inline > 0 {
		r.mu.Lock()
		r.asked[h] = true
		r.mu.Unlock()
	}
	return h, err
}

func (r *inlineRuntime) Get(ctx context.Context, h objHandle) ([]byte, *errorInfo, []byte, error) {
	r.mu.Lock()
	if r.asked[h] {
		r.gets++
		if b, ok := r.rayRuntime.(*rayBridge); ok {
			b.mu.Lock()
			if b.readyCache[h].Inlined {
				r.inRdy++
			}
			b.mu.Unlock()
		}
	}
	r.mu.Unlock()
	return r.rayRuntime.Get(ctx, h)
}

func (r *inlineRuntime) counts() (gets, served int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets, r.inRdy
}
