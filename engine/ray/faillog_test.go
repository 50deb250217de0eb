package ray

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// deathLine matches what the bridge and Ray log when a worker or its leaf
// process dies.
var deathLine = regexp.MustCompile(`(?i)worker died|leaf process .* died|unexpected system error`)

// A map item that fails is an application error, not a death: the logs
// (the bridge's stderr, which carries Ray's driver and worker logs, and
// slog's) name the item's error and say nothing of a dead worker or leaf
// process, though the failure force-cancels the other items in flight
// (Ray ends their workers' leaf processes first, which the workers used to
// take for deaths). A leaf process that really dies is still reported as a
// death.
func TestFailedItemLogs(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	var log syncbuf.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	e, err := New(ctx, Options{Address: testAddress, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	t.Run("item error", func(t *testing.T) {
		f := mapFlow(sdk.Limits{MaxConcurrency: 6, MaxItems: 100, CancelTimeout: time.Second})
		// Twice: whether a cancelled worker saw its leaf process end
		// before Ray ended the worker is a race.
		for range 2 {
			spec := JobsSpec{N: 12, FailAt: 1, FailAfterMS: 500, Template: Job{SleepMS: 60_000}}
			_, err := runOn(ctx, e, f, spec)
			var jf *JobFailure
			if !errors.As(err, &jf) || jf.Item != 1 {
				t.Fatalf("want the *JobFailure of item 1, got %v", err)
			}
		}
		// Ray reports a dead worker asynchronously: a window for a death
		// line, which must not come.
		time.Sleep(3 * time.Second)
		out := log.String()
		if want := "job 1 failed"; !strings.Contains(out, want) || !strings.Contains(out, "0.1.m1") {
			t.Errorf("the logs do not name the item's error (%q at node 0.1.m1):\n%s", want, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if deathLine.MatchString(line) {
				t.Errorf("a failed item is logged as a death: %s", line)
			}
		}
		if t.Failed() {
			t.Logf("logs:\n%s", out)
		}
	})

	t.Run("leaf process killed", func(t *testing.T) {
		from := len(log.String())
		marker := filepath.Join(t.TempDir(), "pid")
		errc := make(chan error, 1)
		go func() {
			_, err := runOn(ctx, e, noRetryFlow, Job{I: 3, SleepMS: 30_000, Marker: marker})
			errc <- err
		}()
		if err := syscall.Kill(leafPID(t, marker), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var te *TaskError
		if err := <-errc; !errors.As(err, &te) || te.Kind != "worker_crashed" {
			t.Fatalf("want a worker_crashed TaskError, got %v", err)
		}
		// The worker's line, or the raylet's (Ray folds repeated lines).
		wctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := testwait.Poll(wctx, 100*time.Millisecond, "the leaf's death logged", func(context.Context) (bool, error) {
			return deathLine.MatchString(log.String()[from:]), nil
		}); err != nil {
			t.Fatalf("the leaf process's death is not logged:\n%s", log.String()[from:])
		}
	})
}
