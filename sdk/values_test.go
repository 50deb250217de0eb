package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rayflow/rayflow/sdk"
)

type Line struct {
	Name  string
	price float64
}

type Order struct {
	ID    int
	Items []Line
}

type Hidden struct {
	Total  float64
	secret int `json:"-"` // excluded by its author: allowed
}

type inner struct{ Exported int }

type Embeds struct {
	inner // promoted by encoding/json: allowed
	When  time.Time
	Raw   json.RawMessage
	Any   any
	ByID  map[int]string
	Ptr   *Line2
}

type Line2 struct{ Name string }

type WithReader struct{ Body io.Reader }

type FloatKeys struct{ M map[float64]int }

type OnlyMarshals struct{ V int }

func (OnlyMarshals) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

func MakeOrder(_ context.Context, n int) (Order, error) {
	return Order{ID: n, Items: []Line{{"tea", 12.5}}}, nil
}
func Numbers(_ context.Context, n int) (iter.Seq[int], error) {
	return func(yield func(int) bool) { yield(n) }, nil
}
func TakesChan(_ context.Context, c chan int) (int, error)       { return 0, nil }
func Complex(_ context.Context, n int) (complex128, error)       { return 0, nil }
func Unsafe(_ context.Context, n int) (unsafe.Pointer, error)    { return nil, nil }
func Reader(_ context.Context, n int) (WithReader, error)        { return WithReader{}, nil }
func FloatKeyed(_ context.Context, n int) (FloatKeys, error)     { return FloatKeys{}, nil }
func HalfCodec(_ context.Context, n int) ([]OnlyMarshals, error) { return nil, nil }
func FuncField(_ context.Context, n int) (struct{ F func() }, error) {
	return struct{ F func() }{}, nil
}
func BoundOrder(_ context.Context, o Order, n int) (int, error)    { return n, nil }
func MakeHidden(_ context.Context, n int) (Hidden, error)          { return Hidden{Total: 1, secret: n}, nil }
func MakeEmbeds(_ context.Context, n int) (Embeds, error)          { return Embeds{}, nil }
func AddLine(_ context.Context, acc Order, l Line2) (Order, error) { return acc, nil }
func Name(_ context.Context, n int) (Line2, error)                 { return Line2{Name: "x"}, nil }
func OrderTotal(_ context.Context, o Order) (float64, error)       { return o.Items[0].price, nil }
func Identity(_ context.Context, n int) (int, error)               { return n, nil }
func Infinite(_ context.Context, n int) (float64, error)           { return math.Inf(n), nil }
func Half(_ context.Context, f float64) (float64, error)           { return f / 2, nil }
func AnyOut(_ context.Context, n int) (map[string]any, error)      { return map[string]any{"n": n}, nil }
func AnyIn(_ context.Context, m map[string]any) (string, error)    { return typeOf(m["n"]), nil }
func HoldsFunc(_ context.Context, n int) (map[string]any, error) {
	return map[string]any{"f": func() {}}, nil
}
func HoldsHidden(_ context.Context, n int) (map[string]any, error) {
	return map[string]any{"o": Line{"tea", 1}}, nil
}
func Mutate(_ context.Context, s []int) ([]int, error) { s[0] = 99; return s, nil }
func Read(_ context.Context, s []int) (int, error)     { return s[0], nil }
func Squared(_ context.Context, n int) (int, error)    { return n * n, nil }
func BoundMutate(_ context.Context, m map[string]int, n int) (int, error) {
	m["calls"]++
	return m["calls"], nil
}

func Scaled(_ context.Context, factor float64, n int) (float64, error) {
	return factor * float64(n), nil
}
func Divide(_ context.Context, acc float64, n int) (float64, error) { return acc / float64(n), nil }

func typeOf(v any) string {
	switch v.(type) {
	case float64:
		return "float64"
	case int:
		return "int"
	}
	return "other"
}

// TestUncarriableTypesRefusedAtMaterialize: a type the codec cannot
// carry is a definition error naming the node and the type path, before
// any leaf runs. Before, a struct with an unexported field gave 12.5
// locally and 0 on Ray, and an iter.Seq failed only on Ray after the step
// ran.
func TestUncarriableTypesRefusedAtMaterialize(t *testing.T) {
	t.Parallel()
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 10}}
	type materializer func() (*sdk.Materialized, error)
	cases := []struct {
		name, node, msg string
		m               materializer
	}{
		{"unexported field", "0.0", "Out.Items[].price: unexported field",
			func() (*sdk.Materialized, error) {
				return sdk.Materialize(sdk.Then(sdk.Step(MakeOrder), sdk.Step(OrderTotal)))
			}},
		{"iter.Seq result", "0.1", "Out: function (iter.Seq[int])",
			func() (*sdk.Materialized, error) {
				return sdk.Materialize(sdk.Then(sdk.Step(Identity), sdk.Step(Numbers)))
			}},
		{"channel input", "0", "In: channel (chan int)",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(TakesChan)) }},
		{"complex", "0.g1", "Out: complex number (complex128)",
			func() (*sdk.Materialized, error) {
				return sdk.Materialize(sdk.Group2(sdk.Step(Identity), sdk.Step(Complex)))
			}},
		{"unsafe pointer", "0", "Out: unsafe pointer",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(Unsafe)) }},
		{"interface field", "0.m*", "Out.Body: interface io.Reader cannot be decoded",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Map(sdk.Step(Reader))) }},
		{"float map key", "0", "Out.M: map key type float64",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(FloatKeyed)) }},
		{"marshaler without unmarshaler", "0", "Out[]: sdk_test.OnlyMarshals implements only one of json.Marshaler and json.Unmarshaler",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(HalfCodec)) }},
		{"func field", "0", "Out.F: function (func())",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(FuncField)) }},
		{"bound value", "0", "Bound.Items[].price: unexported field",
			func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Bind(BoundOrder, Order{})) }},
		{"fold accumulator", "0", "Acc.Items[].price: unexported field",
			func() (*sdk.Materialized, error) {
				m := sdk.Map(sdk.Step(Name)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 4})
				return sdk.Materialize(sdk.Reduce(m, AddLine, Order{}, fold))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.m()
			var de *sdk.DefinitionError
			if !errors.As(err, &de) || de.Code != sdk.CodeUnencodableValue || de.Path != c.node || !strings.HasPrefix(de.Msg, c.msg) {
				t.Fatalf("want UNENCODABLE_VALUE at node %s with %q, got %v", c.node, c.msg, err)
			}
		})
	}
	// Carriable types pass.
	for name, f := range map[string]func() (*sdk.Materialized, error){
		"json:\"-\" unexported field": func() (*sdk.Materialized, error) { return sdk.Materialize(sdk.Step(MakeHidden)) },
		"embedded, time, raw, any, int keys, pointer": func() (*sdk.Materialized, error) {
			return sdk.Materialize(sdk.Step(MakeEmbeds))
		},
		"tuples": func() (*sdk.Materialized, error) {
			return sdk.Materialize(sdk.Then(sdk.Step(Identity), sdk.Group2(sdk.Step(Identity), sdk.Step(Name))))
		},
	} {
		if _, err := f(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Run refuses it too, before any leaf.
	if _, err := sdk.Run(context.Background(), sdk.Then(sdk.Step(MakeOrder), sdk.Step(OrderTotal)), 1); !errors.Is(err, sdk.ErrInvalidDefinition) {
		t.Fatalf("Run of an uncarriable flow: %v", err)
	}
}

// TestLocalRunsRoundTripValues: a local run passes every value crossing a
// step boundary through the codec, so it sees what a Ray run sees.
func TestLocalRunsRoundTripValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// A non-finite float is refused at run time, naming the node.
	_, err := sdk.Run(ctx, sdk.Then(sdk.Step(Infinite), sdk.Step(Half)), 1)
	var ve *sdk.ValueError
	if !errors.As(err, &ve) || ve.Node != "0.0" || ve.Value != "output" || ve.Type != "float64" {
		t.Fatalf("+Inf output: want a ValueError at 0.0, got %v", err)
	}
	_, err = sdk.Run(ctx, sdk.Step(Half), math.NaN())
	if !errors.As(err, &ve) || ve.Node != "0" || ve.Value != "input" {
		t.Fatalf("NaN input: want a ValueError at 0, got %v", err)
	}
	_, err = sdk.Run(ctx, sdk.Map(sdk.Step(Half)), []float64{1, math.Inf(-1)})
	if !errors.As(err, &ve) || ve.Node != "0.m1" || ve.Value != "input" {
		t.Fatalf("-Inf map item: want a ValueError at 0.m1, got %v", err)
	}
	_, err = sdk.Run(ctx, sdk.Then(sdk.Step(Identity), sdk.Bind(Scaled, math.Inf(1))), 1)
	if !errors.As(err, &ve) || ve.Node != "0.1" || ve.Value != "bound value" {
		t.Fatalf("+Inf bound value: want a ValueError at 0.1, got %v", err)
	}
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 10}}
	_, err = sdk.Run(ctx, sdk.Reduce(sdk.Map(sdk.Step(Identity)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 4}), Divide, 1.0, fold), []int{1, 0, 2})
	if !errors.As(err, &ve) || ve.Node != "0.reducer" || ve.Value != "accumulator" {
		t.Fatalf("+Inf accumulator: want a ValueError at 0.reducer, got %v", err)
	}
	// Nothing behind an any is dropped silently either.
	_, err = sdk.Run(ctx, sdk.Step(HoldsFunc), 1)
	if !errors.As(err, &ve) || ve.Node != "0" {
		t.Fatalf("a func in a map[string]any: want a ValueError, got %v", err)
	}
	_, err = sdk.Run(ctx, sdk.Step(HoldsHidden), 1)
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "price: unexported field") {
		t.Fatalf("an unexported field behind any: want a ValueError, got %v", err)
	}
	// A number behind any decodes as float64, as on Ray; without the
	// round trip it stays an int.
	flow := sdk.Then(sdk.Step(AnyOut), sdk.Step(AnyIn))
	if got, err := sdk.Run(ctx, flow, 1); err != nil || got != "float64" {
		t.Fatalf("any through the codec: %v, %v", got, err)
	}
	if got, err := sdk.Run(ctx, flow, 1, sdk.WithoutCodecRoundTrip()); err != nil || got != "int" {
		t.Fatalf("any without the round trip: %v, %v", got, err)
	}
	// Branches get their own copy of the input; a bound value is fresh
	// per call.
	in := []int{1, 2}
	pair, err := sdk.Run(ctx, sdk.Group2(sdk.Step(Mutate), sdk.Step(Read)), in, sdk.Sequential())
	if err != nil || pair.V1 != 1 || in[0] != 1 {
		t.Fatalf("a branch saw its sibling's mutation or the caller's input changed: %+v, %v, %v", pair, in, err)
	}
	counts, err := sdk.Run(ctx, sdk.Map(sdk.Bind(BoundMutate, map[string]int{})), []int{1, 2, 3})
	if err != nil || counts[0] != 1 || counts[1] != 1 || counts[2] != 1 {
		t.Fatalf("bound value shared across calls: %v, %v", counts, err)
	}
	counts, err = sdk.Run(ctx, sdk.Map(sdk.Bind(BoundMutate, map[string]int{})).WithLimits(sdk.Limits{MaxConcurrency: 1}), []int{1, 2, 3}, sdk.WithoutCodecRoundTrip())
	if err != nil || counts[2] != 3 {
		t.Fatalf("without the round trip the bound value is shared: %v, %v", counts, err)
	}
	// Ordinary values are unchanged.
	if got, err := sdk.Run(ctx, sdk.Map(sdk.Step(Squared)), []int{1, 2, 3}); err != nil || got[2] != 9 {
		t.Fatalf("map: %v, %v", got, err)
	}
}
