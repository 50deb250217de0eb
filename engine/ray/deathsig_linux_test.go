package ray

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/testwait"
)

// TestLeafParentDeathSignal: a leaf process dies with the process that
// started it, though it was started without a preexec hook and its input
// stays open (the parent-death signal it sets itself); one whose parent is
// not RAYFLOW_LEAF_PARENT (the parent died before the signal was set)
// exits at once.
func TestLeafParentDeathSignal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, hold, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	// The shell starts the leaf with the pipe as its input (fd 3: a
	// background job's fd 0 is /dev/null; the pipe is kept open by this
	// test), writes its pid to a file and is then killed.
	pidFile := filepath.Join(t.TempDir(), "leaf.pid")
	sh := exec.Command("sh", "-c", `RAYFLOW_LEAF_PARENT=$$ "$0" <&3 3<&- & echo $! > "$1"; exec sleep 60 3<&-`, exe, pidFile)
	sh.Env = append(os.Environ(), leafEnv+"=1")
	sh.ExtraFiles = []*os.File{in}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	var leaf int
	testwait.Until(t, 10*time.Second, "the shell started the leaf", func() bool {
		b, _ := os.ReadFile(pidFile)
		if bytes.HasSuffix(b, []byte("\n")) {
			leaf, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return leaf != 0
	})
	time.Sleep(200 * time.Millisecond) // the leaf is past its init and waits for its handshake
	if !alive(leaf) {
		t.Fatalf("the leaf process %d is not running before its parent is killed", leaf)
	}
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sh.Wait()
	if left := waitGone([]int{leaf}, 5*time.Second); len(left) > 0 {
		_ = syscall.Kill(leaf, syscall.SIGKILL)
		t.Fatalf("the leaf process %d outlived its parent by 5 s", leaf)
	}

	stray := exec.Command(exe)
	stray.Env = append(os.Environ(), leafEnv+"=1", fmt.Sprintf("%s=%d", leafParentEnv, os.Getpid()+1<<22))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stray.Stdin = r
	start := time.Now()
	err = stray.Run()
	r.Close()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("a leaf whose parent is not RAYFLOW_LEAF_PARENT: %v after %v; want exit status 1 at once", err, time.Since(start))
	}
}
