// Package lifecycle_test holds the conformance scenarios of the compiled-
// invocation lifecycle reducer (docs/lifecycle.md, conformance/lifecycle/reducer)
// and runs them against an implementation: this module's reducer in process,
// and the built rayflow command, which speaks `CMD lifecycle replay FILE`
// (README.md documents the JSON-lines format).
//
// The scenario files are the contract, not the Go code: each NAME.jsonl is
// a replay input and NAME.out the exact expected output. The folder holds
// tests only, so it is not a package another one imports; scenarios_test.go
// generates the files (with -update) and checks every scenario's
// hand-written per-event expectations while doing so.
package lifecycle_test

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path"
	"sort"
	"strings"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
)

//go:embed scenarios/*.jsonl scenarios/*.out
var files embed.FS

// Scenario is one conformance vector: a replay input and its exact
// expected output.
type Scenario struct {
	Name  string
	Input []byte // NAME.jsonl
	Want  []byte // NAME.out
}

// WantExit is the exit status `lifecycle replay` must end with: 3 when the
// header is refused, else 0.
func (s Scenario) WantExit() int {
	if bytes.HasPrefix(s.Want, []byte(`{"session_rejection":`)) {
		return 3
	}
	return 0
}

// Scenarios returns every embedded scenario, sorted by name.
func Scenarios() ([]Scenario, error) {
	names, err := fs.Glob(files, "scenarios/*.jsonl")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Scenario, 0, len(names))
	for _, n := range names {
		in, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		want, err := files.ReadFile(strings.TrimSuffix(n, ".jsonl") + ".out")
		if err != nil {
			return nil, fmt.Errorf("scenario %s has no expected output: %w", n, err)
		}
		out = append(out, Scenario{Name: strings.TrimSuffix(path.Base(n), ".jsonl"), Input: in, Want: want})
	}
	return out, nil
}

// Native replays s through this module's reducer and returns the output and
// the exit status the CLI would give.
func Native(s Scenario) ([]byte, int, error) {
	var out bytes.Buffer
	err := reducer.Replay(bytes.NewReader(s.Input), &out)
	var rej *reducer.Rejection
	switch {
	case err == nil:
		return out.Bytes(), 0, nil
	case errors.As(err, &rej):
		return out.Bytes(), 3, nil
	}
	return out.Bytes(), 1, err
}

// Command replays the scenario file at file through `argv... lifecycle
// replay FILE` and returns its stdout and exit status.
func Command(ctx context.Context, argv []string, file string) ([]byte, int, error) {
	args := append(append([]string{}, argv[1:]...), "lifecycle", "replay", file)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return nil, -1, err
	}
	return stdout.Bytes(), 0, nil
}

// Check compares an implementation's output and exit status with s.
func (s Scenario) Check(got []byte, exit int) error {
	if exit != s.WantExit() {
		return fmt.Errorf("%s: exit status %d, want %d", s.Name, exit, s.WantExit())
	}
	if bytes.Equal(got, s.Want) {
		return nil
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(s.Want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Errorf("%s: output line %d:\n got: %s\nwant: %s", s.Name, i+1, g, w)
		}
	}
	return fmt.Errorf("%s: output differs", s.Name)
}
