package ray

import (
	"context"
	"time"
)

// cancelGrace is how long a failed run or map lets its tasks in flight end
// on their own before it cancels them. Ray 2.60's core worker aborts the
// whole driver, the bridge, when a cancellation races the completion of
// the task it cancels ("Check failed: it != submissible_tasks_.end() Tried
// to complete task that was not pending"): the task is cancelled in the
// instant between its reply's arrival and its completion. The tasks most
// likely to be completing are the short ones, and they end within the
// grace, so they are never cancelled; a cancellation then meets only tasks
// that have been running for a while, where the race needs a coincidence
// of microseconds. The grace is taken from the cancellation bound, never
// added to it.
const cancelGrace = 200 * time.Millisecond

// settle waits up to grace for hs to become terminal and returns the ones
// still pending.
func settle(ctx context.Context, rt rayRuntime, hs []objHandle, grace time.Duration) ([]objHandle, error) {
	if len(hs) == 0 || grace <= 0 {
		return hs, nil
	}
	ready, err := rt.Wait(ctx, hs, true, grace)
	if err != nil {
		return nil, err
	}
	return pendingOf(hs, ready), nil
}

// pendingOf is hs without the ready handles.
func pendingOf(hs []objHandle, ready []readyRef) []objHandle {
	if len(ready) == 0 {
		return hs
	}
	done := make(map[objHandle]bool, len(ready))
	for _, r := range ready {
		done[r.Handle] = true
	}
	var out []objHandle
	for _, h := range hs {
		if !done[h] {
			out = append(out, h)
		}
	}
	return out
}

// cancelUntilDone lets hs end on their own for a quarter of the time to
// the deadline (at most cancelGrace), then force-cancels those still
// pending and waits until every one is terminal or the deadline passes.
// Ray can lose a cancellation that races with the task's dispatch to a
// worker (it then runs to completion), so the cancel is repeated about
// every 500 ms for the handles still pending.
func cancelUntilDone(ctx context.Context, rt rayRuntime, hs []objHandle, deadline time.Time) {
	pending, err := settle(ctx, rt, hs, min(cancelGrace, time.Until(deadline)/4))
	for err == nil && len(pending) > 0 {
		if rt.Cancel(ctx, pending) != nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		var ready []readyRef
		ready, err = rt.Wait(ctx, pending, true, min(left, 500*time.Millisecond))
		pending = pendingOf(pending, ready)
	}
}
