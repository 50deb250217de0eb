package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// bufferActors maps the cluster's result-buffer actors to their states
// (Ray's state API).
func bufferActors(t *testing.T) map[string]string {
	t.Helper()
	acts, err := testBridge.ListActors(context.Background(), "_BufferActor")
	if err != nil {
		t.Skipf("Ray's state API is not available on this cluster (%v)", err)
	}
	out := map[string]string{}
	for _, a := range acts {
		out[a.ID] = a.State
	}
	return out
}

// newActors waits up to d until cond holds for the buffer actors created
// since before, and returns their states.
func newActors(t *testing.T, before map[string]string, d time.Duration, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	var fresh map[string]string
	check := func(context.Context) (bool, error) {
		fresh = map[string]string{}
		for id, st := range bufferActors(t) {
			if _, ok := before[id]; !ok {
				fresh[id] = st
			}
		}
		return cond(fresh), nil
	}
	if ok, _ := check(t.Context()); ok || d <= 0 { // d 0: one look
		return fresh
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	_ = testwait.Poll(ctx, 200*time.Millisecond, "the new buffer actors", check)
	return fresh
}

func allDead(m map[string]string) bool {
	for _, st := range m {
		if st != "DEAD" {
			return false
		}
	}
	return len(m) > 0
}

// runCancelled runs f on in, cancels the run when cancelNow returns true
// (polled every 100 ms) and returns the run's error and how long it took
// to return after the cancellation.
func runCancelled(t *testing.T, f sdk.Flow[[]Rev, int], in []Rev, cancelNow func() bool) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := runOn(ctx, testEngine, f, in)
		errc <- err
	}()
	for !cancelNow() {
		select {
		case err := <-errc:
			t.Fatalf("the run ended before its cancellation: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	at := time.Now()
	select {
	case err := <-errc:
		return time.Since(at), err
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end within 30s of its cancellation")
	}
	return 0, nil
}

// A result buffer that needs a custom resource no node has stays pending
// creation; no leaf runs, and cancelling the run ends it promptly (the
// pending actor is killed).
func TestBufferActorPendingCancel(t *testing.T) {
	needRay(t)
	before := bufferActors(t)
	log := filepath.Join(t.TempDir(), "leaves")
	f := sdk.Then(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}).
		WithResultBuffer(sdk.ResultBuffer{MaxSerializedBytes: 1 << 20,
			Actor: sdk.ActorOptions{NumCPUs: 0.01, Memory: 64 << 20, Resources: map[string]float64{"rayflow_no_such_node": 1}}}),
		sdk.Step(Count))
	start := time.Now()
	pending := false
	took, err := runCancelled(t, f, revItems(4, 0, log, 0), func() bool {
		if time.Since(start) < time.Second {
			return false
		}
		if !pending {
			fresh := newActors(t, before, 10*time.Second, func(m map[string]string) bool { return len(m) > 0 })
			for _, st := range fresh {
				pending = st == "PENDING_CREATION" || st == "DEPENDENCIES_UNREADY"
			}
			if !pending {
				t.Fatalf("the buffer actor is not pending creation: %v", fresh)
			}
		}
		return time.Since(start) > 2*time.Second
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if took > 3*time.Second {
		t.Fatalf("the run returned %v after its cancellation", took)
	}
	if _, serr := os.Stat(log); serr == nil {
		t.Fatal("a leaf ran before the buffer actor was ready")
	}
	if fresh := newActors(t, before, 10*time.Second, allDead); !allDead(fresh) {
		t.Fatalf("the pending buffer actor was not killed: %v", fresh)
	}
	t.Logf("cancelled run returned after %v", took)
}

// Cancelling a run whose buffer actor is alive (items running) ends it
// promptly with context.Canceled and kills the actor.
func TestBufferActorLiveCancel(t *testing.T) {
	needRay(t)
	before := bufferActors(t)
	f := bufferFlow(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}, 1<<20)
	in := revItems(4, 0, "", 0)
	for i := range in {
		in[i].SleepMS = 60_000
	}
	start := time.Now()
	alive := false
	took, err := runCancelled(t, f, in, func() bool {
		if !alive {
			fresh := newActors(t, before, 0, nil2true)
			for _, st := range fresh {
				alive = st == "ALIVE"
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("no live buffer actor after 20s: %v", fresh)
			}
			return false
		}
		return true
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if took > 5*time.Second {
		t.Fatalf("the run returned %v after its cancellation", took)
	}
	if fresh := newActors(t, before, 10*time.Second, allDead); !allDead(fresh) {
		t.Fatalf("the live buffer actor was not killed: %v", fresh)
	}
	t.Logf("cancelled run returned after %v", took)
}

func nil2true(map[string]string) bool { return true }
