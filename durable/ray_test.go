package durable

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/raytoken"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// rayAddress returns the shared Ray cluster of the tests, or skips.
func rayAddress(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("Ray test skipped under -short")
	}
	a := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if a == "" {
		t.Skip("Ray test skipped: RAYFLOW_RAY_ADDRESS is not set (make ray-up)")
	}
	return a
}

// runningLeaves lists the RUNNING rayflow leaf tasks of the cluster by
// worker pid, from Ray's state API (the dashboard's /api/v0/tasks).
func runningLeaves(t *testing.T) map[int]string {
	t.Helper()
	dash := os.Getenv("RAYFLOW_RAY_DASHBOARD")
	if dash == "" {
		dash = "http://127.0.0.1:8265"
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, dash+"/api/v0/tasks?limit=10000&filter_keys=state&filter_predicates=%3D&filter_values=RUNNING", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A cluster with token authentication (Ray enables it when
	// ~/.ray/auth_token exists) answers 401 without the token.
	if tok := raytoken.Token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("Ray's state API is not available (%v)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		t.Fatalf("state API: %s: %s", resp.Status, b)
	}
	var body struct {
		Data struct {
			Result struct {
				Result []struct {
					TaskID    string `json:"task_id"`
					Name      string `json:"func_or_class_name"`
					State     string `json:"state"`
					WorkerPID int    `json:"worker_pid"`
				} `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("state API: %v", err)
	}
	out := map[int]string{}
	for _, r := range body.Data.Result.Result {
		if r.State == "RUNNING" && strings.Contains(r.Name, "leaf") {
			out[r.WorkerPID] = r.TaskID
		}
	}
	return out
}

// Cancelling a running Ray workflow kills its leaves (Ray's state API and
// the processes agree) and ends CANCELLED within the cancel timeout.
func TestCancelRunningRayWorkflow(t *testing.T) {
	addr := rayAddress(t)
	e := newEnv(t)
	eng, err := rayengine.New(t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	o := fastOptions()
	o.Engine, o.RayAddress, o.CancelTimeout, o.HeartbeatInterval = eng, addr, 20*time.Second, time.Second
	e.startWorker(o)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(HoldIn{Dir: dir, N: 2})
	id := e.enqueue("test.hold", string(in), EnqueueOptions{})
	// Wait for both leaves to run.
	var procs [][2]int // leaf pid, its parent (the Ray worker)
	testwait.Until(t, 90*time.Second, "both leaves started", func() bool {
		procs = procs[:0]
		files, _ := filepath.Glob(filepath.Join(dir, "*.*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			var p [2]int
			if _, err := fmt.Sscanf(string(b), "%d %d", &p[0], &p[1]); err == nil {
				procs = append(procs, p)
			}
		}
		return len(procs) >= 2
	})
	task, _ := e.c.Get(t.Context(), id)
	if task.State != StateRunning || task.Runner != "ray" {
		t.Fatalf("%s on %q", task.State, task.Runner)
	}
	onRay := func() int {
		leaves := runningLeaves(t)
		n := 0
		for _, p := range procs {
			if _, ok := leaves[p[0]]; ok {
				n++
			} else if _, ok := leaves[p[1]]; ok {
				n++
			}
		}
		return n
	}
	// The state API lags the cluster by a moment.
	testwait.Until(t, 30*time.Second, "Ray's state API shows our 2 leaves RUNNING", func() bool { return onRay() == 2 })
	start := time.Now()
	if out, err := e.c.Cancel(t.Context(), id, Expect{}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel: %s %v", out, err)
	}
	task = e.wait(id, o.CancelTimeout)
	took := time.Since(start)
	if task.State != StateCancelled || task.CancellationStatus != CancellationRequested || task.Attempts[0].State != StateCancelled {
		t.Fatalf("%s %s %+v", task.State, task.CancellationStatus, task.Attempts)
	}
	// The leaves are gone: their processes and their RUNNING Ray tasks.
	testwait.Until(t, o.CancelTimeout, "no leaf process alive and no leaf RUNNING on Ray", func() bool {
		for _, p := range procs {
			if syscall.Kill(p[0], 0) == nil && !zombie(p[0]) {
				return false
			}
		}
		return onRay() == 0
	})
	t.Logf("CANCELLED %v after the cancel request; leaves gone %v after it", took, time.Since(start))
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// A step reads its durable attempt from its context on every runner: the
// first attempt fails, the second returns the identity it was given,
// which is its task's, attempt 2, with the attempt's generation and run id.
func TestStepReadsItsAttemptFromContext(t *testing.T) {
	cases := []struct {
		name   string
		engine func(t *testing.T) (sdk.Engine, string)
	}{
		{"local", func(*testing.T) (sdk.Engine, string) { return nil, "" }},
		{"ray", func(t *testing.T) (sdk.Engine, string) {
			addr := rayAddress(t)
			eng, err := rayengine.New(t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = eng.Close() })
			return eng, addr
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eng, addr := c.engine(t)
			e := newEnv(t)
			o := fastOptions()
			o.Engine, o.RayAddress = eng, addr
			e.startWorker(o)
			id := e.enqueue("test.attempt", `"x"`, EnqueueOptions{})
			task := e.wait(id, 120*time.Second)
			if task.State != StateSucceeded {
				t.Fatalf("%s at attempt %d: %s", task.State, task.Attempt, task.ErrorMessage)
			}
			var got sdk.RunIdentity
			if err := json.Unmarshal(task.Result, &got); err != nil {
				t.Fatal(err)
			}
			want := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: task.PK, AttemptNumber: 2,
				ExecutionGeneration: task.Generation, RunID: task.RunID}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("the step's attempt (-task's +step's):\n%s", d)
			}
		})
	}
}
