package sdk

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Flow is a workflow from In to Out: a step, or a chain, group or map of
// flows. Flows are immutable values; every method returns a new Flow.
// Build them once, typically in package-level variables, so that their
// steps are registered when the package initializes.
type Flow[In, Out any] struct {
	node *flowgraph.Node
}

// graph returns the untyped graph behind f (nil for a zero Flow): what
// sdkrt.Graph gives engines and tools.
func (f Flow[In, Out]) graph() *flowgraph.Node { return f.node }

// nodeOf returns f's graph, or a node recording the definition error of a
// zero Flow, so builders never dereference nil.
func (f Flow[In, Out]) nodeOf() *flowgraph.Node {
	if f.node == nil {
		return &flowgraph.Node{Kind: flowgraph.KindStep, Err: &DefinitionError{Code: CodeEmpty, Msg: "a zero sdk.Flow was used as a workflow part"}}
	}
	return f.node
}

// Named gives the flow's root node a display label: the one label concept
// of rayflow. Progress views and topology show it for the node (a step
// without one is shown by its function's name, a map as "map"). Labels
// are display metadata: the text never enters the plan or its
// fingerprint. It must be valid UTF-8 of at most MaxLabelBytes bytes, else
// the flow fails with CodeInvalidLabel before it runs. Naming a chain
// keeps it one unit when it is chained further (its parts get node ids
// under it instead of being spliced into the outer chain).
func (f Flow[In, Out]) Named(label string) Flow[In, Out] {
	n := f.nodeOf().Clone()
	n.Label = label
	return Flow[In, Out]{n}
}

// Step makes a flow of one leaf call of fn. fn should be a package-level
// function: its Go symbol is its callable identity, which another process
// running the same binary resolves by name (closures and method values
// still run locally but have runtime-only identity).
func Step[In, Out any](fn func(context.Context, In) (Out, error), opts ...StepOption) Flow[In, Out] {
	if fn == nil {
		return Flow[In, Out]{&flowgraph.Node{Kind: flowgraph.KindStep, Step: &flowgraph.Step{}, Err: fmt.Errorf("sdk.Step: nil function")}}
	}
	s := &flowgraph.Step{
		Callable: identify(fn),
		Invoke: func(ctx context.Context, in any) (any, error) {
			v, err := as[In](in)
			if err != nil {
				return nil, err
			}
			return fn(ctx, v)
		},
		InputType:  typeName[In](),
		OutputType: typeName[Out](),
	}
	register(s.Callable, leafFor(fn))
	return newStep[In, Out](s, opts, nil)
}

// Bind makes a step whose first argument is the bound value: invocation
// data passed to every call, never part of the plan (only the fact that
// one value is bound is).
func Bind[B, In, Out any](fn func(context.Context, B, In) (Out, error), bound B, opts ...StepOption) Flow[In, Out] {
	if fn == nil {
		return Flow[In, Out]{&flowgraph.Node{Kind: flowgraph.KindStep, Step: &flowgraph.Step{}, Err: fmt.Errorf("sdk.Bind: nil function")}}
	}
	s := &flowgraph.Step{
		Callable: identify(fn),
		Invoke: func(ctx context.Context, in any) (any, error) {
			v, err := as[In](in)
			if err != nil {
				return nil, err
			}
			return fn(ctx, bound, v)
		},
		Bound:      1,
		BoundValue: bound,
		InputType:  typeName[In](),
		OutputType: typeName[Out](),
	}
	register(s.Callable, boundLeafFor(fn))
	return newStep[In, Out](s, opts, func(n *flowgraph.Node) {
		n.Step.Values.Invoke = boundInvoke(fn, bound)
		if n.Err == nil {
			n.Err = encodable[B]("Bound")
		}
	})
}

// newStep makes the step's node: its codec round trips and type check
// (with bind's additions), then the options.
func newStep[In, Out any](s *flowgraph.Step, opts []StepOption, bind func(*flowgraph.Node)) Flow[In, Out] {
	n := &flowgraph.Node{Kind: flowgraph.KindStep, Step: s}
	stepValues[In, Out](n)
	if bind != nil {
		bind(n)
	}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(n)
		}
	}
	return Flow[In, Out]{n}
}

// as converts a dynamically typed value to T; nil becomes T's zero value.
func as[T any](v any) (T, error) {
	if v == nil {
		var zero T
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("rayflow: internal type mismatch: have %T, step wants %T", v, zero)
	}
	return t, nil
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// identify derives a callable's identity from its Go symbol.
func identify(fn any) flowgraph.Callable {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return flowgraph.Callable{Name: name, Resolvable: resolvableName(name)}
}

// resolvableName reports whether name is a package-level function that a
// process running the same binary can look up: not a closure
// ("pkg.F.func1", "pkg.init.func2"), a method value ("pkg.T.M-fm") or a
// generic instantiation ("pkg.F[...]").
func resolvableName(name string) bool {
	if name == "" || strings.HasSuffix(name, "-fm") || strings.Contains(name, "[") {
		return false
	}
	last := name[strings.LastIndex(name, "/")+1:]
	parts := strings.Split(last, ".")[1:] // drop the package name
	if len(parts) == 0 {
		return false
	}
	if parts[0] == "init" || parts[0] == "glob" {
		return false // closures in initializers: pkg.init.func1, pkg.glob..func1
	}
	for _, part := range parts[1:] {
		if part == "" || strings.HasPrefix(part, "func") && len(part) > 4 && part[4] >= '0' && part[4] <= '9' {
			return false
		}
	}
	return true
}

// Then chains first and next: next receives first's result. Chains are
// associative and flattened: Then(Then(a, b), c), Then(a, Then(b, c)) and
// Chain3(a, b, c) are the same chain of three, with the same plan. A
// longer chain of differently typed steps is written with Chain3…Chain6
// or by chaining chains (Chain3(a, b, Chain4(c, d, e, f))), typed end to
// end; Go methods cannot take type parameters, so no fluent
// a.Then(b).Then(c) can be. Same-typed steps chain with ChainOf.
func Then[A, B, C any](first Flow[A, B], next Flow[B, C]) Flow[A, C] {
	return Flow[A, C]{chain(first.nodeOf(), next.nodeOf())}
}

// Chain3 chains three flows.
func Chain3[A, B, C, D any](f1 Flow[A, B], f2 Flow[B, C], f3 Flow[C, D]) Flow[A, D] {
	return Flow[A, D]{chain(f1.nodeOf(), f2.nodeOf(), f3.nodeOf())}
}

// Chain4 chains four flows.
func Chain4[A, B, C, D, E any](f1 Flow[A, B], f2 Flow[B, C], f3 Flow[C, D], f4 Flow[D, E]) Flow[A, E] {
	return Flow[A, E]{chain(f1.nodeOf(), f2.nodeOf(), f3.nodeOf(), f4.nodeOf())}
}

// Chain5 chains five flows.
func Chain5[A, B, C, D, E, F any](f1 Flow[A, B], f2 Flow[B, C], f3 Flow[C, D], f4 Flow[D, E], f5 Flow[E, F]) Flow[A, F] {
	return Flow[A, F]{chain(f1.nodeOf(), f2.nodeOf(), f3.nodeOf(), f4.nodeOf(), f5.nodeOf())}
}

// Chain6 chains six flows.
func Chain6[A, B, C, D, E, F, G any](f1 Flow[A, B], f2 Flow[B, C], f3 Flow[C, D], f4 Flow[D, E], f5 Flow[E, F], f6 Flow[F, G]) Flow[A, G] {
	return Flow[A, G]{chain(f1.nodeOf(), f2.nodeOf(), f3.nodeOf(), f4.nodeOf(), f5.nodeOf(), f6.nodeOf())}
}

// ChainOf chains any number of flows of one type, in order, each fed the
// previous one's result (a pipeline of transformations of T). A single
// flow is returned as it is; none is a definition error.
func ChainOf[T any](steps ...Flow[T, T]) Flow[T, T] {
	switch len(steps) {
	case 0:
		return Flow[T, T]{&flowgraph.Node{Kind: flowgraph.KindChain, Err: &DefinitionError{Code: CodeEmpty, Msg: "sdk.ChainOf needs at least one flow"}}}
	case 1:
		return Flow[T, T]{steps[0].nodeOf()}
	}
	parts := make([]*flowgraph.Node, len(steps))
	for i, s := range steps {
		parts[i] = s.nodeOf()
	}
	return Flow[T, T]{chain(parts...)}
}

// chain flattens unlabeled chains so that composition order does not
// change the plan.
func chain(parts ...*flowgraph.Node) *flowgraph.Node {
	n := &flowgraph.Node{Kind: flowgraph.KindChain}
	for _, p := range parts {
		if p.Kind == flowgraph.KindChain && p.Label == "" && p.Err == nil {
			n.Children = append(n.Children, p.Children...)
			continue
		}
		n.Children = append(n.Children, p)
	}
	return n
}

// Group runs every branch on the same input and returns their results in
// branch order.
func Group[In, Out any](branches ...Flow[In, Out]) Flow[In, []Out] {
	n := &flowgraph.Node{Kind: flowgraph.KindGroup, Collect: collectSlice[Out]}
	for _, b := range branches {
		n.Children = append(n.Children, b.nodeOf())
	}
	return Flow[In, []Out]{n}
}

func collectSlice[Out any](rs []any) (any, error) {
	out := make([]Out, len(rs))
	for i, r := range rs {
		v, err := as[Out](r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Tuple2 is the result of a two-branch heterogeneous group. It encodes as
// a JSON array, like the seed's ordered group result.
type Tuple2[A, B any] struct {
	V0 A
	V1 B
}

// Tuple3 is the result of a three-branch heterogeneous group.
type Tuple3[A, B, C any] struct {
	V0 A
	V1 B
	V2 C
}

// Group2 runs two differently typed branches on the same input.
func Group2[In, A, B any](a Flow[In, A], b Flow[In, B]) Flow[In, Tuple2[A, B]] {
	return Flow[In, Tuple2[A, B]]{&flowgraph.Node{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{a.nodeOf(), b.nodeOf()},
		Collect: func(rs []any) (any, error) {
			va, err := as[A](rs[0])
			if err != nil {
				return nil, err
			}
			vb, err := as[B](rs[1])
			return Tuple2[A, B]{va, vb}, err
		}}}
}

// Group3 runs three differently typed branches on the same input.
func Group3[In, A, B, C any](a Flow[In, A], b Flow[In, B], c Flow[In, C]) Flow[In, Tuple3[A, B, C]] {
	return Flow[In, Tuple3[A, B, C]]{&flowgraph.Node{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{a.nodeOf(), b.nodeOf(), c.nodeOf()},
		Collect: func(rs []any) (any, error) {
			va, err := as[A](rs[0])
			if err != nil {
				return nil, err
			}
			vb, err := as[B](rs[1])
			if err != nil {
				return nil, err
			}
			vc, err := as[C](rs[2])
			return Tuple3[A, B, C]{va, vb, vc}, err
		}}}
}
