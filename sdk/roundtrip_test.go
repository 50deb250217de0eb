package sdk

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// celsius encodes itself: its round trip must go through the codec.
type celsius int

func (c celsius) MarshalJSON() ([]byte, error) { return json.Marshal(int(c) * 10) }

// sameRoundTrip checks that T's chosen round trip gives what the codec's
// full round trip gives: the same value (bit for bit for floats) or the
// same error.
func sameRoundTrip[T any](t *testing.T, vs ...any) {
	t.Helper()
	fast := roundTripOf[T]()
	for _, v := range vs {
		want, werr := roundTrip[T](v)
		got, gerr := fast(v)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%T %#v: error %v, want %v", *new(T), v, gerr, werr)
			continue
		}
		if werr == nil && !sameValue(got, want) {
			t.Errorf("%T %#v: %#v, want %#v", *new(T), v, got, want)
		}
	}
}

func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && math.Float64bits(fa) == math.Float64bits(fb)
	}
	if fa, ok := a.(float32); ok {
		fb, ok := b.(float32)
		return ok && math.Float32bits(fa) == math.Float32bits(fb)
	}
	return reflect.DeepEqual(a, b)
}

func TestRoundTripOfMatchesTheCodec(t *testing.T) {
	sameRoundTrip[int](t, nil, 0, 1, -1, math.MaxInt, math.MinInt, "not an int")
	sameRoundTrip[int8](t, int8(math.MinInt8), int8(math.MaxInt8))
	sameRoundTrip[uint64](t, uint64(0), uint64(math.MaxUint64))
	sameRoundTrip[bool](t, true, false, nil)
	sameRoundTrip[float64](t, 0.0, math.Copysign(0, -1), 0.1, 1e300, math.SmallestNonzeroFloat64,
		math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1))
	sameRoundTrip[float32](t, float32(0.1), float32(math.MaxFloat32), float32(math.Inf(-1)))
	sameRoundTrip[string](t, "", "plain", "ünïcödé", "\x00<&>", "bad \xff utf-8", strings.Repeat("x", 1000))
	sameRoundTrip[celsius](t, celsius(3)) // through its own MarshalJSON: 30
	if got, _ := roundTripOf[celsius]()(celsius(3)); got != celsius(30) {
		t.Errorf("celsius(3) came back as %v, want 30 (its own encoding)", got)
	}
}

// The scalar round trip of a value the codec keeps allocates nothing.
func TestRoundTripOfScalarAllocs(t *testing.T) {
	f := roundTripOf[int]()
	var v any = 123456
	if n := testing.AllocsPerRun(100, func() { _, _ = f(v) }); n != 0 {
		t.Errorf("%v allocations per int round trip, want 0", n)
	}
}

func FuzzRoundTripOf(f *testing.F) {
	f.Add("a", 1.5, int64(7))
	f.Add("\xff", math.Inf(1), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, s string, x float64, i int64) {
		sameRoundTrip[string](t, s)
		sameRoundTrip[float64](t, x)
		sameRoundTrip[int64](t, i)
	})
}
