package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/sdk"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	for name := range commands {
		code, out, _ := runCLI(t, "", name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: exit %d, output %q", name, code, out)
		}
		if !strings.Contains(strings.ToLower(out), "example") {
			t.Errorf("%s --help has no examples", name)
		}
	}
	if code, out, _ := runCLI(t, "", "help"); code != exitOK || !strings.Contains(out, "canon") {
		t.Errorf("help: %d %q", code, out)
	}
	if code, _, _ := runCLI(t, "", "no-such-command"); code != exitUsage {
		t.Errorf("unknown command exit %d", code)
	}
}

func TestCanonExitStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		args     []string
		code     int
	}{
		{`{"b":1.0,"a":"e\u0301"}`, `{"a":"é","b":1}`, []string{"canon"}, exitOK},
		{`{"p":100.0}`, `{"p":100.0}`, []string{"canon", "--no-fold"}, exitOK},
		{`{"a":NaN}`, "rejected: non_finite: at /a: NaN and Infinity are not allowed\n", []string{"canon"}, exitRejected},
		{`[1]`, "", []string{"canon", "--bogus"}, exitUsage},
		{`{"plan_format":"rayflow.workflow-plan","plan_format_version":1}`, "sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0\n", []string{"fingerprint"}, exitOK},
		{`[1]`, "", []string{"fingerprint", "--domain", "bad\x01"}, exitUsage},
		{`[1]`, "", []string{"canon", "--max-input", "2"}, exitError},
		{`[1]`, "[1]", []string{"canon", "--max-input", "3"}, exitOK},
	} {
		code, out, errOut := runCLI(t, tc.in, tc.args...)
		got := out
		if code == exitRejected {
			got = errOut
		}
		if code != tc.code || (tc.want != "" && got != tc.want) {
			t.Errorf("%v < %q: exit %d, %q (stderr %q); want exit %d, %q", tc.args, tc.in, code, out, errOut, tc.code, tc.want)
		}
	}
}

func TestPlanCommand(t *testing.T) {
	t.Parallel()
	m, err := sdk.Materialize(fanoutflow.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "plan", "fingerprint", "fanout")
	if code != exitOK || strings.TrimSpace(out) != m.Fingerprint {
		t.Fatalf("plan fingerprint: %d %q, want %s", code, out, m.Fingerprint)
	}
	code, out, _ = runCLI(t, "", "plan", "show", "fanout")
	if code != exitOK || strings.TrimSpace(out) != string(m.Canonical) {
		t.Fatalf("plan show differs from Materialize")
	}
	code, _, errOut := runCLI(t, "", "plan", "selection", "--strategy", "compiled_graph", "fanout")
	if code != exitRejected || !strings.Contains(errOut, "rejected: compiled_graph UNSUPPORTED_NODE_MODEL") {
		t.Fatalf("explicit compiled_graph: %d %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "", "plan", "show", "nope"); code != exitUsage {
		t.Fatalf("unknown flow exit %d", code)
	}
}
