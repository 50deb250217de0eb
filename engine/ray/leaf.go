package ray

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/rayflow/rayflow/sdk"
)

// LeafEnv is the environment variable that starts a binary in leaf mode.
const LeafEnv = "RAYFLOW_LEAF"

// ServeLeafIfRequested turns this process into a Ray leaf process when it
// was started as one (RAYFLOW_LEAF=1) and never returns in that case;
// otherwise it returns at once. Call it first thing in main (and in
// TestMain of tests that run flows on Ray): a Ray worker runs leaves by
// starting the application's own binary in leaf mode, which finds each
// step by its registered name (sdk.LookupLeaf), so the flows must be
// built at package initialization.
//
// In leaf mode stdin and stdout carry the framed leaf protocol; anything
// the application writes to os.Stdout goes to stderr instead.
func ServeLeafIfRequested() {
	if os.Getenv(LeafEnv) != "1" {
		return
	}
	in, out := os.Stdin, protocolStdout()
	err := serveLeaves(context.Background(), in, out, sdk.DefaultCodec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rayflow leaf:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type leafRequest struct {
	Name      string `json:"name"`
	Node      string `json:"node"`
	Bound     bool   `json:"bound"`
	Bootstrap bool   `json:"bootstrap"`
	// Kind is "" for a step, "reduce" for a fold step (bound: the
	// accumulator, input: the item) and "check_reducer" for the fold
	// actor's readiness handshake (is the reducer registered?).
	Kind string `json:"kind"`
}

// serveLeaves runs leaf requests one at a time until in ends.
func serveLeaves(ctx context.Context, in io.Reader, out io.Writer, codec sdk.Codec) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	for {
		f, err := readFrame(r)
		if err == io.EOF {
			return nil // the worker closed our input: exit
		}
		if err != nil {
			return err
		}
		var req leafRequest
		if err := f.decode(&req); err != nil {
			return fmt.Errorf("leaf request: %w", err)
		}
		var bound []byte
		if req.Bound {
			bound = f.section(0)
		}
		res, info, value := runLeaf(ctx, codec, req, bound, f.section(1))
		if info == nil {
			err = writeFrame(w, map[string]any{"ok": true}, res)
		} else {
			err = writeFrame(w, map[string]any{"ok": false, "error": info}, value)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// runLeaf runs one leaf, turning an error or a panic into errorInfo.
func runLeaf(ctx context.Context, codec sdk.Codec, req leafRequest, bound, in []byte) (out []byte, info *errorInfo, value []byte) {
	leaf, ok := sdk.LookupLeaf(req.Name)
	switch req.Kind {
	case "reduce", "check_reducer":
		var r sdk.ReducerLeaf
		if r, ok = sdk.LookupReducer(req.Name); ok {
			leaf = func(ctx context.Context, codec sdk.Codec, acc, item []byte) ([]byte, error) {
				if req.Kind == "check_reducer" {
					return nil, nil
				}
				return r(ctx, codec, acc, item)
			}
		}
	}
	if !ok {
		return nil, &errorInfo{Node: req.Node, Callable: req.Name, Type: "*ray.LeafError",
			Message: fmt.Sprintf("rayflow: step %q is not registered in the leaf binary %s (is its flow built at package initialization, and does main call ServeLeafIfRequested?)", req.Name, os.Args[0])}, nil
	}
	defer func() {
		if p := recover(); p != nil {
			out, value = nil, nil
			info = &errorInfo{Node: req.Node, Callable: req.Name, Panic: true, Type: "*flowgraph.PanicError",
				Message: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	var err error
	if req.Bootstrap {
		err = sdk.RunBootstrap(ctx)
	}
	if err == nil {
		out, err = leaf(ctx, codec, bound, in)
	}
	if err == nil {
		return out, nil, nil
	}
	info = &errorInfo{Node: req.Node, Callable: req.Name, Type: fmt.Sprintf("%T", err), Message: err.Error()}
	if name, v, ok := sdk.EncodeError(codec, err); ok {
		info.Type, info.Typed, value = name, true, v
	}
	return nil, info, value
}
