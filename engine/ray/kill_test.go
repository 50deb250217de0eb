package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// TestBridgeKilledMidRun kills a second engine's bridge while a map runs:
// the run fails with a *BridgeError, and no goroutine or process is left.
func TestBridgeKilledMidRun(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	before := runtime.NumGoroutine()
	addr := testAddress
	if os.Getenv("RAYFLOW_RAY_ADDRESS") == "" {
		addr = "local" // a second driver cannot join the package's private cluster
	}
	e, err := New(ctx, Options{Address: addr, NumCPUs: 1, Stderr: logWriter()})
	if err != nil {
		t.Fatal(err)
	}
	b := e.bridgeRuntime().(*rayBridge)
	log := filepath.Join(t.TempDir(), "leaves")
	f := mapFlow(sdk.Limits{MaxConcurrency: 4, MaxItems: 100})
	errc := make(chan error, 1)
	go func() {
		_, err := runOn(ctx, e, f, JobsSpec{N: 40, FailAt: -1, Template: Job{SleepMS: 200, Log: log}})
		errc <- err
	}()
	// Kill it once leaves are running.
	testwait.Until(t, 60*time.Second, "a leaf finished", func() bool {
		b, _ := os.ReadFile(log)
		return len(b) > 0
	})
	killed := time.Now()
	if err := syscall.Kill(b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-errc:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not fail within 20s of the bridge's death")
	}
	// A private cluster ends with its driver, so that the bridge's death
	// may also be reported as the cluster's loss.
	var be *BridgeError
	if !errors.Is(err, ErrBridgeClosed) || !errors.As(err, &be) || be.Lost && addr != "local" {
		t.Fatalf("want a *BridgeError, got %v", err)
	}
	t.Logf("failed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), strings.SplitN(err.Error(), "\n", 2)[0])
	if err := e.Close(); err != nil && !errors.Is(err, ErrBridgeClosed) {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-b.exited:
	default:
		t.Fatal("the bridge process was not reaped")
	}
	if _, err := e.Run(ctx, sdkrt.RunSpec{}); err == nil {
		t.Fatal("a closed engine ran")
	}
	if _, err := b.Put(ctx, []byte("x")); !errors.Is(err, ErrBridgeClosed) {
		t.Fatalf("a call after death: want ErrBridgeClosed, got %v", err)
	}
	ctx5, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := testwait.Poll(ctx5, 50*time.Millisecond, "the goroutines ended", func(context.Context) (bool, error) {
		return runtime.NumGoroutine() <= before, nil
	}); err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("%v: %d goroutines, %d before:\n%s", err, runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

// leafPID waits for the leaf to write its process id to marker.
func leafPID(t *testing.T, marker string) int {
	t.Helper()
	var line string
	testwait.Until(t, 60*time.Second, "the leaf started", func() bool {
		b, _ := os.ReadFile(marker)
		var ok bool
		line, _, ok = strings.Cut(string(b), "\n")
		return ok
	})
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestLeafProcessKilled kills the Go leaf process mid-leaf: with
// max_retries 1 Ray retries the leaf (the retry succeeds); with
// max_retries 0 the run fails cleanly with a worker-crash TaskError.
func TestLeafProcessKilled(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		flow  sdk.Flow[Job, int]
		retry bool
	}{{"retried", retryFlow, true}, {"not retried", noRetryFlow, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "pid")
			type result struct {
				v   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := runOn(ctx, testEngine, tc.flow, Job{I: 7, SleepMS: 30_000, Marker: marker})
				done <- result{v, err}
			}()
			if err := syscall.Kill(leafPID(t, marker), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("no result within 60s of the kill")
			}
			if tc.retry {
				if r.err != nil || r.v != -7 {
					t.Fatalf("want the retry's -7, got %d, %v", r.v, r.err)
				}
				return
			}
			var te *TaskError
			if !errors.As(r.err, &te) || te.Kind != "worker_crashed" || te.Node != "0" {
				t.Fatalf("want a worker_crashed TaskError, got %v", r.err)
			}
		})
	}
}
