package sdkrt

import (
	"context"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/sdk/redact"
)

// Codec is sdk.Codec's method set (an sdk.Codec is a Codec and back).
type Codec interface {
	Name() string
	Version() int
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// Leaf runs one registered step on encoded bytes: the way another process
// running the same binary (a Ray leaf process) calls it by name.
type Leaf func(ctx context.Context, codec Codec, bound, in []byte) ([]byte, error)

// ReducerLeaf runs one registered reducer (sdk.RegisterReducer) on encoded
// bytes: the way a Ray fold actor's Go process calls it by name. It decodes
// the accumulator and the item, applies the reducer and returns the encoded
// new accumulator.
type ReducerLeaf func(ctx context.Context, codec Codec, acc, item []byte) ([]byte, error)

// PreviewLeaf runs one registered output-preview projector
// (sdk.Flow.WithOutputPreview) on a step's encoded successful result: it
// decodes the result with the codec, runs the projector and returns the
// validated (preview profile v1), redacted envelope. It never panics and
// never fails: a result that does not decode, a projector error or panic is
// a FAILED envelope.
type PreviewLeaf func(codec Codec, result []byte, policy *redact.Policy) progress.PreviewEnvelope

// Bindings are a materialized plan's runtime-only execution bindings: the
// compiled program the plan records (its nodes by plan id, bound to the Go
// functions). They are never fingerprinted.
type Bindings struct {
	*program.Program
	// RuntimeEnvs are the runtime environment profiles the plan names, as
	// they were when it was materialized (the Ray engine applies them).
	RuntimeEnvs map[string]map[string]any
}

// EncodedResult is a workflow result an engine still holds in the codec's
// bytes (the Ray engine's result); DecodeResult and sdk.Run decode it.
type EncodedResult struct {
	Codec Codec
	Bytes []byte
}

// Set by sdk at initialization.
var (
	// LookupLeaf returns the registered step called name.
	LookupLeaf func(name string) (Leaf, bool)
	// LookupReducer returns the reducer registered under name.
	LookupReducer func(name string) (ReducerLeaf, bool)
	// LookupPreview returns the output-preview projector registered under
	// name (a step's Preview.Callable.Name).
	LookupPreview func(name string) (PreviewLeaf, bool)
	// RunBootstrap runs the hook registered with sdk.RegisterBootstrap once
	// per process (later calls return its first result); nil when none is.
	RunBootstrap func(ctx context.Context) error
	// PlanBindings returns the bindings of plan, an *sdk.Materialized (nil
	// for nil or a plan without bindings).
	PlanBindings func(plan any) *Bindings
	// Validate checks a graph as sdk.Materialize does, returning an
	// *sdk.DefinitionError.
	Validate func(root *flowgraph.Node) error
	// LookupFlow returns the graph of the flow registered under name
	// (sdk.RegisterFlow).
	LookupFlow func(name string) (*flowgraph.Node, bool)
	// Graph returns the untyped graph behind f, an sdk.Flow[In, Out] (nil
	// for anything else or a zero Flow).
	Graph func(f any) *flowgraph.Node
)
