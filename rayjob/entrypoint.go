package rayjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rayflow/rayflow/rayjob/coordinator"
)

// MaxInputBytes bounds a job's input JSON: it travels in the entrypoint
// command line. Larger inputs belong in storage the first step reads.
const MaxInputBytes = 64 << 10

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Entrypoint renders the shell command a Ray Job runs: the application
// binary exe in coordinator mode for flow on input (JSON), with
// RAYFLOW_PYTHON=python when python is set and the extra variables env,
// all scoped to that one process. Every value is shell-quoted.
func Entrypoint(exe, flow string, input json.RawMessage, python string, env map[string]string) (string, error) {
	if exe == "" {
		return "", errors.New("rayflow: ray job: no executable")
	}
	if flow == "" {
		return "", errors.New("rayflow: ray job: no flow name")
	}
	if len(input) == 0 {
		return "", errors.New("rayflow: ray job: no input (the flow's input as JSON)")
	}
	if len(input) > MaxInputBytes {
		return "", fmt.Errorf("rayflow: ray job: the input is %d bytes, over %d", len(input), MaxInputBytes)
	}
	if !json.Valid(input) {
		return "", fmt.Errorf("rayflow: ray job: the input is not JSON: %.100q", input)
	}
	var b strings.Builder
	b.WriteString(coordinator.ModeEnv + "=1 ")
	b.WriteString(coordinator.FlowEnv + "=" + shellQuote(flow) + " ")
	b.WriteString(coordinator.InputEnv + "=" + coordinator.EncodeInput(input) + " ")
	if python != "" {
		b.WriteString("RAYFLOW_PYTHON=" + shellQuote(python) + " ")
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("rayflow: ray job: %q is not an environment variable name", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + shellQuote(env[k]) + " ")
	}
	b.WriteString(shellQuote(exe))
	return b.String(), nil
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
