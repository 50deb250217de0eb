package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
)

// An application's own flow from the command line, through the real
// binaries: `rayflow tasks enqueue app.squares` is refused while no
// worker publishes it; once the application's worker process
// (testdata/app) runs, `rayflow flows list` shows it with that worker,
// the enqueue is accepted and runs, bad input is refused (exit 3) naming
// the field, a queue no live worker serves is refused unless
// --allow-unserved; after kill -9 of the worker the flow is gone again.
func TestApplicationFlowFromCLI(t *testing.T) {
	db := pgtest.URL(t)
	bin := buildCLI(t)
	app := filepath.Join(t.TempDir(), "app")
	if out, err := exec.Command("go", "build", "-o", app, "./testdata/app").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/app: %v\n%s", err, out)
	}
	cli := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String())
	}
	if code, _, errOut := cli("migrate", "up"); code != exitOK {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	good := `{"numbers":[1,2,3]}`
	if code, _, errOut := cli("tasks", "enqueue", "app.squares", "--input", good); code != exitRejected || !strings.Contains(errOut, "unknown flow") {
		t.Fatalf("before the application's worker runs: exit %d %q", code, errOut)
	}
	worker := exec.Command(app)
	worker.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db, "APP_WORKER_ID=app-1")
	worker.Stderr = os.Stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	var listed string
	testwait.Until(t, 30*time.Second, "app.squares in rayflow flows list", func() bool {
		_, listed, _ = cli("flows", "list")
		return strings.Contains(listed, "app.squares")
	})
	code, out, errOut := cli("flows", "list", "--json", "app.squares")
	var flows []durable.PublishedFlow
	if code != exitOK || json.Unmarshal([]byte(out), &flows) != nil || len(flows) != 1 {
		t.Fatalf("flows list --json: %d %q %q", code, out, errOut)
	}
	f := flows[0]
	if f.Flow != "app.squares" || f.Queue != "default" || !strings.HasPrefix(f.Fingerprint, "sha256:") ||
		!strings.Contains(string(f.InputSchema), `"numbers"`) {
		t.Fatalf("published: %+v", f)
	}
	if d := cmp.Diff([]string{"app-1"}, f.Workers); d != "" {
		t.Fatalf("workers (-want +got):\n%s", d)
	}
	lines := strings.Split(listed, "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "FLOW QUEUE WORKERS BUILD FINGERPRINT" ||
		strings.Join(strings.Fields(lines[1]), " ") != strings.Join([]string{"app.squares", "default", "app-1", orDash(f.BuildRevision), f.Fingerprint}, " ") {
		t.Fatalf("flows list:\n%s", listed)
	}
	code, id, errOut := cli("tasks", "enqueue", "app.squares", "--input", good)
	if code != exitOK {
		t.Fatalf("enqueue: %d %q", code, errOut)
	}
	if code, out, errOut := cli("tasks", "wait", id, "--timeout", "30s"); code != exitOK || out != "14" {
		t.Fatalf("wait: %d %q %q", code, out, errOut)
	}
	for _, bad := range []struct{ input, field string }{
		{`{"numbers":[1,"2"]}`, "field numbers[1]: want integer, got the string \"2\""},
		{`{"numbers":[1],"scale":"x"}`, "field scale: want number or null"},
		{`{"numbrs":[1]}`, "field numbers: required, missing"},
		{`{"numbers":[1],"extra":1}`, "field extra: unknown field (known: numbers, scale)"},
	} {
		code, _, errOut := cli("tasks", "enqueue", "app.squares", "--input", bad.input)
		if code != exitRejected || !strings.Contains(errOut, bad.field) {
			t.Errorf("%s: exit %d %q, want %d naming %q", bad.input, code, errOut, exitRejected, bad.field)
		}
	}
	if code, _, errOut := cli("tasks", "enqueue", "app.squares", "--input", good, "--queue", "reports"); code != exitRejected ||
		!strings.Contains(errOut, `no live worker serves the flow on this queue: app.squares on queue "reports" (live workers serve it on: default)`) {
		t.Fatalf("unserved queue: exit %d %q", code, errOut)
	}
	if code, out, errOut := cli("tasks", "enqueue", "app.squares", "--input", good, "--queue", "reports", "--allow-unserved"); code != exitOK || !durable.ValidTaskID(out) {
		t.Fatalf("--allow-unserved: exit %d %q %q", code, out, errOut)
	}
	_ = worker.Process.Kill() // SIGKILL
	_ = worker.Wait()
	testwait.Until(t, 30*time.Second, "app.squares gone from rayflow flows list", func() bool {
		_, listed, _ = cli("flows", "list")
		return !strings.Contains(listed, "app.squares")
	})
	if code, _, errOut := cli("tasks", "enqueue", "app.squares", "--input", good); code != exitRejected || !strings.Contains(errOut, "unknown flow") {
		t.Fatalf("after kill -9: exit %d %q", code, errOut)
	}
}
