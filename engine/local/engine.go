package local

import (
	"context"

	"github.com/rayflow/rayflow/internal/inproc"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// CancelTimeoutDefault is how long a run waits, once cancelled, for leaves
// that are not inside a map with its own CancelTimeout (sdk's
// CancelTimeoutDefault).
const CancelTimeoutDefault = inproc.CancelTimeoutDefault

// Options tune a local run (see inproc.Options: Sequential, Progress,
// Preview, NoCodecRoundTrip).
type Options = inproc.Options

// Run compiles root (program.Compile) and executes it in this process.
// Once ctx is done it returns a *flowgraph.CanceledError within the cancel
// timeout of the running nodes, whatever the leaves do (see the package
// documentation).
func Run(ctx context.Context, root *flowgraph.Node, input any, opts Options) (any, error) {
	return inproc.RunProgram(ctx, program.Compile(root), input, opts)
}
