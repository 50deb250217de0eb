package validatecmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	valid := "../../../schema/testdata/valid/LifecycleSnapshot/base.json"
	invalid := "../../../schema/testdata/invalid/LifecycleSnapshot/capacity_queue.json"
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"valid", []string{"--schema", "LifecycleSnapshot", valid}, ExitOK, valid + ": ok\n"},
		{"hash prefix", []string{"--schema", "#LifecycleSnapshot", valid}, ExitOK, valid + ": ok\n"},
		{"invalid", []string{"--schema", "LifecycleSnapshot", valid, invalid}, ExitInvalid, invalid + ": /capacity/queue_capacity: CONST: must be 0\n"},
		{"unknown schema", []string{"--schema", "Nope", valid}, ExitUsage, ""},
		{"no files", []string{"--schema", "LifecycleSnapshot"}, ExitUsage, ""},
		{"missing file", []string{"--schema", "LifecycleSnapshot", "nope.json"}, ExitError, ""},
		{"list", []string{"-list"}, ExitOK, "LifecycleSnapshot\n"},
		{"help", []string{"--help"}, ExitOK, "Examples:\n  rayflow validate --schema Plan plan.json\n"},
		{"help short", []string{"-h"}, ExitOK, "Usage: rayflow validate --schema DEF FILE...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Fatalf("stdout %q does not contain %q", out.String(), tt.out)
			}
		})
	}
}
