package testwait_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rayflow/rayflow/internal/testwait"
)

var errCond = errors.New("the condition broke")

// Poll returns as soon as the condition holds, after exactly the checks it
// needed, on the bubble's fake clock.
func TestPoll(t *testing.T) {
	t.Parallel()
	type outcome struct {
		Checks  int
		Elapsed time.Duration
		Timeout testwait.TimeoutError // the zero value when Poll did not time out
	}
	tests := []struct {
		name     string
		interval time.Duration
		timeout  time.Duration
		metAt    int // the check at which the condition holds; 0 = never
		failAt   int // the check at which the condition returns errCond
		want     outcome
		wantErr  error
	}{
		{name: "met at once", interval: time.Second, timeout: time.Minute, metAt: 1,
			want: outcome{Checks: 1}},
		{name: "met on the third check", interval: 10 * time.Millisecond, timeout: time.Minute, metAt: 3,
			want: outcome{Checks: 3, Elapsed: 20 * time.Millisecond}},
		{name: "met on the last check before the deadline", interval: 10 * time.Millisecond, timeout: 30*time.Millisecond + 1, metAt: 4,
			want: outcome{Checks: 4, Elapsed: 30 * time.Millisecond}},
		{name: "deadline just before the check that would meet it", interval: 10 * time.Millisecond, timeout: 30*time.Millisecond - 1, metAt: 4,
			want:    outcome{Checks: 3, Elapsed: 30*time.Millisecond - 1, Timeout: testwait.TimeoutError{What: "cond", Polls: 3, Cause: context.DeadlineExceeded}},
			wantErr: context.DeadlineExceeded},
		{name: "never met", interval: 3 * time.Millisecond, timeout: 10 * time.Millisecond,
			want:    outcome{Checks: 4, Elapsed: 10 * time.Millisecond, Timeout: testwait.TimeoutError{What: "cond", Polls: 4, Cause: context.DeadlineExceeded}},
			wantErr: context.DeadlineExceeded},
		{name: "the condition fails", interval: time.Millisecond, timeout: time.Minute, failAt: 2,
			want: outcome{Checks: 2, Elapsed: time.Millisecond}, wantErr: errCond},
		{name: "smallest interval", interval: time.Nanosecond, timeout: time.Minute, metAt: 3,
			want: outcome{Checks: 3, Elapsed: 2 * time.Nanosecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
				defer cancel()
				var got outcome
				start := time.Now()
				err := testwait.Poll(ctx, tc.interval, "cond", func(context.Context) (bool, error) {
					got.Checks++
					if got.Checks == tc.failAt {
						return false, errCond
					}
					return got.Checks == tc.metAt, nil
				})
				got.Elapsed = time.Since(start)
				if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
					t.Fatalf("Poll = %v, want an error that is %v", err, tc.wantErr)
				}
				if te, ok := errors.AsType[*testwait.TimeoutError](err); ok {
					got.Timeout = *te
				}
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateErrors()); diff != "" {
					t.Errorf("Poll (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// An interval that is not positive is refused before any check.
func TestPollRefusesAnIntervalNotPositive(t *testing.T) {
	t.Parallel()
	for _, interval := range []time.Duration{0, -time.Nanosecond} {
		checks := 0
		err := testwait.Poll(t.Context(), interval, "cond", func(context.Context) (bool, error) { checks++; return true, nil })
		if !errors.Is(err, testwait.ErrInterval) || checks != 0 {
			t.Errorf("interval %s: Poll = %v after %d checks, want ErrInterval and no check", interval, err, checks)
		}
	}
}

// A context already done ends the wait before any check, with its cause.
func TestPollCanceledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	checks := 0
	err := testwait.Poll(ctx, time.Millisecond, "cond", func(context.Context) (bool, error) { checks++; return true, nil })
	var te *testwait.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.Canceled) || te.Polls != 0 || checks != 0 {
		t.Fatalf("Poll = %v after %d checks, want a TimeoutError for context.Canceled and no check", err, checks)
	}
}

// recorder is a testwait.TB that records Fatalf and stops its goroutine, as
// testing.T does.
type recorder struct {
	ctx   context.Context
	fatal string
}

func (r *recorder) Helper()                  {}
func (r *recorder) Context() context.Context { return r.ctx }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Until returns when the condition holds and fails the test, naming what
// it waited for, when the timeout passes first.
func TestUntil(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		metAt     int
		wantFatal string
		elapsed   time.Duration
	}{
		{name: "met", metAt: 3, elapsed: 2 * testwait.Interval},
		{name: "timed out", wantFatal: "timed out after 1.001s: testwait: the row: not met after 201 checks: context deadline exceeded", elapsed: time.Second + time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{ctx: t.Context()}
				start := time.Now()
				done := make(chan struct{})
				checks := 0
				go func() {
					defer close(done)
					testwait.Until(r, time.Second+time.Millisecond, "the row", func() bool { checks++; return checks == tc.metAt })
				}()
				<-done
				if r.fatal != tc.wantFatal {
					t.Errorf("Fatalf(%q), want %q", r.fatal, tc.wantFatal)
				}
				if d := time.Since(start); d != tc.elapsed {
					t.Errorf("Until returned after %s, want %s", d, tc.elapsed)
				}
			})
		})
	}
}
