package sdk

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Leaf runs one registered step on encoded bytes: the way another process
// running the same binary (a Ray leaf process) calls it by name.
type Leaf func(ctx context.Context, codec Codec, bound, in []byte) ([]byte, error)

var registry = struct {
	sync.RWMutex
	leaves map[string]Leaf
}{leaves: map[string]Leaf{}}

// register records a resolvable callable. Flows are normally built in
// package-level variables, so this runs during package initialization and
// every process of the binary knows the same names.
func register(c flowgraph.Callable, leaf Leaf) {
	if !c.Resolvable {
		return
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.leaves[c.Name]; !ok || leaf != nil {
		registry.leaves[c.Name] = leaf
	}
}

// LookupLeaf returns the registered step called name.
func LookupLeaf(name string) (Leaf, bool) {
	registry.RLock()
	defer registry.RUnlock()
	l, ok := registry.leaves[name]
	return l, ok && l != nil
}

// RegisteredCallables lists the names of every registered callable.
func RegisteredCallables() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.leaves))
	for n := range registry.leaves {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func leafFor[In, Out any](fn func(context.Context, In) (Out, error)) Leaf {
	return func(ctx context.Context, codec Codec, _, in []byte) ([]byte, error) {
		var v In
		if err := codec.Unmarshal(in, &v); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the input: %w", err)
		}
		out, err := fn(ctx, v)
		if err != nil {
			return nil, err
		}
		return codec.Marshal(out)
	}
}

func boundLeafFor[B, In, Out any](fn func(context.Context, B, In) (Out, error)) Leaf {
	return func(ctx context.Context, codec Codec, bound, in []byte) ([]byte, error) {
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
		return codec.Marshal(out)
	}
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

// LookupFlow returns the graph of a registered flow.
func LookupFlow(name string) (*flowgraph.Node, bool) {
	flows.RLock()
	defer flows.RUnlock()
	n, ok := flows.m[name]
	return n, ok
}

// RegisteredFlows lists registered flow names, sorted.
func RegisteredFlows() []string {
	flows.RLock()
	defer flows.RUnlock()
	return sortedKeys(flows.m)
}

// MaterializeGraph materializes an untyped graph (from LookupFlow).
func MaterializeGraph(root *flowgraph.Node, opts ...MaterializeOption) (*Materialized, error) {
	if root == nil {
		return nil, &DefinitionError{Path: "0", Code: CodeEmpty, Msg: "no flow"}
	}
	return materialize(root, opts)
}
