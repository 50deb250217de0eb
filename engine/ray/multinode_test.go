package ray

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

// The multi-node tests run on the private cluster of scripts/ray-cluster.sh
// (make ray-cluster-up): a head without CPUs and the worker nodes w1 and w2,
// one CPU and a custom resource rf_w1 / rf_w2 each, every node its own
// raylet. clusterStateEnv names the script's state directory (relative
// paths are from the repository's root); without it the tests skip.
const clusterStateEnv = "RAYFLOW_RAY_CLUSTER"

// multiNode is the cluster of scripts/ray-cluster.sh and an engine on it.
type multiNode struct {
	state string // the script's state directory
	addr  string
	e     *Engine
}

func needMultiNode(t *testing.T) *multiNode {
	t.Helper()
	state := os.Getenv(clusterStateEnv)
	if testing.Short() || state == "" {
		t.Skip("needs the multi-node Ray cluster of make ray-cluster-up, named by " + clusterStateEnv)
	}
	if !filepath.IsAbs(state) {
		state = filepath.Join("..", "..", state) // the tests run in engine/ray
	}
	state, err := filepath.Abs(state)
	if err != nil {
		t.Fatal(err)
	}
	m := &multiNode{state: state}
	m.addr = m.read(t, "address")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	e, err := New(ctx, Options{Address: m.addr, Stderr: logWriter()})
	if err != nil {
		t.Fatalf("the multi-node cluster at %s: %v", m.addr, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	m.e = e
	return m
}

// read returns a file of the script's state, trimmed.
func (m *multiNode) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.state, name))
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		t.Fatalf("the cluster's %s: %q, %v", name, b, err)
	}
	return strings.TrimSpace(string(b))
}

// script runs scripts/ray-cluster.sh on the cluster's state.
func (m *multiNode) script(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "ray-cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "RAY_CLUSTER_STATE="+m.state)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ray-cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Visit is a multi-node test's item.
type Visit struct {
	I       int    `json:"i"`
	SleepMS int    `json:"sleep_ms"`
	Started string `json:"started"` // append "node item unix-nanos" here when the leaf starts
}

// Placed is a Visit's result: the item's square and the node it ran on
// (scripts/ray-cluster.sh names each node in RAYFLOW_CLUSTER_NODE).
type Placed struct {
	I      int    `json:"i"`
	Square int    `json:"square"`
	Node   string `json:"node"`
}

// Place runs a Visit and says where it ran.
func Place(ctx context.Context, v Visit) (Placed, error) {
	node := os.Getenv("RAYFLOW_CLUSTER_NODE")
	if v.Started != "" {
		f, err := os.OpenFile(v.Started, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return Placed{}, err
		}
		fmt.Fprintf(f, "%s %d %d\n", node, v.I, time.Now().UnixNano())
		f.Close()
	}
	select {
	case <-time.After(time.Duration(v.SleepMS) * time.Millisecond):
	case <-ctx.Done():
		return Placed{}, ctx.Err()
	}
	return Placed{I: v.I, Square: v.I * v.I, Node: node}, nil
}

// Square runs a Visit: its result does not depend on where it ran.
func Square(ctx context.Context, v Visit) (int, error) {
	p, err := Place(ctx, v)
	return p.Square, err
}

// Blob is a large value and the node that made it.
type Blob struct {
	Node string `json:"node"`
	Data string `json:"data"`
}

// Digested is what a node saw of a Blob.
type Digested struct {
	From   string `json:"from"`
	Node   string `json:"node"`
	Len    int    `json:"len"`
	SHA256 string `json:"sha256"`
}

// blobData is n bytes that differ from one position to the next, so that
// a misplaced or missing chunk changes the digest.
func blobData(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i*7+i/251)%26)
	}
	return string(b)
}

// MakeBlob makes n bytes where it runs.
func MakeBlob(_ context.Context, n int) (Blob, error) {
	return Blob{Node: os.Getenv("RAYFLOW_CLUSTER_NODE"), Data: blobData(n)}, nil
}

// DigestBlob digests a Blob where it runs.
func DigestBlob(_ context.Context, b Blob) (Digested, error) {
	sum := sha256.Sum256([]byte(b.Data))
	return Digested{From: b.Node, Node: os.Getenv("RAYFLOW_CLUSTER_NODE"), Len: len(b.Data), SHA256: hex.EncodeToString(sum[:])}, nil
}

// on pins a leaf to a worker node (its custom resource) with one CPU.
func on(node string) sdk.StepOption {
	return sdk.WithResources(sdk.Resources{NumCPUs: 1, Custom: map[string]float64{"rf_" + node: 1}})
}

var (
	oneCPU = sdk.WithResources(sdk.Resources{NumCPUs: 1})
	// placeFlow: items of one CPU each, two nodes of one CPU each.
	placeFlow = sdk.Map(sdk.Step(Place, oneCPU)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100})
	// squareFlow and squareNoRetryFlow: a map a node is killed under, with
	// Ray's task retries and without.
	squareFlow = sdk.Map(sdk.Step(Square, oneCPU, sdk.WithRayOptions(sdk.RayOptions{"max_retries": 3}))).
			WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100})
	squareNoRetryFlow = sdk.Map(sdk.Step(Square, oneCPU, sdk.WithRayOptions(sdk.RayOptions{"max_retries": 0}))).
				WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100})
	// blobAcrossFlow makes a blob on w1 and digests it on w2; blobHomeFlow
	// brings a blob of w1 to the coordinator.
	blobAcrossFlow = sdk.Then(sdk.Step(MakeBlob, on("w1")), sdk.Step(DigestBlob, on("w2")))
	blobHomeFlow   = sdk.Step(MakeBlob, on("w1"))
)

func visits(n, sleepMS int, started string) []Visit {
	out := make([]Visit, n)
	for i := range out {
		out[i] = Visit{I: i, SleepMS: sleepMS, Started: started}
	}
	return out
}

// TestMultiNodeMapSpreads: a map's items run on both worker nodes (the
// head has no CPU, each worker node one), each item's result in its place.
func TestMultiNodeMapSpreads(t *testing.T) {
	m := needMultiNode(t)
	got, err := runOn(t.Context(), m.e, placeFlow, visits(8, 400, ""))
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for i, p := range got {
		if p.I != i || p.Square != i*i {
			t.Errorf("item %d: %+v", i, p)
		}
		perNode[p.Node]++
	}
	t.Logf("items per node: %v", perNode)
	if len(got) != 8 || perNode["w1"] == 0 || perNode["w2"] == 0 || perNode["w1"]+perNode["w2"] != 8 {
		t.Fatalf("%d items, per node %v: want all 8 on w1 and w2, some on each", len(got), perNode)
	}
}

// TestMultiNodeLargeResult: results above Ray's inline limit for returns
// (100 KiB: larger ones live in the object store of the node that made
// them) cross nodes whole: made on w1, read on w2, and brought from w1 to
// the coordinator on the head. 64 KiB is below the limit.
func TestMultiNodeLargeResult(t *testing.T) {
	m := needMultiNode(t)
	for _, n := range []int{64 << 10, 100 << 10, 100<<10 + 1, 8 << 20} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			sum := sha256.Sum256([]byte(blobData(n)))
			want := Digested{From: "w1", Node: "w2", Len: n, SHA256: hex.EncodeToString(sum[:])}
			got, err := runOn(t.Context(), m.e, blobAcrossFlow, n)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("w1 -> w2 (-want +got):\n%s", d)
			}
			home, err := runOn(t.Context(), m.e, blobHomeFlow, n)
			if err != nil {
				t.Fatal(err)
			}
			if home.Node != "w1" || home.Data != blobData(n) {
				t.Fatalf("w1 -> coordinator: node %q, %d bytes (equal: %v)", home.Node, len(home.Data), home.Data == blobData(n))
			}
		})
	}
}

// TestMultiNodeKilled kills worker node w1 (its raylet and every process
// of it) while a map's items run on it: with Ray's task retries the run
// completes with the result of an undisturbed run, its lost items rerun on
// w2; without retries it fails with a *TaskError of kind "node_died"
// naming w1's Ray node ID (ErrNodeLost). w1 is started again after each
// case.
func TestMultiNodeKilled(t *testing.T) {
	m := needMultiNode(t)
	const n = 8
	want := make([]int, n)
	for i := range want {
		want[i] = i * i
	}
	for _, tc := range []struct {
		name  string
		flow  sdk.Flow[[]Visit, []int]
		retry bool
	}{{"retried", squareFlow, true}, {"not retried", squareNoRetryFlow, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { m.script(t, "restart", "w1") })
			lost := m.read(t, "w1.node_id")
			started := filepath.Join(t.TempDir(), "started")
			type result struct {
				v   []int
				err error
				at  time.Time
			}
			done := make(chan result, 1)
			go func() {
				v, err := runOn(context.Background(), m.e, tc.flow, visits(n, 3000, started))
				done <- result{v, err, time.Now()}
			}()
			// Kill w1 once an item runs there.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := testwait.Poll(ctx, 50*time.Millisecond, "an item on w1", func(context.Context) (bool, error) {
				b, _ := os.ReadFile(started)
				return strings.Contains(string(b), "w1 "), nil
			}); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(started)
			killed := time.Now() // the script kills w1 first thing
			m.script(t, "kill", "w1")
			var r result
			select {
			case r = <-done:
			case <-time.After(3 * time.Minute):
				t.Fatal("no result within 3 minutes of the kill")
			}
			t.Logf("node w1 (%s) killed after %d item starts; run ended %v after the kill",
				lost[:12], strings.Count(string(before), "\n"), r.at.Sub(killed).Round(time.Millisecond))
			if tc.retry {
				if r.err != nil {
					t.Fatalf("the run failed: %v", r.err)
				}
				if d := cmp.Diff(want, r.v); d != "" {
					t.Fatalf("result (-want +got):\n%s", d)
				}
				// The items w1 ran when it was killed (they sleep 3 s) must
				// have started again on w2.
				after, _ := os.ReadFile(started)
				type start struct {
					node string
					at   time.Time
				}
				starts := map[string][]start{}
				for _, l := range strings.Split(strings.TrimSpace(string(after)), "\n") {
					f := strings.Fields(l)
					if len(f) != 3 {
						t.Fatalf("started: line %q", l)
					}
					ns, err := strconv.ParseInt(f[2], 10, 64)
					if err != nil {
						t.Fatalf("started: line %q: %v", l, err)
					}
					starts[f[1]] = append(starts[f[1]], start{f[0], time.Unix(0, ns)})
				}
				var rerun time.Duration
				for item, ss := range starts {
					lost := slices.IndexFunc(ss, func(s start) bool { return s.node == "w1" && s.at.After(killed.Add(-3*time.Second)) })
					if lost < 0 {
						continue
					}
					again := slices.IndexFunc(ss[lost+1:], func(s start) bool { return s.node == "w2" && s.at.After(killed) })
					if again < 0 {
						t.Fatalf("item %s, lost with w1, did not start again on w2: %v", item, ss)
					}
					if d := ss[lost+1+again].at.Sub(killed); rerun == 0 || d < rerun {
						rerun = d
					}
				}
				if rerun == 0 {
					t.Fatalf("no item ran on w1 when it was killed:\n%s", after)
				}
				t.Logf("the first lost item reran on w2 %v after the kill", rerun.Round(time.Millisecond))
				return
			}
			var te *TaskError
			if !errors.As(r.err, &te) || te.Kind != "node_died" || te.LostNode != lost || !errors.Is(r.err, ErrNodeLost) {
				t.Fatalf("want a node_died *TaskError naming %s, got %v", lost, r.err)
			}
			if !strings.Contains(te.Error(), lost) {
				t.Fatalf("error %q does not name the lost node", te.Error())
			}
			t.Logf("error: %v", r.err)
		})
	}
}
