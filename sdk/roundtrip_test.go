package sdk

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// celsius encodes itself: its round trip must go through the codec.
type celsius int

func (c celsius) MarshalJSON() ([]byte, error) { return json.Marshal(int(c) * 10) }

// sameValues compares round-trip results field by field, unexported
// fields included, floats bit for bit (so -0 is not 0, and a NaN equals
// itself).
var sameValues = cmp.Options{
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmp.FilterPath(func(p cmp.Path) bool {
		k := p.Last().Type().Kind()
		return k == reflect.Float32 || k == reflect.Float64
	}, cmp.Comparer(func(a, b any) bool {
		va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
		if va.Kind() == reflect.Float32 {
			return math.Float32bits(float32(va.Float())) == math.Float32bits(float32(vb.Float()))
		}
		return math.Float64bits(va.Float()) == math.Float64bits(vb.Float())
	})),
}

// codecRoundTrip is the default codec's full round trip of v into a T,
// written out here so that the tests do not compare roundTripOf with
// code it calls.
func codecRoundTrip[T any](v any) (any, error) {
	t, err := as[T](v)
	if err != nil {
		return nil, err
	}
	b, err := jsonCodec{}.Marshal(t)
	if err != nil {
		return nil, err
	}
	var out T
	if err := (jsonCodec{}).Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// sameRoundTrip checks that T's chosen round trip gives what the codec's
// full round trip gives: the same value (bit for bit for floats, nil and
// empty told apart) or the same error, and that what it gives back shares
// no memory with what it was given.
func sameRoundTrip[T any](t *testing.T, vs ...any) {
	t.Helper()
	fast := roundTripOf[T]()
	for _, v := range vs {
		want, werr := codecRoundTrip[T](v)
		got, gerr := fast(v)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%T %#v: error %v, want %v", *new(T), v, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if diff := cmp.Diff(want, got, sameValues); diff != "" {
			t.Errorf("%T %#v: round trip differs from the codec's (-codec +got):\n%s", *new(T), v, diff)
		}
		if where := sharedMemory(reflect.ValueOf(v), reflect.ValueOf(got), "value", 0); where != "" {
			t.Errorf("%T %#v: the round trip shares %s with its input", *new(T), v, where)
		}
	}
}

// sharedMemory names the first pointer, slice or map of got that is
// also in in (both of the same type), or returns "".
func sharedMemory(in, got reflect.Value, path string, depth int) string {
	if !in.IsValid() || !got.IsValid() || in.Type() != got.Type() || depth > 100 {
		return ""
	}
	switch in.Kind() {
	case reflect.Pointer:
		if in.IsNil() || got.IsNil() {
			return ""
		}
		if in.Pointer() == got.Pointer() && in.Type().Elem().Size() > 0 {
			return path
		}
		return sharedMemory(in.Elem(), got.Elem(), "*"+path, depth+1)
	case reflect.Slice:
		if in.Cap() > 0 && got.Cap() > 0 && in.Pointer() == got.Pointer() && in.Type().Elem().Size() > 0 {
			return path
		}
		for i := range min(in.Len(), got.Len()) {
			if w := sharedMemory(in.Index(i), got.Index(i), path+"[]", depth+1); w != "" {
				return w
			}
		}
	case reflect.Array:
		for i := range in.Len() {
			if w := sharedMemory(in.Index(i), got.Index(i), path+"[]", depth+1); w != "" {
				return w
			}
		}
	case reflect.Map:
		if in.IsNil() || got.IsNil() {
			return ""
		}
		if in.Pointer() == got.Pointer() {
			return path
		}
		for it := got.MapRange(); it.Next(); {
			if iv := in.MapIndex(it.Key()); iv.IsValid() {
				if w := sharedMemory(iv, it.Value(), path+"[]", depth+1); w != "" {
					return w
				}
			}
		}
	case reflect.Struct:
		for i := range in.NumField() {
			if w := sharedMemory(in.Field(i), got.Field(i), path+"."+in.Type().Field(i).Name, depth+1); w != "" {
				return w
			}
		}
	}
	return ""
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
	if jsonV2 {
		t.Skip("every round trip goes through the codec with GOEXPERIMENT=jsonv2")
	}
	f := roundTripOf[int]()
	var v any = 123456
	if n := testing.AllocsPerRun(100, func() { _, _ = f(v) }); n != 0 {
		t.Errorf("%v allocations per int round trip, want 0", n)
	}
}

func FuzzRoundTripOf(f *testing.F) {
	f.Add("a", 1.5, int64(7), []byte("b"), uint8(0))
	f.Add("\xff", math.Inf(1), int64(math.MinInt64), []byte(nil), uint8(1))
	f.Add("", math.Copysign(0, -1), int64(0), []byte{}, uint8(2))
	f.Add("é<&>", math.NaN(), int64(-1), []byte{0xff}, uint8(255))
	f.Fuzz(func(t *testing.T, s string, x float64, i int64, b []byte, shape uint8) {
		sameRoundTrip[string](t, s)
		sameRoundTrip[float64](t, x)
		sameRoundTrip[int64](t, i)
		sameRoundTrip[[]byte](t, b)
		// shape picks nil, empty or full slices, maps and pointers.
		var ints []int
		var byName map[string]rtSmall
		var ptr *rtSmall
		small := rtSmall{ID: int(i), Score: x, Name: s}
		switch shape % 3 {
		case 1:
			ints, byName, ptr = []int{}, map[string]rtSmall{}, &rtSmall{}
		case 2:
			ints, byName, ptr = []int{int(i), int(shape)}, map[string]rtSmall{s: small, "": {}}, &small
		}
		sameRoundTrip[rtSmall](t, small)
		sameRoundTrip[float32](t, float32(x))
		sameRoundTrip[rtOptions](t, rtOptions{A: int(i), B: x, C: s, D: x, E: shape&1 == 1, F: (*int)(nil),
			G: ints, H: map[string]int{s: int(shape)}, J: shape, K: small, L: &s, M: float32(x), N: b, O: i, P: ptr, Q: s})
		sameRoundTrip[rtHidden](t, rtHidden{A: int(i), b: int(shape), C: 1, D: 2, e: ints})
		sameRoundTrip[rtPromotes](t, rtPromotes{rtInner{int(i), 1}, rtBase{int(shape), s, 2}, 3})
		sameRoundTrip[rtNested](t, rtNested{Items: []rtSmall{small}, ByName: byName, Ptr: ptr,
			Floats: [2]float64{x, -x}, Bytes: [][]byte{b}, Keys: map[rtKey]uint16{rtKey(s): uint16(shape)},
			Small: map[int8]string{int8(i): s}, ByID: map[int]*rtSmall{int(i): ptr}})
		sameRoundTrip[[]rtSmall](t, []rtSmall{small, {}})
		sameRoundTrip[map[string][]int](t, map[string][]int{s: ints})
	})
}
