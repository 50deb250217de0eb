package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The tests in this file run the built rayflow command as a user would.

var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// builtCLI builds the rayflow command once per test binary.
func builtCLI(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binError = os.MkdirTemp("", "rayflow-cli-test-"); binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "rayflow")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binError = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// execCLI runs the built command with stdin and returns its exit status,
// stdout and stderr.
func execCLI(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// checkStderr checks the one-prefix rule: no line of stderr carries
// "rayflow: " more than once.
func checkStderr(t *testing.T, name, stderr string) {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Count(l, "rayflow: ") > 1 {
			t.Errorf("%s: stderr line has more than one rayflow: prefix: %q", name, l)
		}
	}
}

const lifecycleHeader = `{"session_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42"},` +
	`"deadlines":{"outer":100,"admission":10,"submission":20,"result":30,"cancellation":40,"drain":50,"teardown":60},` +
	`"capacity":{"session_owners":1,"callers":1,"maximum_in_flight":1,"maximum_buffered_results":1,"owner_concurrency":1,"queue_capacity":0}}`

const staleCallback = `{"kind":"VALIDATED","protocol_version":1,"observed_at":1,"action_token":"cg-lifecycle-v1:9:VALIDATE",` +
	`"session_identity":{"task_execution_pk":42,"attempt_number":1,"execution_generation":0,"run_id":"rayflow:42"}}`

func TestLifecycleReplayCommand(t *testing.T) {
	t.Parallel()
	scenario := func(events int, tail ...string) []byte {
		lines := []string{lifecycleHeader}
		for range events {
			lines = append(lines, staleCallback)
		}
		return []byte(strings.Join(append(lines, tail...), "\n") + "\n")
	}
	stale := `{"rejection":"STALE_ACTION_TOKEN"}` + "\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		input  []byte
		code   int
		stdout string // exact, or a prefix when the snapshot follows
		prefix bool
		stderr string
	}{
		// 1,000 outcome lines are 35,000 bytes: more than four write buffers.
		{"malformed after 1000 events", scenario(1000, `{"kind":`), exitError, strings.Repeat(stale, 1000), false, "rayflow: lifecycle replay: line 1002: "},
		{"malformed after one event", scenario(1, `not json`), exitError, stale, false, "rayflow: lifecycle replay: line 3: "},
		{"well-formed", scenario(3), exitOK, strings.Repeat(stale, 3) + `{"capacity":`, true, ""},
		{"refused header", []byte(`{"capacity":{}}` + "\n"), exitRejected, `{"session_rejection":"INVALID_IDENTITY"}` + "\n", false, "rejected: INVALID_IDENTITY: "},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
		if err := os.WriteFile(file, tc.input, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"lifecycle", "replay", file}, {"lifecycle", "replay", "-"}} {
			code, out, errOut := execCLI(t, tc.input, args...)
			ok := out == tc.stdout || (tc.prefix && strings.HasPrefix(out, tc.stdout))
			if code != tc.code || !ok || !strings.HasPrefix(errOut, tc.stderr) || (tc.stderr == "") != (errOut == "") {
				t.Errorf("%s (%s): exit %d, %d stdout bytes, stderr %q; want exit %d, %d bytes, stderr %q…",
					tc.name, args[2], code, len(out), errOut, tc.code, len(tc.stdout), tc.stderr)
			}
			checkStderr(t, tc.name, errOut)
		}
	}
}

// TestCommandRules runs the built command for each rule of the command
// line: one exit status per kind of outcome across commands (0 ok, 1 error,
// 2 usage, 3 rejected by a contract rule), at most one "rayflow: " prefix
// on any stderr line, inputs from a FILE argument or stdin, and flag values
// refused at their edges instead of being rewritten.
func TestCommandRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.json", `{"b":1.0,"a":[1]}`)
	flat := make([]byte, 0, 8<<20)
	flat = append(flat, '[')
	for len(flat) < 8<<20 {
		flat = append(flat, '1', ',')
	}
	huge := write("huge.json", string(append(flat, '1', ']')))
	invalidSnapshot := write("snapshot.json", `{"schema_version":1}`)
	fp := "sha256:" // fingerprint prefix
	manifest := []string{"rayjob", "manifest", "--name", "fanout", "--image", "ghcr.io/x/fanout:1", "--exe", "/opt/fanout", "--input", "1"}
	m := func(extra ...string) []string {
		return append(append(append([]string{}, manifest...), extra...), "fanout")
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // prefix of stdout
		stderr string // prefix of stderr ("" when it must be empty)
	}{
		{"canon stdin", []string{"canon"}, `[2.0]`, exitOK, "[2]", ""},
		{"canon - is stdin", []string{"canon", "-"}, `[2.0]`, exitOK, "[2]", ""},
		{"canon FILE, not stdin", []string{"canon", one}, `[2.0]`, exitOK, `{"a":[1],"b":1}`, ""},
		{"canon FILE then flag", []string{"canon", one, "--no-fold"}, ``, exitOK, `{"a":[1],"b":1.0}`, ""},
		{"canon two files", []string{"canon", one, one}, ``, exitUsage, "", "rayflow: one input at most"},
		{"canon missing file", []string{"canon", filepath.Join(dir, "nope.json")}, ``, exitError, "", "rayflow: open "},
		{"canon max-input MaxInt64", []string{"canon", "--max-input", "9223372036854775807"}, `[1]`, exitOK, "[1]", ""},
		{"canon max-input MaxInt64 FILE", []string{"canon", "--max-input", "9223372036854775807", one}, ``, exitOK, `{"a"`, ""},
		{"canon max-input over int64", []string{"canon", "--max-input", "9223372036854775808"}, `[1]`, exitUsage, "", "invalid value"},
		{"canon max-input -1", []string{"canon", "--max-input", "-1"}, `[1]`, exitUsage, "", "rayflow: --max-input -1: must not be negative"},
		{"canon max-input 0, empty input", []string{"canon", "--max-input", "0"}, ``, exitRejected, "", "rejected: syntax"},
		{"canon max-input at the size", []string{"canon", "--max-input", "3"}, `[1]`, exitOK, "[1]", ""},
		{"canon max-input one under", []string{"canon", "--max-input", "2"}, `[1]`, exitError, "", "rayflow: stdin is larger than --max-input 2 bytes"},
		{"canon file over max-input", []string{"canon", "--max-input", "2", one}, ``, exitError, "", "rayflow: " + one + " is larger"},
		{"canon rejected", []string{"canon"}, `{"a":NaN}`, exitRejected, "", "rejected: non_finite: at /a: "},
		{"canon 8 MiB over the item cap", []string{"canon", huge}, ``, exitRejected, "", "rejected: array_items: array has 4194305 items, more than 1024"},
		{"canon bad flag", []string{"canon", "--bogus"}, `[1]`, exitUsage, "", "flag provided but not defined"},
		{"fingerprint FILE", []string{"fingerprint", one}, ``, exitOK, fp, ""},
		{"fingerprint two files", []string{"fingerprint", one, one}, ``, exitUsage, "", "rayflow: one input at most"},
		{"fingerprint max-input -5", []string{"fingerprint", "--max-input", "-5"}, `[1]`, exitUsage, "", "rayflow: --max-input -5"},
		{"fingerprint bad domain", []string{"fingerprint", "--domain", "bad\x01"}, `[1]`, exitUsage, "", "rayflow: --domain: "},
		{"fingerprint rejected", []string{"fingerprint", huge}, ``, exitRejected, "", "rejected: array_items: "},
		{"numbers argument", []string{"numbers", "x"}, ``, exitUsage, "", "rayflow: numbers takes no arguments"},
		{"numbers negative", []string{"numbers", "--count", "-1"}, ``, exitUsage, "", "rayflow: --count must not be negative"},
		{"batch argument", []string{"batch", "x"}, ``, exitUsage, "", "rayflow: batch takes no arguments"},
		{"batch malformed line", []string{"batch"}, `{"mode":"fold","input_hex":"5b315d"}` + "\nnot json\n", exitError, `{"canonical_hex":"5b315d"}`, "rayflow: batch line 2: "},
		{"unknown command", []string{"bogus"}, ``, exitUsage, "", "rayflow: unknown command"},
		{"help of a command", []string{"help", "canon"}, ``, exitOK, "Usage: rayflow canon", ""},
		{"help of an unknown command", []string{"help", "bogus"}, ``, exitUsage, "", "rayflow: help takes one command name"},
		{"plan unknown flow", []string{"plan", "show", "nope"}, ``, exitUsage, "", "rayflow: no flow named"},
		{"plan list with a flow", []string{"plan", "list", "fanout"}, ``, exitUsage, "", "rayflow: plan list takes no flow"},
		{"plan selection rejected", []string{"plan", "selection", "--strategy", "compiled_graph", "fanout"}, ``, exitRejected, "", "rejected: compiled_graph "},
		{"lifecycle replay without a file", []string{"lifecycle", "replay"}, ``, exitUsage, "", "Usage:"},
		{"lifecycle replay missing file", []string{"lifecycle", "replay", filepath.Join(dir, "nope")}, ``, exitError, "", "rayflow: open "},
		{"validate invalid record", []string{"validate", "--schema", "LifecycleSnapshot", invalidSnapshot}, ``, exitRejected, invalidSnapshot + ": ", ""},
		{"validate missing file", []string{"validate", "--schema", "LifecycleSnapshot", filepath.Join(dir, "nope")}, ``, exitError, "", "rayflow: validate: "},
		{"conformance extra word", []string{"conformance", "run", "x"}, ``, exitUsage, "", "Usage:"},
		{"manifest", m(), ``, exitOK, "apiVersion: ray.io/v1", ""},
		{"manifest workers 1", m("--workers", "1"), ``, exitOK, "apiVersion", ""},
		{"manifest workers MaxInt32", m("--workers", "2147483647"), ``, exitOK, "apiVersion", ""},
		{"manifest workers MaxInt32+1", m("--workers", "2147483648"), ``, exitUsage, "", "rayflow: --workers 2147483648: must be between 1 and 2147483647"},
		{"manifest workers 3000000000", m("--workers", "3000000000"), ``, exitUsage, "", "rayflow: --workers 3000000000"},
		{"manifest workers 0", m("--workers", "0"), ``, exitUsage, "", "rayflow: --workers 0"},
		{"manifest workers -5", m("--workers", "-5"), ``, exitUsage, "", "rayflow: --workers -5"},
		{"manifest ttl 0", m("--ttl", "0"), ``, exitOK, "apiVersion", ""},
		{"manifest ttl -1", m("--ttl", "-1"), ``, exitUsage, "", "rayflow: --ttl -1: must be between 0 and 2147483647"},
		{"manifest ttl MaxInt32+1", m("--ttl", "2147483648"), ``, exitUsage, "", "rayflow: --ttl 2147483648"},
		{"manifest name upper case", m("--name", "Fanout"), ``, exitUsage, "", `rayflow: invalid RayJob manifest: name "Fanout": a DNS-1035 label`},
		{"manifest name of 48", m("--name", "a"+strings.Repeat("b", 47)), ``, exitUsage, "", "rayflow: invalid RayJob manifest: name "},
		{"manifest namespace", m("--namespace", "flows.prod"), ``, exitUsage, "", `rayflow: invalid RayJob manifest: namespace "flows.prod"`},
		{"manifest cpu 0", m("--cpu", "0"), ``, exitUsage, "", `rayflow: invalid RayJob manifest: cpu "0": must be positive`},
		{"manifest bad input", m("--input", "{"), ``, exitUsage, "", "rayflow: invalid RayJob manifest: ray job: the input is not JSON"},
		{"manifest flow not a label value", append(manifest[:len(manifest):len(manifest)], "team/fanout"), ``, exitUsage, "", `rayflow: invalid RayJob manifest: flow "team/fanout"`},
		{"rayjob poll 0", []string{"rayjob", "status", "--poll", "0", "x"}, ``, exitUsage, "", "rayflow: --poll 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := execCLI(t, []byte(tc.stdin), tc.args...)
			if code != tc.code || !strings.HasPrefix(out, tc.stdout) || !strings.HasPrefix(errOut, tc.stderr) || (tc.stderr == "" && errOut != "") {
				t.Errorf("rayflow %q: exit %d, stdout %.80q, stderr %.300q\nwant exit %d, stdout %q…, stderr %q…", tc.args, code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
			if code != exitOK && code != exitRejected && errOut == "" {
				t.Errorf("rayflow %q: exit %d with nothing on stderr", tc.args, code)
			}
			checkStderr(t, tc.name, errOut)
		})
	}
}
