package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The Makefile's `make test` must do its own set-up on a fresh clone:
// create the venv, start the Ray head the tests need, stop it afterwards
// (also when a check fails), and reuse a head that `make ray-up` started
// (leaving it running). These tests run the real Makefile in a scratch
// directory with a fake Python whose venv has a fake `ray` (it prints what
// `ray start --head --block` prints and waits), and a probe check in place
// of the real checks, and a fake chromium on PATH (the browser tests' Debian
// package, which make test installs when it is missing), so they need
// neither Ray, nor the network, nor root.

const fakePython = `#!/bin/sh
# fake python3: "-m venv DIR" makes a venv whose pip "installs" ray
if [ "$1" = -m ] && [ "$2" = venv ]; then
	mkdir -p "$3/bin"
	cat >"$3/bin/python" <<'PY'
#!/bin/sh
[ -f "$(dirname "$0")/ray-installed" ]
PY
	cat >"$3/bin/pip" <<'PIP'
#!/bin/sh
touch "$(dirname "$0")/ray-installed"; echo pip "$@" >>"$(dirname "$0")/../../calls"
PIP
	cat >"$3/bin/ray" <<'RAY'
#!/bin/sh
echo ray "$@" >>"$(dirname "$0")/../../calls"
echo 'Ray runtime started.'
exec sleep 120
RAY
	chmod +x "$3/bin/python" "$3/bin/pip" "$3/bin/ray"
	exit 0
fi
exit 1
`

// fakeChromium stands for the chromium that make test's chromium target
// finds, so that it does not install the real one (as root, racing the
// other tests for apt's lock).
const fakeChromium = `#!/bin/sh
echo "Chromium 0 (fake)"
`

// probe.mk replaces the checks: it records the Ray address it was given and
// fails when PROBE_FAIL is set.
const probeMakefile = `probe:
	@echo "$$RAYFLOW_RAY_ADDRESS" >>addresses
	@test -z "$$PROBE_FAIL"
`

type makeDir struct {
	t   *testing.T
	dir string
}

func newMakeDir(t *testing.T) makeDir {
	t.Helper()
	for _, tool := range []string{"make", "setsid", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	dir := t.TempDir()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"Makefile": string(mk), "probe.mk": probeMakefile, "python3": fakePython}
	// The scripts behind the targets, as in the checkout.
	scripts, err := filepath.Glob("../../scripts/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts/*.sh: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range scripts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join("scripts", filepath.Base(p))] = string(b)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "chromium"), []byte(fakeChromium), 0o755); err != nil {
		t.Fatal(err)
	}
	d := makeDir{t, dir}
	t.Cleanup(func() { d.run(nil, "ray-down") })
	return d
}

// run runs make with the fakes and returns its exit status and output.
func (d makeDir) run(env []string, args ...string) (int, string) {
	d.t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "PYTHON=" + filepath.Join(d.dir, "python3"),
		"RAY_PORT=1", "TEST_CHECKS=probe"}, args...)...)
	cmd.Dir = d.dir
	// The PostgreSQL half is given (RAYFLOW_TEST_DATABASE_URL), so no cluster starts.
	cmd.Env = append(os.Environ(), "MAKEFILES=probe.mk", "RAYFLOW_RAY_ADDRESS=", "MAKEFLAGS=", "RAYFLOW_TEST_DATABASE_URL=postgres://probe",
		"PATH="+filepath.Join(d.dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	return 0, string(out)
}

func (d makeDir) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(d.dir, name))
	return string(b)
}

// headPGID returns the process group recorded by ray-up, or 0.
func (d makeDir) headPGID() int {
	pg, _ := strconv.Atoi(strings.TrimSpace(d.read(".ray-local/pgid")))
	return pg
}

func alive(pgid int) bool { return pgid > 0 && syscall.Kill(-pgid, 0) == nil }

func TestMakeTestSetsUpAndTearsDown(t *testing.T) {
	t.Parallel()
	d := newMakeDir(t)
	code, out := d.run(nil, "test")
	if code != 0 || !strings.Contains(out, "make test: all checks passed") {
		t.Fatalf("make test on a fresh directory: exit %d\n%s", code, out)
	}
	calls := d.read("calls")
	if !strings.Contains(calls, "pip install") || !strings.Contains(calls, "ray start --head") {
		t.Errorf("make test did not create the venv and start a head; calls:\n%s", calls)
	}
	if got := strings.TrimSpace(d.read("addresses")); got != "127.0.0.1:1" {
		t.Errorf("the checks ran with RAYFLOW_RAY_ADDRESS=%q, want the head it started", got)
	}
	if _, err := os.Stat(filepath.Join(d.dir, ".ray-local")); !os.IsNotExist(err) {
		t.Errorf("the head make test started is still recorded (not stopped): %v\n%s", err, out)
	}
	// A second run reuses the venv.
	if code, out := d.run(nil, "test"); code != 0 || strings.Count(d.read("calls"), "pip install") != 1 {
		t.Errorf("second make test: exit %d, venv created again:\n%s", code, out)
	}
}

func TestMakeTestStopsItsHeadWhenACheckFails(t *testing.T) {
	t.Parallel()
	d := newMakeDir(t)
	code, out := d.run([]string{"PROBE_FAIL=1"}, "test")
	if code == 0 || strings.Contains(out, "all checks passed") {
		t.Fatalf("make test with a failing check: exit %d\n%s", code, out)
	}
	if !strings.Contains(d.read("calls"), "ray start --head") {
		t.Fatalf("no head was started:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(d.dir, ".ray-local")); !os.IsNotExist(err) || !strings.Contains(out, "ray-down: stopped") {
		t.Errorf("the head was not stopped after the failure:\n%s", out)
	}
}

func TestMakeTestReusesTheHeadOfRayUp(t *testing.T) {
	t.Parallel()
	d := newMakeDir(t)
	if code, out := d.run(nil, "ray-up"); code != 0 {
		t.Fatalf("make ray-up: exit %d\n%s", code, out)
	}
	pg := d.headPGID()
	if !alive(pg) {
		t.Fatalf("ray-up's head is not running (pgid %d)", pg)
	}
	code, out := d.run(nil, "test")
	if code != 0 || !strings.Contains(out, "using the Ray head of make ray-up") {
		t.Fatalf("make test: exit %d\n%s", code, out)
	}
	if n := strings.Count(d.read("calls"), "ray start"); n != 1 {
		t.Errorf("%d heads started, want only ray-up's", n)
	}
	if !alive(pg) || d.headPGID() != pg {
		t.Errorf("make test stopped the head of make ray-up")
	}
	if code, out := d.run(nil, "ray-down"); code != 0 || alive(pg) {
		t.Errorf("make ray-down: exit %d, head alive %v\n%s", code, alive(pg), out)
	}
}

func TestMakeTestUsesRayflowRayAddress(t *testing.T) {
	t.Parallel()
	d := newMakeDir(t)
	code, out := d.run([]string{"RAYFLOW_RAY_ADDRESS=127.0.0.1:6399"}, "test")
	if code != 0 || strings.Contains(d.read("calls"), "ray start") {
		t.Fatalf("make test with RAYFLOW_RAY_ADDRESS: exit %d, calls %q\n%s", code, d.read("calls"), out)
	}
	if got := strings.TrimSpace(d.read("addresses")); got != "127.0.0.1:6399" {
		t.Errorf("checks ran with %q", got)
	}
}

// The Makefile stays a table of entry points: a target's recipe is a few lines,
// the shell logic lives in scripts/ (each script runnable on its own).
func TestMakefileRecipesAreShort(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	const maxLines = 3
	target, lines := "", 0
	check := func() {
		if target != "" && lines > maxLines {
			t.Errorf("target %s has a recipe of %d lines (continuations included), want at most %d: move its shell into scripts/", target, lines, maxLines)
		}
	}
	for _, line := range strings.Split(string(mk), "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			lines++
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			check()
			target, lines = "", 0
			if i := strings.Index(line, ":"); i > 0 && !strings.Contains(line[:i], "=") && !strings.HasPrefix(line, ".") {
				target = line[:i]
			}
		}
	}
	check()
}
