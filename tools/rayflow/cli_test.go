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
