package ray

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scriptedRuntime ends each handle at a set time after the test starts
// (never when absent) and records what was cancelled.
type scriptedRuntime struct {
	rayRuntime
	start     time.Time
	endsAfter map[objHandle]time.Duration

	mu        sync.Mutex
	cancelled [][]objHandle
}

func (s *scriptedRuntime) ready(hs []objHandle) []readyRef {
	var out []readyRef
	for _, h := range hs {
		if d, ok := s.endsAfter[h]; ok && time.Since(s.start) >= d {
			out = append(out, readyRef{Handle: h})
		}
	}
	return out
}

func (s *scriptedRuntime) Wait(ctx context.Context, hs []objHandle, all bool, timeout time.Duration) ([]readyRef, error) {
	deadline := time.Now().Add(timeout)
	for {
		r := s.ready(hs)
		if len(r) == len(hs) || !time.Now().Before(deadline) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (s *scriptedRuntime) Cancel(_ context.Context, hs []objHandle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelled = append(s.cancelled, slices.Clone(hs))
	// A cancelled task ends at once.
	for _, h := range hs {
		s.endsAfter[h] = 0
	}
	return nil
}

// TestCancelSparesTasksEndingOnTheirOwn: tasks that end within the grace
// are never cancelled (a cancellation racing a completion aborts Ray's
// driver, see cancelGrace); the task still running after it is, and the
// whole cancellation stays within its deadline.
func TestCancelSparesTasksEndingOnTheirOwn(t *testing.T) {
	synctest.Test(t, testCancelSpares)
}

func testCancelSpares(t *testing.T) {
	rt := &scriptedRuntime{start: time.Now(), endsAfter: map[objHandle]time.Duration{
		1: 10 * time.Millisecond, 2: 30 * time.Millisecond, 4: 0,
	}}
	deadline := time.Now().Add(time.Second)
	cancelUntilDone(context.Background(), rt, []objHandle{1, 2, 3, 4}, deadline)
	if diff := cmp.Diff([][]objHandle{{3}}, rt.cancelled); diff != "" {
		t.Fatalf("cancelled (-want +got):\n%s", diff)
	}
	if time.Now().After(deadline) {
		t.Fatalf("cancellation ended after its deadline")
	}

	// With no time left there is no grace: everything pending is
	// cancelled at once.
	rt = &scriptedRuntime{start: time.Now(), endsAfter: map[objHandle]time.Duration{1: time.Hour}}
	cancelUntilDone(context.Background(), rt, []objHandle{1, 2}, time.Now())
	if diff := cmp.Diff([][]objHandle{{1, 2}}, rt.cancelled); diff != "" {
		t.Fatalf("cancelled without a grace (-want +got):\n%s", diff)
	}
}
