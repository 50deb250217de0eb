package executortest

import (
	"context"
	"sync"
)

// Pool runs fn on every item with at most window calls at once, the way
// a hand-written errgroup-style bounded goroutine pool does (a goroutine
// per item, a semaphore, the first error kept), and returns the results
// in input order: what the map benchmarks measure the engine against.
func Pool[T any](ctx context.Context, window int, in []T, fn func(context.Context, T) (T, error)) ([]T, error) {
	out := make([]T, len(in))
	sem := make(chan struct{}, window)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, v := range in {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := fn(ctx, v)
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			out[i] = r
		}()
	}
	wg.Wait()
	return out, first
}
