package testwait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 5 * time.Millisecond

// ErrInterval is returned by Poll for an interval that is not positive.
var ErrInterval = errors.New("testwait: the poll interval must be positive")

// TimeoutError is returned by Poll when its context ends before the
// condition holds. It unwraps to the context's cause (context.Canceled,
// context.DeadlineExceeded or the cause given to the context).
type TimeoutError struct {
	What  string // what was waited for, as the caller named it
	Polls int    // how many times the condition was checked
	Cause error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("testwait: %s: not met after %d checks: %v", e.What, e.Polls, e.Cause)
}

func (e *TimeoutError) Unwrap() error { return e.Cause }

// Poll checks cond at once and then every interval until it reports true
// (Poll returns nil), returns an error (Poll returns it wrapped) or ctx
// ends (Poll returns a *TimeoutError). cond gets ctx for the calls it makes.
func Poll(ctx context.Context, interval time.Duration, what string, cond func(context.Context) (bool, error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: got %s", ErrInterval, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for polls := 1; ; polls++ {
		if err := ctx.Err(); err != nil {
			return &TimeoutError{What: what, Polls: polls - 1, Cause: context.Cause(ctx)}
		}
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("testwait: %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return &TimeoutError{What: what, Polls: polls, Cause: context.Cause(ctx)}
		case <-t.C:
		}
	}
}

// TB is the part of testing.TB that Until uses.
type TB interface {
	Helper()
	Context() context.Context
	Fatalf(format string, args ...any)
}

// Until checks cond every Interval until it is true, and fails t (Fatalf,
// so call it from the test's goroutine) if timeout passes first.
func Until(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := Poll(ctx, Interval, what, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("timed out after %s: %v", timeout, err)
	}
}
