package ray

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/internal/testwait"
)

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// privateHead is a Ray head this test starts (and kills); never the
// shared one.
type privateHead struct {
	addr string
	pgid int
	dir  string
}

// startPrivateHead starts a head (twice at most: on a loaded machine Ray
// can time out registering its raylet), with extra arguments for ray
// start.
func startPrivateHead(t *testing.T, extra ...string) *privateHead {
	t.Helper()
	var log string
	for range 2 {
		h, l := tryStartHead(t, extra...)
		if h != nil {
			return h
		}
		log = l
	}
	t.Fatalf("the private head did not start:\n%s", log)
	return nil
}

func tryStartHead(t *testing.T, extra ...string) (*privateHead, string) {
	t.Helper()
	py := rayenv.Python()
	rayBin := filepath.Join(filepath.Dir(py), "ray")
	dir, err := os.MkdirTemp("/tmp", "rfh-")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	args := []string{"start", "--head", "--block", "--node-ip-address=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--num-cpus=1", "--object-store-memory=100000000", "--include-dashboard=false", "--disable-usage-stats",
		"--temp-dir=" + dir}
	args = append(args, extra...)
	for _, flag := range []string{"--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port"} {
		args = append(args, flag+"="+strconv.Itoa(freePort(t)))
	}
	var log syncbuf.Buffer
	cmd := exec.Command(rayBin, args...)
	cmd.Env = append(os.Environ(), "RAY_USAGE_STATS_ENABLED=0")
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &privateHead{addr: "127.0.0.1:" + strconv.Itoa(port), pgid: cmd.Process.Pid, dir: dir}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	cleanup := func() {
		h.kill()
		<-exited
		// Whatever of this head is left (it should be nothing).
		for _, pid := range procsMentioning(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	up := false
	_ = testwait.Poll(ctx, 200*time.Millisecond, "the private Ray head", func(context.Context) (bool, error) {
		if strings.Contains(log.String(), "Ray runtime started") {
			up = true
			return true, nil
		}
		select {
		case <-exited:
			return true, nil
		default:
			return false, nil
		}
	})
	if !up { // ray start exited, or the head did not come up in time
		cleanup()
		return nil, log.String()
	}
	t.Cleanup(cleanup)
	return h, ""
}

// kill SIGKILLs the head's whole session (GCS, raylet, agents, workers).
func (h *privateHead) kill() {
	_ = syscall.Kill(-h.pgid, syscall.SIGKILL)
	for _, pid := range procsMentioning(h.dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// procsMentioning lists the processes whose command line contains s.
func procsMentioning(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie: dead, not yet reaped
		}
		out = append(out, pid)
	}
	return out
}

// procNames are the processes' short names (the script for an
// interpreter).
func procNames(pids []int) string {
	var names []string
	for _, p := range pids {
		c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		args := strings.Split(string(c), "\x00")
		name := filepath.Base(args[0])
		if strings.HasPrefix(name, "python") && len(args) > 1 {
			for _, a := range args[1:] {
				if strings.HasSuffix(a, ".py") {
					name = filepath.Base(a)
					break
				}
			}
		}
		names = append(names, name)
	}
	return strings.Join(names, " ")
}

// descendants returns root and every process below it, and every process
// in root's process group.
func descendants(root int) []int {
	parent := map[int]int{}
	group := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		group[pid], _ = strconv.Atoi(f[2])
	}
	var out []int
	for pid := range parent {
		in := group[pid] == root
		for p := pid; !in && p > 1; p = parent[p] {
			in = p == root
		}
		if in {
			out = append(out, pid)
		}
	}
	return out
}

func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// waitGone waits up to d for every pid to end; it returns those left.
func waitGone(pids []int, d time.Duration) []int {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var left []int
	_ = testwait.Poll(ctx, 100*time.Millisecond, "the processes gone", func(context.Context) (bool, error) {
		left = left[:0]
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		return len(left) == 0, nil
	})
	return left
}

func cmdlines(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat") // state, parent, group, session
		if i := bytes.LastIndexByte(st, ')'); i >= 0 {
			st = st[i+1:]
		}
		f := strings.Fields(string(st))
		fmt.Fprintf(&b, "%d %v %s\n", p, f[:min(len(f), 4)], bytes.ReplaceAll(c, []byte{0}, []byte{' '}))
	}
	return b.String()
}

// killProc SIGKILLs the head's processes whose command line contains
// what (e.g. "gcs_server", "/raylet").
func (h *privateHead) killProc(t *testing.T, what string) {
	t.Helper()
	n := 0
	for _, pid := range procsMentioning(h.dir) {
		c, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if exe, _, _ := bytes.Cut(c, []byte{0}); bytes.Contains(exe, []byte(what)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no %s process of the private head", what)
	}
}

// Losing the head mid-run (the whole head, its GCS or its raylet) is
// detected within seconds as ErrClusterLost; later Runs fail at once;
// Close is prompt.
func TestClusterLost(t *testing.T) {
	needRay(t)
	for _, tc := range []struct {
		name string
		kill func(t *testing.T, h *privateHead)
	}{
		{"head", func(_ *testing.T, h *privateHead) { h.kill() }},
		{"gcs", func(t *testing.T, h *privateHead) { h.killProc(t, "gcs_server") }},
		{"raylet", func(t *testing.T, h *privateHead) { h.killProc(t, "/raylet") }},
	} {
		t.Run(tc.name, func(t *testing.T) { testClusterLost(t, tc.kill) })
	}
}

func testClusterLost(t *testing.T, kill func(*testing.T, *privateHead)) {
	head := startPrivateHead(t)
	ctx := context.Background()
	e, err := New(ctx, Options{Address: head.addr, Stderr: logWriter(), CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errc, leaf := startLongLeaf(t, ctx, e)
	killed := time.Now()
	kill(t, head)
	select {
	case err = <-errc:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not fail within 20s of losing the head")
	}
	took := time.Since(killed)
	if !errors.Is(err, ErrClusterLost) {
		t.Fatalf("want ErrClusterLost, got %v", err)
	}
	var cl *BridgeError
	if !errors.As(err, &cl) || !cl.Lost || !strings.HasSuffix(cl.Address, head.addr[strings.LastIndex(head.addr, ":"):]) {
		t.Fatalf("want a lost-cluster *BridgeError for %s, got %#v", head.addr, err)
	}
	t.Logf("failed %v after the head was killed: %v", took.Round(time.Millisecond), strings.SplitN(err.Error(), "\n", 2)[0])
	if took > 10*time.Second {
		t.Errorf("cluster loss took %v to detect, want a few seconds", took)
	}
	start := time.Now()
	if _, err := runOn(ctx, e, chainFlow, 1); !errors.Is(err, ErrClusterLost) || time.Since(start) > time.Second {
		t.Fatalf("a later run: %v after %v, want ErrClusterLost at once", err, time.Since(start))
	}
	closeWithin(t, e, 2*time.Second, " with a dead head")
	head.kill()
	if left := waitGone([]int{leaf}, 10*time.Second); len(left) > 0 {
		t.Fatalf("the leaf process outlived its cluster:\n%s", cmdlines(left))
	}
}

// startLongLeaf starts a run of one leaf of a minute (no retries) on e
// and returns the channel of the run's error and the leaf's process id,
// once the leaf runs.
func startLongLeaf(t *testing.T, ctx context.Context, e *Engine) (<-chan error, int) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "pid")
	errc := make(chan error, 1)
	go func() {
		_, err := runOn(ctx, e, noRetryFlow, Job{I: 1, SleepMS: 60_000, Marker: marker})
		errc <- err
	}()
	return errc, leafPID(t, marker)
}

// closeDuringRun closes e within about its 1 s timeout and checks that
// the run of errc ends with ErrClosed within 5 s.
func closeDuringRun(t *testing.T, e *Engine, errc <-chan error) {
	t.Helper()
	closeWithin(t, e, 2500*time.Millisecond, ", its timeout 1s")
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("want ErrClosed, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end within 5s of Close")
	}
}

// closeWithin closes e and fails t unless Close returns nil within bound;
// what says more of the case in the messages.
func closeWithin(t *testing.T, e *Engine, bound time.Duration, what string) {
	t.Helper()
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > bound {
		t.Fatalf("Close took %v%s, want at most %v", d, what, bound)
	} else {
		t.Logf("Close took %v%s", d.Round(time.Millisecond), what)
	}
}

// Close right after the head died (before the loss is detected) ends
// within its timeout.
func TestCloseWithDeadHead(t *testing.T) {
	needRay(t)
	head := startPrivateHead(t)
	e, err := New(context.Background(), Options{Address: head.addr, Stderr: logWriter(), CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	head.kill()
	closeWithin(t, e, 2*time.Second, " with a dead head")
	if _, err := runOn(context.Background(), e, chainFlow, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("a run after Close: %v, want ErrClosed", err)
	}
}

// Close during a run on a private cluster cancels the run, starts no
// second Ray session, ends within its timeout, and leaves no process of
// the cluster behind.
func TestCloseDuringRunPrivateCluster(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	var log syncbuf.Buffer
	e, err := New(ctx, Options{Address: "local", NumCPUs: 1, ObjectStoreMemory: 100 << 20, Stderr: &log, CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := e.bridgeRuntime().(*rayBridge)
	session := filepath.Base(b.SessionDir)
	if !strings.HasPrefix(session, "session_") {
		t.Fatalf("session dir %q", b.SessionDir)
	}
	errc, leaf := startLongLeaf(t, ctx, e)
	procs := append(procsMentioning(session), leaf)
	procs = append(procs, descendants(b.PID())...) // the bridge, Ray's services, agents, workers
	slices.Sort(procs)
	procs = slices.Compact(procs)
	if len(procs) < 4 {
		t.Fatalf("only %d processes of the private cluster found:\n%s", len(procs), cmdlines(procs))
	}
	t.Logf("%d processes of the private cluster before Close: %s", len(procs), procNames(procs))
	closeDuringRun(t, e, errc)
	if left := waitGone(procs, 5*time.Second); len(left) > 0 {
		t.Fatalf("processes of the private cluster outlived Close:\n%s", cmdlines(left))
	}
	time.Sleep(500 * time.Millisecond) // a window for a second session's line, which must not come
	if n := strings.Count(log.String(), "Started a local Ray instance"); n != 1 {
		t.Fatalf("%d local Ray sessions started, want 1:\n%s", n, log.String())
	}
}

// Close during a run on a cluster the engine only connects to cancels the
// run, starts no local Ray session, ends within its timeout, and leaves
// the cluster running.
func TestCloseDuringRunConnectedCluster(t *testing.T) {
	needRay(t)
	head := startPrivateHead(t)
	ctx := context.Background()
	var log syncbuf.Buffer
	e, err := New(ctx, Options{Address: head.addr, Stderr: &log, CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errc, leaf := startLongLeaf(t, ctx, e)
	closeDuringRun(t, e, errc)
	// The run's task is gone with the driver; the cluster is not.
	if left := waitGone([]int{leaf}, 20*time.Second); len(left) > 0 {
		t.Fatalf("the run's leaf outlived Close:\n%s", cmdlines(left))
	}
	if err := dialTimeout(head.addr, time.Second); err != nil {
		t.Fatalf("the cluster is gone after Close: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a window for a local session's line, which must not come
	if strings.Contains(log.String(), "Started a local Ray instance") {
		t.Fatalf("Close started a local Ray session:\n%s", log.String())
	}
}
