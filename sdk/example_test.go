package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk"
)

// Steps are package-level functions: their Go symbol is their callable
// identity, which a Ray leaf process running the same binary resolves.

// Parse parses a decimal integer.
func Parse(_ context.Context, s string) (int, error) { return strconv.Atoi(s) }

// Double doubles v.
func Double(_ context.Context, v int) (int, error) { return 2 * v, nil }

// Square squares v.
func Square(_ context.Context, v int) (int, error) { return v * v, nil }

// Format formats v for people.
func Format(_ context.Context, v int) (string, error) { return fmt.Sprintf("result: %d", v), nil }

// Minimum, Maximum and Total are the seed's group example.
func Minimum(_ context.Context, vs []int) (int, error) { return slices.Min(vs), nil }

// Maximum returns the largest value.
func Maximum(_ context.Context, vs []int) (int, error) { return slices.Max(vs), nil }

// Total adds the values.
func Total(_ context.Context, vs []int) (int, error) {
	t := 0
	for _, v := range vs {
		t += v
	}
	return t, nil
}

// Describe describes the values.
func Describe(_ context.Context, vs []int) (string, error) {
	return fmt.Sprintf("%d values", len(vs)), nil
}

// BuildItems returns 0..count-1.
func BuildItems(_ context.Context, count int) ([]int, error) {
	items := make([]int, count)
	for i := range items {
		items[i] = i
	}
	return items, nil
}

// Label names an item.
func Label(_ context.Context, v int) (string, error) { return "item-" + strconv.Itoa(v), nil }

// JoinLabels is a reducer that is not commutative: the fold's strict input
// order shows in its result.
func JoinLabels(_ context.Context, acc, item string) (string, error) {
	if acc == "" {
		return item, nil
	}
	return acc + "," + item, nil
}

// Greet is a step with a bound value (the greeting).
func Greet(_ context.Context, greeting, name string) (string, error) {
	return greeting + ", " + name + "!", nil
}

// Visit prints the item it runs on.
func Visit(_ context.Context, v int) (int, error) {
	fmt.Println("visit", v)
	return v, nil
}

func ExampleStep() {
	double := sdk.Step(Double)
	out, err := sdk.Run(context.Background(), double, 21)
	fmt.Println(out, err)
	// Output: 42 <nil>
}

func ExampleThen() {
	// Then feeds Parse's int to Double; a mismatch would not compile.
	f := sdk.Then(sdk.Step(Parse), sdk.Step(Double))
	out, err := sdk.Run(context.Background(), f, "21")
	fmt.Println(out, err)

	// A step's error fails the run; errors.As sees the original error and
	// the StepError names the node it came from.
	_, err = sdk.Run(context.Background(), f, "twenty-one")
	var se *sdk.StepError
	var ne *strconv.NumError
	fmt.Println(errors.As(err, &se), se.Node, errors.As(err, &ne))
	// Output:
	// 42 <nil>
	// true 0.0 true
}

func ExampleChain3() {
	f := sdk.Chain3(sdk.Step(Parse), sdk.Step(Double), sdk.Step(Format))
	out, err := sdk.Run(context.Background(), f, "21")
	fmt.Println(out, err)
	// Output: result: 42 <nil>
}

func ExampleGroup() {
	// Every branch gets the same input; results come in branch order.
	inspect := sdk.Group(sdk.Step(Minimum), sdk.Step(Maximum), sdk.Step(Total))
	out, err := sdk.Run(context.Background(), inspect, []int{3, 1, 4, 1, 5})
	fmt.Println(out, err)
	// Output: [1 5 14] <nil>
}

func ExampleGroup2() {
	// Differently typed branches make a typed tuple.
	f := sdk.Group2(sdk.Step(Maximum), sdk.Step(Describe))
	out, err := sdk.Run(context.Background(), f, []int{3, 1, 4})
	fmt.Println(out.V0, out.V1, err)
	b, _ := json.Marshal(out) // a tuple encodes as a JSON array
	fmt.Println(string(b))
	// Output:
	// 4 3 values <nil>
	// [4,"3 values"]
}

func ExampleMap() {
	// At most 4 items run at once, at most 100 items are accepted; results
	// keep the input order whatever order items finish in.
	squares := sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100})
	f := sdk.Chain3(sdk.Step(BuildItems), squares, sdk.Step(Total))

	out, err := sdk.Run(context.Background(), squares, []int{1, 2, 3, 4, 5})
	fmt.Println(out, err)
	total, err := sdk.Run(context.Background(), f, 10)
	fmt.Println(total, err)

	// A sized input over MaxItems fails before any item runs.
	_, err = sdk.Run(context.Background(), f, 101)
	var mie *sdk.MaxItemsError
	fmt.Println(errors.As(err, &mie), mie.Node, mie.Items, mie.MaxItems)
	// Output:
	// [1 4 9 16 25] <nil>
	// 285 <nil>
	// true 0.1 101 100
}

func ExampleFlow_WithItemBatching() {
	// Tiny steps: up to 16 items run per task, one after another. The
	// window still counts items (64 at once: 4 tasks of 16), and every item
	// keeps its own result, in input order.
	squares := sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: 10_000}).WithItemBatching(16)
	out, err := sdk.Run(context.Background(), squares, []int{1, 2, 3, 4, 5})
	fmt.Println(out, err)

	// A failing item fails the map with the error it gives unbatched,
	// naming the item; the rest of its batch does not run.
	parse := sdk.Map(sdk.Step(Parse)).WithLimits(sdk.Limits{MaxConcurrency: 64, MaxItems: 10_000}).WithItemBatching(16)
	_, err = sdk.Run(context.Background(), parse, []string{"1", "2", "three", "4"})
	var se *sdk.StepError
	fmt.Println(errors.As(err, &se), se.Node, errors.Is(err, strconv.ErrSyntax))

	// The batch bound is part of the plan, so it is fingerprinted.
	m, err := sdk.Materialize(squares)
	if err != nil {
		panic(err)
	}
	for _, n := range m.Plan.Nodes {
		if d, ok := n.(*plan.DynamicMapNode); ok {
			fmt.Println(d.ID, "maximum_items_per_task:", *d.Bounds.MaximumItemsPerTask)
		}
	}
	// Output:
	// [1 4 9 16 25] <nil>
	// true 0.m2 true
	// 0 maximum_items_per_task: 16
}

func ExampleMapSeq() {
	// An iterator is admitted lazily: an item is read only when the window
	// has room, and the run fails as soon as item MaxItems+1 is read.
	read := 0
	naturals := func(yield func(int) bool) {
		for i := 1; ; i++ {
			read++
			if !yield(i) {
				return
			}
		}
	}
	f := sdk.MapSeq(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 5})
	_, err := sdk.Run(context.Background(), f, naturals)
	fmt.Println(err, "- items read:", read)

	out, err := sdk.Run(context.Background(), f, slices.Values([]int{1, 2, 3}))
	fmt.Println(out, err)
	// Output:
	// rayflow: map 0: 6 items exceed max items 5 - items read: 6
	// [1 4 9] <nil>
}

func ExampleReduce() {
	// A fold keeps one accumulator instead of the result list. It is a
	// strict input-order left fold, so the reducer need not be commutative.
	labels := sdk.Map(sdk.Step(Label)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 1000})
	f := sdk.Then(sdk.Step(BuildItems), sdk.Reduce(labels, JoinLabels, "", sdk.FoldOptions{
		MaxSerializedBytes: 1 << 20, // Ray-only: the fold actor's retained bytes
		Actor:              sdk.ActorOptions{NumCPUs: 0.25, Memory: 2 << 20},
	}))
	out, err := sdk.Run(context.Background(), f, 5)
	fmt.Println(out, err)
	// Output: item-0,item-1,item-2,item-3,item-4 <nil>
}

func ExampleBind() {
	// The bound value is invocation data: passed to every call, never part
	// of the plan.
	hello := sdk.Map(sdk.Bind(Greet, "Hello"))
	out, err := sdk.Run(context.Background(), hello, []string{"Ada", "Grace"})
	fmt.Println(strings.Join(out, " "), err)
	// Output: Hello, Ada! Hello, Grace! <nil>
}

// The workflow of the package documentation.
func ExampleRun() {
	pipeline := sdk.Chain3(
		sdk.Step(BuildItems),
		sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 16, MaxItems: 10_000}),
		sdk.Step(Total),
	)
	out, err := sdk.Run(context.Background(), pipeline, 20)
	fmt.Println(out, err)
	// Output: 2470 <nil>
}

func ExampleRun_sequential() {
	// Sequential runs one leaf at a time, in order: handy in a debugger.
	f := sdk.Map(sdk.Step(Visit)).WithLimits(sdk.Limits{MaxConcurrency: 8})
	out, err := sdk.Run(context.Background(), f, []int{1, 2, 3}, sdk.Sequential())
	fmt.Println(out, err)
	// Output:
	// visit 1
	// visit 2
	// visit 3
	// [1 2 3] <nil>
}

func ExampleRequireRay() {
	// RequireRay refuses to fall back to the local engine.
	_, err := sdk.Run(context.Background(), sdk.Step(Double), 1, sdk.RequireRay())
	fmt.Println(errors.Is(err, sdk.ErrRayRequired))
	// Output: true
}

func ExampleDefinitionError() {
	// Definition errors are found before any leaf runs and name the node:
	// here the map, the second element (0.1) of the chain.
	f := sdk.Chain3(
		sdk.Step(BuildItems),
		sdk.Map(sdk.Step(Square)).WithLimits(sdk.Limits{MaxConcurrency: 0}),
		sdk.Step(Total),
	)
	_, err := sdk.Run(context.Background(), f, 10)
	var de *sdk.DefinitionError
	if errors.As(err, &de) {
		fmt.Println(de.Path, de.Code, errors.Is(err, sdk.ErrInvalidDefinition))
	}
	// Output: 0.1 INVALID_LIMITS true
}

func ExampleChainOf() {
	// ChainOf chains any number of same-typed flows without nesting.
	pipeline := sdk.ChainOf(sdk.Step(Double), sdk.Step(Double), sdk.Step(Double), sdk.Step(Double))
	out, err := sdk.Run(context.Background(), pipeline, 1)
	fmt.Println(out, err)
	// Output: 16 <nil>
}

func ExampleFlow_Named() {
	// Named is a display label for progress views; it is not part of the
	// plan's fingerprint.
	plain, _ := sdk.Materialize(sdk.Step(Double))
	named, _ := sdk.Materialize(sdk.Step(Double).Named("double it"))
	fmt.Println(plain.Fingerprint == named.Fingerprint)
	// Output: true
}

func ExampleWithStrategy() {
	// Strategies and reporting policies are typed constants.
	m, err := sdk.Materialize(sdk.Step(Double), sdk.WithStrategy(sdk.StrategyLocal), sdk.WithReportingPolicy(sdk.ReportingPolicyTerminalOnly))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Selection.SelectedStrategy, m.Selection.ReportingPolicy) // local runs report nothing
	_, err = sdk.Materialize(sdk.Step(Double), sdk.WithStrategy("warp_drive"))
	var de *sdk.DefinitionError
	fmt.Println(errors.As(err, &de) && de.Code == sdk.CodeUnknownStrategy)
	// Output:
	// local disabled
	// true
}

func ExampleWithPlan() {
	// A plan runs only where its strategy was selected for: this one was
	// materialized for the local engine, so RequireRay refuses it before
	// any leaf runs instead of quietly running it in process.
	m, _ := sdk.Materialize(sdk.Step(Double))
	_, err := sdk.Run(context.Background(), sdk.Step(Double), 1, sdk.WithPlan(m), sdk.RequireRay())
	fmt.Println(errors.Is(err, sdk.ErrRayRequired))
	// Output: true
}

// Slow ignores its context.
func Slow(_ context.Context, v int) (int, error) {
	time.Sleep(3 * time.Second)
	return v, nil
}

func ExampleCanceledError() {
	// A run returns within the cancel timeout of its deadline whatever its
	// leaves do (here 100 ms after it), with the context's error; the
	// leaves still running are abandoned.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f := sdk.Map(sdk.Step(Slow)).WithLimits(sdk.Limits{MaxConcurrency: 4, CancelTimeout: 100 * time.Millisecond})
	_, err := sdk.Run(ctx, f, []int{1, 2, 3})
	var ce *sdk.CanceledError
	fmt.Println(errors.Is(err, context.DeadlineExceeded), errors.As(err, &ce))
	// Output: true true
}

// Priced has an unexported field, which the JSON value codec would drop.
type Priced struct {
	Name  string
	price float64
}

func MakePriced(_ context.Context, name string) (Priced, error) { return Priced{name, 12.5}, nil }

func ExampleCodeUnencodableValue() {
	// A value that cannot cross to a Ray leaf is refused when the flow is
	// materialized, naming the node and the type path.
	_, err := sdk.Materialize(sdk.Step(MakePriced))
	fmt.Println(err)
	// Output: rayflow: node 0: UNENCODABLE_VALUE: Out.price: unexported field (the codec would drop it)
}
