package rayjob_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/internal/testwait"
)

// The tests submit Ray Jobs to the dashboard at $RAYFLOW_RAY_DASHBOARD
// (for example http://127.0.0.1:8265 of make ray-up) or, without it, to a
// private head this package starts on free ports and stops at the end.
var (
	dashboard string // the dashboard URL
	python    string // the venv's Python, absolute
	appBinary string // examples/fanout built for the tests
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

// testBuildRevision is the build revision of this process and of the
// jobs it submits.
const testBuildRevision = "rayjob-test"

func runTests(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	os.Setenv(buildid.EnvBuildRevision, testBuildRevision)
	python = rayenv.Python()
	if python == "" {
		fmt.Fprintln(os.Stderr, "rayjob tests need a Python with Ray: make ray-venv")
		return 1
	}
	python, _ = filepath.Abs(python)
	tmp, err := os.MkdirTemp("", "rfjob")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)

	start := time.Now()
	appBinary = filepath.Join(tmp, "fanout")
	build := exec.Command("go", "build", "-o", appBinary, "github.com/rayflow/rayflow/examples/fanout")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building examples/fanout:", err)
		return 1
	}
	dashboard = os.Getenv("RAYFLOW_RAY_DASHBOARD")
	if dashboard == "" {
		stop, url, err := startHead(tmp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting a private Ray head:", err)
			return 1
		}
		defer stop()
		dashboard = url
	}
	fmt.Fprintf(os.Stderr, "rayjob: dashboard %s ready in %v\n", dashboard, time.Since(start).Round(time.Millisecond))
	return m.Run()
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startHead starts a small private Ray head (2 CPUs, 256 MiB object store) with its own ports
// and temp dir, in its own process group, and returns how to stop it.
func startHead(tmp string) (func(), string, error) {
	p, err := freePorts(7)
	if err != nil {
		return nil, "", err
	}
	rayBin := filepath.Join(filepath.Dir(python), "ray")
	cmd := exec.Command(rayBin, "start", "--head", "--block", "--node-ip-address=127.0.0.1",
		"--port="+strconv.Itoa(p[0]), "--dashboard-host=127.0.0.1", "--dashboard-port="+strconv.Itoa(p[1]),
		"--ray-client-server-port="+strconv.Itoa(p[2]), "--dashboard-agent-listen-port="+strconv.Itoa(p[3]),
		"--dashboard-agent-grpc-port="+strconv.Itoa(p[4]), "--metrics-export-port="+strconv.Itoa(p[5]),
		"--runtime-env-agent-port="+strconv.Itoa(p[6]),
		"--num-cpus=2", "--object-store-memory=268435456", "--temp-dir="+filepath.Join(tmp, "ray"),
		"--disable-usage-stats")
	cmd.Env = append(os.Environ(), "RAY_USAGE_STATS_ENABLED=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	pgid := cmd.Process.Pid
	stop := func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
	}
	ready := make(chan error, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if !sent {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ray runtime started") {
					ready <- nil
					sent = true
				}
			}
		}
		if !sent {
			ready <- fmt.Errorf("ray start exited:\n%s", log.String())
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop()
			return nil, "", err
		}
	case <-time.After(2 * time.Minute):
		stop()
		return nil, "", fmt.Errorf("ray start: no head after 2 minutes")
	}
	url := "http://127.0.0.1:" + strconv.Itoa(p[1])
	// The dashboard's job module can lag the runtime a little.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testwait.Poll(ctx, 250*time.Millisecond, "the dashboard at "+url, func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p[1]), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	}); err != nil {
		stop()
		return nil, "", err
	}
	return stop, url, nil
}
