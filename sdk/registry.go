package sdk

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

var registry = struct {
	sync.RWMutex
	leaves map[string]sdkrt.Leaf
}{leaves: map[string]sdkrt.Leaf{}}

// register records a resolvable callable. Flows are normally built in
// package-level variables, so this runs during package initialization and
// every process of the binary knows the same names.
func register(c flowgraph.Callable, leaf sdkrt.Leaf) {
	if !c.Resolvable {
		return
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.leaves[c.Name]; !ok || leaf != nil {
		registry.leaves[c.Name] = leaf
	}
}

// lookupLeaf returns the registered step called name.
func lookupLeaf(name string) (sdkrt.Leaf, bool) {
	registry.RLock()
	defer registry.RUnlock()
	l, ok := registry.leaves[name]
	return l, ok && l != nil
}

func leafFor[In, Out any](fn func(context.Context, In) (Out, error)) sdkrt.Leaf {
	return func(ctx context.Context, codec sdkrt.Codec, _, in []byte) ([]byte, error) {
		var v In
		if err := codec.Unmarshal(in, &v); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the input: %w", err)
		}
		out, err := fn(ctx, v)
		if err != nil {
			return nil, err
		}
		return marshalOutput[Out](codec, out)
	}
}

func boundLeafFor[B, In, Out any](fn func(context.Context, B, In) (Out, error)) sdkrt.Leaf {
	return func(ctx context.Context, codec sdkrt.Codec, bound, in []byte) ([]byte, error) {
		var b B
		if err := codec.Unmarshal(bound, &b); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the bound value: %w", err)
		}
		var v In
		if err := codec.Unmarshal(in, &v); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the input: %w", err)
		}
		out, err := fn(ctx, b, v)
		if err != nil {
			return nil, err
		}
		return marshalOutput[Out](codec, out)
	}
}

// marshalOutput encodes a leaf's result. A value the codec refuses (a
// non-finite float) is a *ValueError for the step's output, as the local
// engine reports it; the engine fills in the node.
func marshalOutput[Out any](codec sdkrt.Codec, out Out) ([]byte, error) {
	b, err := codec.Marshal(out)
	if err != nil {
		return nil, &flowgraph.ValueError{Value: "output", Type: typeName[Out](), Err: err}
	}
	return b, nil
}

var flows = struct {
	sync.RWMutex
	m map[string]*flowgraph.Node
}{m: map[string]*flowgraph.Node{}}

// RegisterFlow makes f known by name to tools such as `rayflow plan` and
// to leaf processes. Call it from a package-level init; a later
// registration under the same name replaces the earlier one.
func RegisterFlow[In, Out any](name string, f Flow[In, Out]) {
	flows.Lock()
	defer flows.Unlock()
	flows.m[name] = f.node
}

// lookupFlow returns the graph of the flow registered under name.
func lookupFlow(name string) (*flowgraph.Node, bool) {
	flows.RLock()
	defer flows.RUnlock()
	n, ok := flows.m[name]
	return n, ok
}

// registeredFlows lists registered flow names, sorted.
func registeredFlows() []string {
	flows.RLock()
	defer flows.RUnlock()
	return sortedKeys(flows.m)
}

// materializeRegistered materializes the flow registered under name
// (RegisterFlow) as Materialize does: what a tool or a Ray job's
// coordinator does with a flow it knows only by name (internal/sdkhost's
// MaterializeRegistered). An unknown name fails with an error wrapping
// ErrUnknownFlow that lists the registered flows.
func materializeRegistered(name string, opts []MaterializeOption) (*Materialized, error) {
	root, ok := lookupFlow(name)
	if !ok || root == nil {
		return nil, fmt.Errorf("%w: %q (registered: %s)", ErrUnknownFlow, name, strings.Join(registeredFlows(), ", "))
	}
	return materialize(root, opts)
}
