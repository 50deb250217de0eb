package ray

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExamplesMatchLocal builds examples/fanout and examples/complex and
// checks that -ray prints exactly the local result (and the same failure).
func TestExamplesMatchLocal(t *testing.T) {
	needRay(t)
	t.Parallel()
	if testAddress == "" {
		t.Fatal("no cluster address")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ex := range []string{"fanout", "complex"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, ex), "../../examples/"+ex)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", ex, err, out)
		}
	}
	run := func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, filepath.Join(dir, args[0]), args[1:]...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out := stdout.String()
		if code != 0 {
			// The failure line is the last line on stderr.
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			out = lines[len(lines)-1]
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1], code
	}
	for _, args := range [][]string{
		{"fanout", "-count", "24"},
		{"complex"},
		{"complex", "-fast-items", "9", "-slow-items", "3"},
		{"complex", "-failure-branch", "slow", "-failure-item", "1"},
	} {
		local, lcode := run(args...)
		ray, rcode := run(append(args, "-ray", testAddress)...)
		if local != ray || lcode != rcode {
			t.Errorf("%v:\n local (exit %d): %s\n ray   (exit %d): %s", args, lcode, local, rcode, ray)
		}
	}
}
