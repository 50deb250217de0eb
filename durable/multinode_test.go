package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// SpotIn is an item of the multi-node workflow: it records the node it
// starts on (scripts/ray-cluster.sh names each node in
// RAYFLOW_CLUSTER_NODE) in Started, sleeps, and squares I.
type SpotIn struct {
	I       int    `json:"i"`
	SleepMS int    `json:"sleep_ms"`
	Started string `json:"started"`
}

// SpotSquare is the multi-node workflow's leaf.
func SpotSquare(ctx context.Context, in SpotIn) (int, error) {
	f, err := os.OpenFile(in.Started, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(f, "%s %d\n", os.Getenv("RAYFLOW_CLUSTER_NODE"), in.I)
	f.Close()
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(time.Duration(in.SleepMS) * time.Millisecond):
		return in.I * in.I, nil
	}
}

// SpotFlow: items of one CPU each, with Ray's task retries.
var SpotFlow = sdk.Map(sdk.Step(SpotSquare, sdk.WithResources(sdk.Resources{NumCPUs: 1}),
	sdk.WithRayOptions(sdk.RayOptions{"max_retries": 3}))).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100})

func init() { Register("test.spots", SpotFlow) }

// The durable runner on the multi-node cluster of scripts/ray-cluster.sh
// (make ray-cluster-up, named by RAYFLOW_RAY_CLUSTER: its state directory,
// relative paths from the repository's root) survives the loss of worker
// node w1 mid-map: the task SUCCEEDS in its first attempt with the result
// of an undisturbed run (Ray reruns the lost items on w2). w1 is started
// again afterwards.
func TestMultiNodeDurableRunner(t *testing.T) {
	state := os.Getenv("RAYFLOW_RAY_CLUSTER")
	if testing.Short() || state == "" {
		t.Skip("needs the multi-node Ray cluster of make ray-cluster-up, named by RAYFLOW_RAY_CLUSTER")
	}
	if !filepath.IsAbs(state) {
		state = filepath.Join("..", state) // the tests run in durable/
	}
	state, err := filepath.Abs(state)
	if err != nil {
		t.Fatal(err)
	}
	script := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join("..", "scripts", "ray-cluster.sh"), args...)
		cmd.Env = append(os.Environ(), "RAY_CLUSTER_STATE="+state)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ray-cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(state, "address"))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSpace(string(b))
	e := newEnv(t)
	eng, err := rayengine.New(t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	o := fastOptions()
	o.Engine, o.RayAddress, o.StuckTimeout, o.HeartbeatInterval = eng, addr, 30*time.Second, time.Second
	e.startWorker(o)

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	const n = 8
	in := make([]SpotIn, n)
	want := make([]int, n)
	for i := range in {
		in[i] = SpotIn{I: i, SleepMS: 3000, Started: started}
		want[i] = i * i
	}
	raw, _ := json.Marshal(in)
	id := e.enqueue("test.spots", string(raw), EnqueueOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := testwait.Poll(ctx, 50*time.Millisecond, "an item on w1", func(context.Context) (bool, error) {
		b, _ := os.ReadFile(started)
		return strings.Contains(string(b), "w1 "), nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { script("restart", "w1") })
	killed := time.Now()
	script("kill", "w1")
	task := e.wait(id, 3*time.Minute)
	t.Logf("node w1 killed; the task ended %s %v after the kill", task.State, time.Since(killed).Round(time.Millisecond))
	if task.State != StateSucceeded || len(task.Attempts) != 1 {
		t.Fatalf("%s after %d attempts: %+v", task.State, len(task.Attempts), task.Attempts)
	}
	var got []int
	if err := json.Unmarshal(task.Result, &got); err != nil {
		t.Fatalf("result %s: %v", task.Result, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("result (-want +got):\n%s", d)
	}
	after, _ := os.ReadFile(started)
	if strings.Count(string(after), "\n") <= n {
		t.Fatalf("no item ran again after w1 was killed:\n%s", after)
	}
}
