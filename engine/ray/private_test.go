package ray

import (
	"bufio"
	"context"
	"encoding/hex"
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

	"github.com/rayflow/rayflow/internal/testwait"
)

// clusterOwnerEnv makes the test binary a private cluster's owner (see
// runClusterOwner) instead of running tests: it names the file where the
// owner writes its bridge's pid and the cluster's addresses.
const clusterOwnerEnv = "RAYFLOW_TEST_CLUSTER_OWNER"

// runClusterOwner starts an engine on a private cluster, runs a chain on
// it (so that workers and leaf processes exist), writes "bridge-pid
// session-dir gcs-address raylet-address" to the file named by
// clusterOwnerEnv and waits to be killed.
func runClusterOwner(out string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := New(ctx, Options{Address: "local", NumCPUs: 1, ObjectStoreMemory: 100 << 20, Stderr: logWriter()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 1
	}
	if _, err := runOn(ctx, e, chainFlow, 1); err != nil {
		fmt.Fprintln(os.Stderr, "owner: run:", err)
		return 1
	}
	b := e.bridgeRuntime().(*rayBridge)
	line := fmt.Sprintf("%d %s %s %s\n", b.PID(), b.SessionDir, b.GCSAddress, b.RayletAddress)
	if err := os.WriteFile(out+".tmp", []byte(line), 0o644); err != nil || os.Rename(out+".tmp", out) != nil {
		fmt.Fprintln(os.Stderr, "owner: writing", out, err)
		return 1
	}
	select {} // until killed
}

// listeningAddrs returns the local addresses of the TCP sockets in
// LISTEN state that the processes pids hold (from their fds and
// /proc/net/tcp, tcp6), each with the process that holds it.
func listeningAddrs(t *testing.T, pids []int) map[string]string {
	t.Helper()
	owner := map[string]int{} // socket inode -> pid
	for _, p := range pids {
		dir := "/proc/" + strconv.Itoa(p) + "/fd"
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			l, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				owner[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = p
			}
		}
	}
	out := map[string]string{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" { // 0A: LISTEN
				continue
			}
			p, ok := owner[fl[9]]
			if !ok {
				continue
			}
			host, port, _ := strings.Cut(fl[1], ":")
			raw, err := hex.DecodeString(host)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("%s: address %q", table, fl[1])
			}
			for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
				slices.Reverse(raw[i : i+4])
			}
			n, _ := strconv.ParseUint(port, 16, 16)
			out[net.JoinHostPort(net.IP(raw).String(), strconv.FormatUint(n, 10))] = procNames([]int{p})
		}
		f.Close()
	}
	return out
}

// A private cluster (Options.Address "local") listens on the loopback
// only and advertises it; and it ends with its owner: when the process
// that started it is SIGKILLed, none of the cluster's processes (GCS,
// raylet, agents, workers, leaf processes) stays behind.
func TestPrivateClusterOwner(t *testing.T) {
	needRay(t)
	out := filepath.Join(t.TempDir(), "owner")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clusterOwnerEnv+"="+out)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var f []string
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := testwait.Poll(ctx, 100*time.Millisecond, "the owner's private cluster", func(context.Context) (bool, error) {
		b, _ := os.ReadFile(out)
		if f = strings.Fields(string(b)); len(f) >= 4 {
			return true, nil
		}
		select {
		case <-exited:
			return false, errors.New("the owner ended before its private cluster was up")
		default:
			return false, nil
		}
	}); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	bridge, _ := strconv.Atoi(f[0])
	session, gcs, raylet := f[1], f[2], f[3]
	members := func() []int {
		ps := append(descendants(bridge), procsMentioning(session)...)
		slices.Sort(ps)
		return slices.Compact(ps)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = syscall.Kill(-bridge, syscall.SIGKILL)
		killAll(members())
	})

	t.Run("listens on the loopback", func(t *testing.T) {
		for _, a := range []string{gcs, raylet} {
			if host, _, _ := net.SplitHostPort(a); host != "127.0.0.1" {
				t.Errorf("the cluster advertises %s, want 127.0.0.1", a)
			}
		}
		addrs := listeningAddrs(t, members())
		var keys []string
		for a := range addrs {
			keys = append(keys, a)
		}
		slices.Sort(keys)
		t.Logf("%d listening sockets: %v", len(keys), keys)
		if len(keys) < 2 { // at least the GCS and the raylet
			t.Fatalf("only %d listening sockets found for the cluster's processes %s", len(keys), procNames(members()))
		}
		for _, a := range keys {
			host, _, _ := net.SplitHostPort(a)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				t.Errorf("%s listens on %s, not on the loopback", addrs[a], a)
			}
		}
	})

	t.Run("ends with its owner", func(t *testing.T) {
		procs := members()
		if len(procs) < 4 {
			t.Fatalf("only %d processes of the private cluster found:\n%s", len(procs), cmdlines(procs))
		}
		t.Logf("%d processes of the private cluster: %s", len(procs), procNames(procs))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		<-exited
		const bound = 5 * time.Second
		var left []int
		ctx, cancel := context.WithDeadline(t.Context(), killed.Add(bound+5*time.Second))
		defer cancel()
		_ = testwait.Poll(ctx, 50*time.Millisecond, "the private cluster gone", func(context.Context) (bool, error) {
			left = left[:0]
			for _, p := range append(procs, members()...) {
				if alive(p) && !slices.Contains(left, p) {
					left = append(left, p)
				}
			}
			return len(left) == 0, nil
		})
		took := time.Since(killed)
		if len(left) > 0 {
			t.Fatalf("%d processes of the private cluster outlived their owner by %v:\n%s", len(left), took.Round(time.Millisecond), cmdlines(left))
		}
		t.Logf("the private cluster ended %v after its owner was killed", took.Round(time.Millisecond))
		if took > bound {
			t.Fatalf("the private cluster took %v to end after its owner was killed, want under %v", took, bound)
		}
	})
}
