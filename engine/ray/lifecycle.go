package ray

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// defaultCloseTimeout bounds Close when Options.CloseTimeout is zero.
const defaultCloseTimeout = time.Second

// runs tracks an engine's runs in flight so that Close can end them.
type runs struct {
	mu      sync.Mutex
	closed  bool
	next    int64
	cancels map[int64]context.CancelCauseFunc
	wg      sync.WaitGroup
}

// closedRunError is a run ended by Close: errors.Is(err, ErrClosed)
// holds, and so does errors.Is/As for what the run failed with.
type closedRunError struct{ err error }

func (e *closedRunError) Error() string {
	return "rayflow: ray: the engine was closed during the run: " + strings.TrimPrefix(e.err.Error(), "rayflow: ")
}

func (e *closedRunError) Unwrap() []error { return []error{ErrClosed, e.err} }

// begin registers a run for Close and returns its context (cancelled by
// Close with ErrClosed) and end, which unregisters it and says why the run
// failed: a run Close ended matches ErrClosed, a run failed by a lost
// cluster is a *BridgeError (Lost). A closed engine, or one whose bridge is
// unusable, fails at once.
func (e *Engine) begin(ctx context.Context) (context.Context, func(error) error, error) {
	e.life.mu.Lock()
	defer e.life.mu.Unlock()
	if e.life.closed {
		return nil, nil, ErrClosed
	}
	if h, ok := e.rt.(interface{ Err() error }); ok {
		if err := h.Err(); err != nil {
			return nil, nil, err
		}
	}
	if e.life.cancels == nil {
		e.life.cancels = map[int64]context.CancelCauseFunc{}
	}
	e.life.next++
	id := e.life.next
	ctx, cancel := context.WithCancelCause(ctx)
	e.life.cancels[id] = cancel
	e.life.wg.Add(1)
	end := func(err error) error {
		switch {
		case err == nil:
		case errors.Is(context.Cause(ctx), ErrClosed):
			err = &closedRunError{err: err}
		default:
			// A failure caused by a lost cluster says so.
			if h, ok := e.rt.(interface{ CheckCluster(error) error }); ok {
				if lost := h.CheckCluster(err); lost != nil {
					err = lost
				}
			}
		}
		e.life.mu.Lock()
		delete(e.life.cancels, id)
		e.life.mu.Unlock()
		cancel(nil)
		e.life.wg.Done()
		return err
	}
	return ctx, end, nil
}

// Close cancels every run in flight (they fail with ErrClosed), shuts the
// bridge down and ends within Options.CloseTimeout (default 1 s): a
// private cluster ends with the bridge (no Ray process of it outlives
// Close), a shared cluster is disconnected, nothing is started. Later
// Runs fail with ErrClosed.
func (e *Engine) Close() error {
	timeout := e.closeTimeout
	if timeout <= 0 {
		timeout = defaultCloseTimeout
	}
	deadline := time.Now().Add(timeout)
	e.life.mu.Lock()
	e.life.closed = true
	for _, cancel := range e.life.cancels {
		cancel(ErrClosed)
	}
	e.life.mu.Unlock()
	// Give the runs a share of the time to cancel their tasks, then end
	// the bridge (which fails whatever they still wait for).
	waitGroup(&e.life.wg, time.Until(deadline)/2)
	var err error
	if b, ok := e.rt.(interface{ CloseWithin(time.Duration) error }); ok {
		err = b.CloseWithin(max(time.Until(deadline), 100*time.Millisecond))
	} else {
		err = e.rt.Close()
	}
	waitGroup(&e.life.wg, time.Until(deadline))
	return err
}

// waitGroup waits for wg up to d.
func waitGroup(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
