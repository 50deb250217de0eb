package ray

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/apitest"
)

// TestAPISurface: the Ray engine exports an engine (New, Options, Engine),
// the leaf entry point, and its errors: few typed errors told apart by a
// field, each with the sentinels errors.Is sees. A flow runs on it through
// sdk.Run with sdk.WithEngine; the interpreter and Ray version are
// internal/rayenv's.
func TestAPISurface(t *testing.T) {
	got, err := apitest.Exported(".")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"func New", "func ServeLeafIfRequested",
		"type BridgeError", "type Engine", "type LeafError", "type Options", "type SetupError", "type TaskError",
		"var ErrBridgeClosed", "var ErrBuildMismatch", "var ErrClosed", "var ErrClusterLost", "var ErrNodeLost",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("engine/ray's exported identifiers (-want +got):\n%s", d)
	}
}

// TestErrorKinds: the folded error types keep each former type's message,
// and errors.Is and errors.As tell them apart by their sentinels and
// fields.
func TestErrorKinds(t *testing.T) {
	cases := []struct {
		name     string
		info     errorInfo
		msg      string
		kind     string
		mismatch bool
		lost     string // the lost node (kind node_died)
	}{
		{"leaf start", errorInfo{Kind: "leaf_start", Node: "0.1", Reason: "start", Message: "no leaf"},
			"rayflow: ray: node 0.1: leaf process: no leaf", "leaf_start", false, ""},
		{"build mismatch", errorInfo{Kind: "leaf_start", Node: "0.1", Reason: "digest_mismatch", Want: "a", Got: "b", Message: "digest b, want a"},
			"rayflow: ray: node 0.1: leaf process: digest b, want a", "leaf_start", true, ""},
		{"actor limit", errorInfo{Kind: "actor_limit", Type: "item", Bytes: 17, Limit: 16, Message: "item 3 is 17 bytes"},
			"rayflow: map 0: item 3 is 17 bytes", "actor_limit", false, ""},
		{"submit", errorInfo{Kind: "submit", Type: "ValueError", Message: "precision"},
			"rayflow: node 0: Ray refused the submission: ValueError: precision", "submit", false, ""},
		{"worker crash", errorInfo{Kind: "worker_crashed", Message: "gone"},
			"rayflow: ray task 0: worker_crashed: gone", "worker_crashed", false, ""},
		{"node died", errorInfo{Kind: "node_died", RayNode: "9d84", Message: "node ID: 9d84 is dead"},
			"rayflow: ray task 0: node_died: lost Ray node 9d84: node ID: 9d84 is dead", "node_died", false, "9d84"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.info.toError(nil, "0", nil)
			var te *TaskError
			if !errors.As(err, &te) || te.Kind != c.kind {
				t.Fatalf("toError = %#v, want a *TaskError of kind %q", err, c.kind)
			}
			if err.Error() != c.msg {
				t.Fatalf("Error() = %q, want %q", err.Error(), c.msg)
			}
			if errors.Is(err, ErrBuildMismatch) != c.mismatch {
				t.Fatalf("errors.Is(ErrBuildMismatch) = %v, want %v", !c.mismatch, c.mismatch)
			}
			if errors.Is(err, ErrBridgeClosed) {
				t.Fatal("a node's failure reads as a closed bridge")
			}
			if te.LostNode != c.lost || errors.Is(err, ErrNodeLost) != (c.lost != "") {
				t.Fatalf("lost node %q (errors.Is(ErrNodeLost) %v), want %q", te.LostNode, errors.Is(err, ErrNodeLost), c.lost)
			}
		})
	}
	bridge := &BridgeError{Err: errors.New("EOF"), Log: "tail"}
	lost := &BridgeError{Lost: true, Address: "10.0.0.1:6379", Err: errors.New("rayflow: dial: refused"), Log: "tail"}
	if !errors.Is(bridge, ErrBridgeClosed) || errors.Is(bridge, ErrClusterLost) || bridge.Error() != "rayflow: ray bridge: EOF\ntail" {
		t.Fatalf("bridge error %q", bridge)
	}
	if !errors.Is(lost, ErrBridgeClosed) || !errors.Is(lost, ErrClusterLost) ||
		!strings.HasPrefix(lost.Error(), "rayflow: ray: lost the cluster at 10.0.0.1:6379: dial: refused\ntail") {
		t.Fatalf("lost cluster error %q", lost)
	}
}
