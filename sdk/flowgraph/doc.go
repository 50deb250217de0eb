// Package flowgraph is the untyped workflow graph that rayflow's typed
// builders (package sdk) produce and that the materializer and the engines
// consume.
//
// Application code never uses it directly: sdk.Step, sdk.Then, sdk.Group,
// sdk.Map and sdk.Reduce build it with type-checked adapters, so every
// Invoke function here receives exactly the Go type its step declared. The
// graph is immutable once built; builder methods copy before they change a
// node. It carries no plan identity of its own: the materializer derives
// node ids, callables and the fingerprint from it.
package flowgraph
