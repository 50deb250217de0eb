package local_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rayflow/rayflow/engine/local"
	"github.com/rayflow/rayflow/sdk"
)

// Deaf sleeps v milliseconds whatever its context says, then returns v.
// Under synctest the sleep is on the bubble's fake clock, so abandoned
// leaves end (instantly in real time) before the bubble does.
func Deaf(_ context.Context, v int) (int, error) {
	time.Sleep(time.Duration(v) * time.Millisecond)
	return v, nil
}

// DeafSlice is Deaf for a slice (the first element is the sleep).
func DeafSlice(_ context.Context, vs []int) (int, error) {
	time.Sleep(time.Duration(vs[0]) * time.Millisecond)
	return vs[0], nil
}

// Polite returns as soon as its context is done.
func Polite(ctx context.Context, v int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, fmt.Errorf("item %d gave up: %w", v, ctx.Err())
	case <-time.After(time.Hour):
		return v, nil
	}
}

// DeafReducer ignores its context for five seconds.
func DeafReducer(_ context.Context, acc, v int) (int, error) {
	time.Sleep(5 * time.Second)
	return acc + v, nil
}

// settle lets the bubble's abandoned leaves finish on the fake clock, so
// the bubble can end: synctest fails a test whose goroutines outlive it.
func settle() {
	time.Sleep(time.Minute)
	synctest.Wait()
}

func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// checkCanceled asserts the cancellation shape every engine returns.
func checkCanceled(t *testing.T, err error, want error) {
	t.Helper()
	if err == nil {
		t.Fatal("Run returned a nil error after cancellation")
	}
	if !errors.Is(err, want) {
		t.Errorf("errors.Is(%v, %v) is false", err, want)
	}
	var ce *sdk.CanceledError
	if !errors.As(err, &ce) {
		t.Errorf("want a *sdk.CanceledError, got %T: %v", err, err)
	}
	var se *sdk.StepError
	if errors.As(err, &se) {
		t.Errorf("a cancelled run was blamed on node %s: %v", se.Node, err)
	}
}

// TestCancellationBound: whatever the leaves do, Run returns within the
// cancel timeout of the deadline or cancellation, with the context's
// error. Before the fix each case returned after the leaves' 5 s, most
// with a nil error and a value.
func TestCancellationBound(t *testing.T) {
	t.Parallel()
	const deadline = 200 * time.Millisecond
	bounded := sdk.Limits{MaxConcurrency: 4, MaxItems: 100, CancelTimeout: 100 * time.Millisecond}
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 10}}
	cases := []struct {
		name  string
		run   func(ctx context.Context) (any, error)
		bound time.Duration // after the deadline
	}{
		{"plain step", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Step(Deaf), 5000)
		}, local.CancelTimeoutDefault},
		{"chain", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Then(sdk.Step(Deaf), sdk.Step(Deaf)), 5000)
		}, local.CancelTimeoutDefault},
		{"group", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Group(sdk.Step(Deaf), sdk.Step(Deaf)), 5000)
		}, local.CancelTimeoutDefault},
		{"sequential group", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Group(sdk.Step(Deaf), sdk.Step(Deaf)), 5000, sdk.Sequential())
		}, local.CancelTimeoutDefault},
		{"map with CancelTimeout 100ms", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Map(sdk.Step(Deaf)).WithLimits(bounded), repeat(5000, 10))
		}, 100 * time.Millisecond},
		{"eager map", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Map(sdk.Step(Deaf)), repeat(5000, 10))
		}, local.CancelTimeoutDefault},
		{"map inside a group", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Group(sdk.Map(sdk.Step(Deaf)).WithLimits(bounded), sdk.Map(sdk.Step(Deaf)).WithLimits(bounded)), repeat(5000, 10))
		}, local.CancelTimeoutDefault},
		{"nested maps", func(ctx context.Context) (any, error) {
			inner := sdk.Map(sdk.Step(Deaf)).WithLimits(bounded)
			return sdk.Run(ctx, sdk.Map(inner).WithLimits(bounded), [][]int{repeat(5000, 3), repeat(5000, 3)})
		}, 100 * time.Millisecond},
		{"fold with a deaf reducer", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Reduce(sdk.Map(sdk.Step(Deaf)).WithLimits(bounded), DeafReducer, 0, fold), []int{1, 2})
		}, 100 * time.Millisecond},
		{"group of a map and a slice step", func(ctx context.Context) (any, error) {
			return sdk.Run(ctx, sdk.Group2(sdk.Map(sdk.Step(Deaf)).WithLimits(bounded), sdk.Step(DeafSlice)), repeat(5000, 3))
		}, local.CancelTimeoutDefault},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				out, err := c.run(ctx)
				elapsed := time.Since(start)
				checkCanceled(t, err, context.DeadlineExceeded)
				if elapsed > deadline+c.bound {
					t.Errorf("Run returned %s after the start, %s after the deadline; the bound is %s (value %v)", elapsed, elapsed-deadline, c.bound, out)
				}
				if elapsed < deadline {
					t.Errorf("Run returned at %s, before the deadline", elapsed)
				}
				settle()
			})
		})
	}
}

// TestCancellationWaitsForLeavesWithinTheTimeoutOnly checks the bound at
// its edge: a leaf that returns 1 ms before the cancel timeout is waited
// for; one that returns 1 ms after is abandoned at the timeout. Either
// way the run's error is the deadline, never the leaf's value.
func TestCancellationWaitsForLeavesWithinTheTimeoutOnly(t *testing.T) {
	t.Parallel()
	const deadline, timeout = 200 * time.Millisecond, 100 * time.Millisecond
	for _, c := range []struct {
		sleep, want time.Duration
	}{
		{deadline + timeout - time.Millisecond, deadline + timeout - time.Millisecond},
		{deadline + timeout, deadline + timeout},
		{deadline + timeout + time.Millisecond, deadline + timeout},
	} {
		t.Run(fmt.Sprint("leaf=", c.sleep), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				f := sdk.Map(sdk.Step(Deaf)).WithLimits(sdk.Limits{MaxConcurrency: 2, CancelTimeout: timeout})
				start := time.Now()
				_, err := sdk.Run(ctx, f, []int{int(c.sleep / time.Millisecond)})
				checkCanceled(t, err, context.DeadlineExceeded)
				if got := time.Since(start); got != c.want {
					t.Errorf("Run returned after %s, want %s", got, c.want)
				}
				settle()
			})
		})
	}
}

// TestCancelNotBlamedOnAnItem: cooperative leaves return their context's
// error at once; the run reports the cancellation (with its cause), not
// the first item that gave up.
func TestCancelNotBlamedOnAnItem(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("operator pressed stop")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
		start := time.Now()
		_, err := sdk.Run(ctx, sdk.Map(sdk.Step(Polite)).WithLimits(sdk.Limits{MaxConcurrency: 8}), repeat(1, 20))
		checkCanceled(t, err, context.Canceled)
		if !errors.Is(err, cause) {
			t.Errorf("the cause is lost: %v", err)
		}
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("cooperative leaves: Run returned after %s, want 50ms", got)
		}
		settle()
	})
}

// TestAlreadyCancelledRunsNoLeaf: a run whose context is already done
// fails at once with the cancellation shape.
func TestAlreadyCancelledRunsNoLeaf(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	_, err := sdk.Run(ctx, sdk.Step(func(context.Context, int) (int, error) { ran = true; return 1, nil }), 1)
	checkCanceled(t, err, context.Canceled)
	if ran {
		t.Error("a leaf ran under a cancelled context")
	}
}
