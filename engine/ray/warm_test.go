package ray

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The warm-up (New's, PROTOCOL.md "warm") is a leaf task with flags "w":
// it starts the worker's leaf process, or loads the leaf library when one
// is named, and a library that cannot load fails it as it would fail the
// leaves (*LeafStartError, reason "start"). A leaf process that does not
// start fails it the same way.
func TestWarmUp(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	cases := []struct {
		name, exe, lib string
		reason         string // "" when it succeeds
	}{
		{"leaf process", testEngine.exe, "", ""},
		{"leaf process that does not start", "/nonexistent/rayflow-leaf", "", "start"},
		{"leaf library that cannot load", testEngine.exe, "/nonexistent/rayflow-leaves.so", "start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := testBridge.Warm(ctx, c.exe, c.lib)
			if err != nil {
				t.Fatal(err)
			}
			defer testBridge.Release([]objHandle{h})
			r, err := testBridge.Await(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason == "" {
				if r.Err != nil {
					t.Fatalf("the warm-up failed: %v", r.Err.toError(testEngine.codec, "warm-up", r.Value))
				}
				return
			}
			if r.Err == nil {
				t.Fatal("the warm-up succeeded")
			}
			var se *TaskError
			if err := r.Err.toError(testEngine.codec, "warm-up", r.Value); !errors.As(err, &se) || se.Kind != "leaf_start" || se.Reason != c.reason ||
				!strings.Contains(se.Message, "/nonexistent/") {
				t.Fatalf("want a leaf_start *TaskError (reason %q) naming the path, got %T %v", c.reason, err, err)
			}
		})
	}
}
