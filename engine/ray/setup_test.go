package ray

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/rayenv"
)

// Setup problems are reported before anything is submitted, naming the fix.
func TestSetupErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	fake := func(name, script string) string {
		py := filepath.Join(dir, name+".py")
		if err := os.WriteFile(py, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		sh := filepath.Join(dir, name)
		real, err := exec.LookPath("python3")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sh, []byte("#!/bin/sh\nexec "+real+" "+py+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return sh
	}
	hello := func(ray string) string {
		return `import json, struct, sys
h = json.dumps({"op": "hello", "protocol": ` + strconv.Itoa(bridgeProtocolVersion) + `, "ray": ` + ray + `, "python": "3.11.0", "import_error": "ModuleNotFoundError: No module named 'ray'", "sizes": []}).encode()
sys.stdout.buffer.write(struct.pack(">I", len(h)) + h)
sys.stdout.flush()
sys.stdin.read()
`
	}
	for _, tc := range []struct {
		name, python, address, problem, fix string
	}{
		{"no interpreter", filepath.Join(dir, "missing-python"), "local", "missing-python", "pip install 'ray[default]==2.60.0'"},
		{"no ray", fake("noray", hello("None")), "local", "ray is not importable", "make ray-venv"},
		{"system python", "python3", "local", "ray is not importable", "make ray-venv"},
		{"wrong ray", fake("oldray", hello(`"2.9.0"`)), "local", "has Ray 2.9.0, rayflow requires 2.60.0", "make ray-venv"},
		{"not a bridge", fake("silent", "import sys\nsys.exit(3)\n"), "local", "did not complete its handshake", "make ray-venv"},
		{"unreachable", rayenv.Python(), "127.0.0.1:1", "no Ray cluster reachable at 127.0.0.1:1", "ray start --head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.python == "" {
				t.Skip("no venv with Ray")
			}
			if tc.name == "unreachable" {
				if _, err := os.Stat(tc.python); err != nil {
					t.Skipf("no venv with Ray (%v)", err)
				}
			}
			if tc.python == "python3" && exec.Command("python3", "-c", "import ray").Run() == nil {
				t.Skip("this machine's python3 has ray")
			}
			_, err := New(ctx, Options{Address: tc.address, Python: tc.python, Stderr: logWriter()})
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("want a *SetupError, got %v", err)
			}
			if !strings.Contains(se.Problem, tc.problem) || !strings.Contains(se.Fix, tc.fix) {
				t.Fatalf("got %q; want the problem to mention %q and the fix %q", err, tc.problem, tc.fix)
			}
		})
	}
}
