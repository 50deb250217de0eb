package sdk

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The differential test's types: each one a shape encoding/json treats
// in its own way.
type (
	rtSmall struct {
		ID    int     `json:"id"`
		Score float64 `json:"score"`
		Name  string  `json:"name"`
	}
	rtOptions struct {
		A int            `json:"a,omitempty"`
		B float64        `json:",omitempty"`
		C string         `json:"c,string"`
		D float64        `json:"d,string"`
		E bool           `json:",string"`
		F *int           `json:"f,string,omitempty"`
		G []int          `json:"g,omitempty"`
		H map[string]int `json:"h,omitempty"`
		I [0]int         `json:",omitempty"`
		J uint8          `json:"j,omitzero"`
		K rtSmall        `json:",omitzero"`
		L *string        `json:",string"`
		M float32        `json:",omitempty"`
		N []byte         `json:",omitempty"`
		O int64          `json:",string"`
		P *rtSmall       `json:",omitzero"`
		Q string         `json:",omitempty,string"`
	}
	rtHidden struct {
		A int
		b int
		C int `json:"-"`
		//lint:ignore SA5008 "-," names the field "-"
		D int `json:"-,"`
		e []int
		f func()
		g any
	}
	rtBase struct {
		ID   int
		Name string
		x    int
	}
	rtInner struct {
		X int
		y int
	}
	rtShadows struct {
		rtBase
		Name string
	}
	rtPromotes struct {
		rtInner
		rtBase
		Z int
	}
	rtA1      struct{ N int }
	rtB1      struct{ N int }
	rtCollide struct {
		rtA1
		rtB1
		M int
	}
	rtA2 struct {
		X int `json:"N"`
	}
	rtTagWins struct {
		rtB1
		rtA2
	}
	rtL1    struct{ rtBase }
	rtL2    struct{ rtBase }
	rtTwice struct {
		rtL1
		rtL2
		W int
	}
	rtTaggedEmbed struct {
		rtBase  `json:"base"`
		rtInner `json:"in"`
	}
	rtDegrees     float64
	rtMyInt       int
	rtEmbedScalar struct {
		rtDegrees
		rtMyInt
		V int
	}
	rtFold struct {
		A      int `json:"a"`
		B      int `json:"A"`
		C      int `json:"ä"`
		D      int `json:"Ä"`
		K      int `json:"k"`
		Kelvin int `json:"\u212a"`
		//lint:ignore SA5008 an invalid name: encoding/json names the field Q, and R's tag wins
		Q int `json:"a\"b"`
		R int `json:"Q"`
		S int `json:"s p,omitempty"`
	}
	rtNested struct {
		Items  []rtSmall
		ByName map[string]rtSmall
		ByID   map[int]*rtSmall
		Three  [3]rtSmall
		Ptr    *rtSmall
		Floats [2]float64
		Bytes  [][]byte
		Keys   map[rtKey]uint16
		Small  map[int8]string
		Ptrs   []*int
	}
	rtKey      string
	rtPointers struct {
		S  *[]int
		M  *map[string]int
		B  *[]byte
		A  *[2]int
		St *rtSmall
	}
	rtNode struct {
		V    int
		Next *rtNode
		Kids []rtNode
	}
	// reflect's IsZero (which encoding/json asks for omitempty and
	// omitzero) calls -0 zero, alone or in a struct or array: such a
	// part is left out and comes back +0.
	rtNegZero struct {
		Dropped rtSmall    `json:"-"`
		Zeroed  rtSmall    `json:",omitzero"`
		Arr     [2]float64 `json:",omitzero"`
		F       float64    `json:",omitzero"`
		E       float64    `json:",omitempty"`
		Kept    rtSmall
	}
	rtUintptr struct {
		U uintptr
		M map[uintptr]uintptr
	}

	// Types only the codec round-trips.
	rtAny      struct{ V any }
	rtNumber   struct{ N json.Number }
	rtTime     struct{ T time.Time }
	rtMyByte   byte
	rtMyBytes  struct{ B []rtMyByte }
	rtEmbedPtr struct{ *rtBase }
	rtBoolKeys struct{ M map[bool]int }
	rtChan     struct{ C chan int }
	rtComplex  struct{ C complex128 }
	rtPtrPtr   struct{ P **int }
	rtZeroer   struct{ V int }
	rtOmitZero struct {
		Z rtZeroer `json:",omitzero"`
	}
)

func (rtZeroer) IsZero() bool { return true }

func rtList(n int) *rtNode {
	var head *rtNode
	for i := range n {
		head = &rtNode{V: i, Next: head}
	}
	return head
}

func TestRoundTripOfMatchesTheCodecForShapes(t *testing.T) {
	one, word := 1, "w"
	negZero := math.Copysign(0, -1)
	nan, inf := math.NaN(), math.Inf(1)
	cycle := &rtNode{V: 1}
	cycle.Next = cycle
	empty := []int{}
	var nilSlice []int
	var nilMap map[string]int
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"small", func(t *testing.T) {
			sameRoundTrip[rtSmall](t, rtSmall{}, rtSmall{1, 2.5, "a"}, rtSmall{Score: negZero},
				rtSmall{Score: nan}, rtSmall{Score: inf}, rtSmall{Score: math.Inf(-1)}, rtSmall{Name: "bad \xff"},
				rtSmall{Score: math.MaxFloat64, Name: "<&>\u2028"}, nil, "not a struct", &rtSmall{})
		}},
		{"options", func(t *testing.T) {
			sameRoundTrip[rtOptions](t, rtOptions{}, rtOptions{A: 1, B: negZero, C: `q"<\u00e9`, D: 0.1, E: true,
				F: &one, G: []int{}, H: map[string]int{}, J: 3, K: rtSmall{ID: 1}, L: &word, M: float32(negZero),
				N: []byte{}, O: math.MinInt64, P: &rtSmall{}, Q: "q"},
				rtOptions{G: []int{1}, H: map[string]int{"": 0}, N: []byte{0}, D: negZero, Q: "\xff"},
				rtOptions{D: nan}, rtOptions{C: "bad \xfe"}, rtOptions{L: new(string)}, rtOptions{F: new(int)})
		}},
		{"unexported and dash fields", func(t *testing.T) {
			sameRoundTrip[rtHidden](t, rtHidden{}, rtHidden{A: 1, b: 2, C: 3, D: 4, e: []int{5}, f: func() {}, g: 6})
			sameRoundTrip[[]rtHidden](t, []rtHidden{{A: 1}, {A: 2, b: 3, e: []int{4}}, {}})
		}},
		{"shadowed embedded field", func(t *testing.T) {
			sameRoundTrip[rtShadows](t, rtShadows{rtBase{1, "inner", 2}, "outer"}, rtShadows{})
		}},
		{"promoted from unexported embedded struct", func(t *testing.T) {
			sameRoundTrip[rtPromotes](t, rtPromotes{rtInner{1, 2}, rtBase{3, "n", 4}, 5},
				rtPromotes{rtInner: rtInner{X: 1}}, rtPromotes{rtBase: rtBase{Name: "\xff"}})
		}},
		{"colliding names hide each other", func(t *testing.T) {
			sameRoundTrip[rtCollide](t, rtCollide{rtA1{1}, rtB1{2}, 3}, rtCollide{M: 3})
		}},
		{"tagged name wins", func(t *testing.T) {
			sameRoundTrip[rtTagWins](t, rtTagWins{rtB1{1}, rtA2{2}})
		}},
		{"same struct embedded twice", func(t *testing.T) {
			sameRoundTrip[rtTwice](t, rtTwice{rtL1{rtBase{1, "a", 2}}, rtL2{rtBase{3, "b", 4}}, 5}, rtTwice{W: 1})
		}},
		{"tagged embedded structs", func(t *testing.T) {
			sameRoundTrip[rtTaggedEmbed](t, rtTaggedEmbed{rtBase{1, "a", 2}, rtInner{3, 4}}, rtTaggedEmbed{})
		}},
		{"embedded scalars", func(t *testing.T) {
			sameRoundTrip[rtEmbedScalar](t, rtEmbedScalar{1.5, 2, 3}, rtEmbedScalar{rtDegrees: rtDegrees(nan)},
				rtEmbedScalar{rtMyInt: 7})
		}},
		{"names that fold together", func(t *testing.T) {
			sameRoundTrip[rtFold](t, rtFold{1, 2, 3, 4, 5, 6, 7, 8, 9}, rtFold{})
		}},
		{"nested", func(t *testing.T) {
			sameRoundTrip[rtNested](t, rtNested{}, rtNested{
				Items: []rtSmall{{1, 2, "a"}, {}}, ByName: map[string]rtSmall{"a": {ID: 1}, "": {}},
				ByID: map[int]*rtSmall{1: {ID: 1}, -2: nil}, Three: [3]rtSmall{{ID: 3}}, Ptr: &rtSmall{Name: "p"},
				Floats: [2]float64{negZero, 1}, Bytes: [][]byte{nil, {}, {1, 2}},
				Keys: map[rtKey]uint16{"k": 1}, Small: map[int8]string{-128: "min"}, Ptrs: []*int{nil, &one}},
				rtNested{Items: []rtSmall{}, ByName: map[string]rtSmall{}, Bytes: [][]byte{}, Ptrs: []*int{}},
				rtNested{Items: []rtSmall{{Score: inf}}}, rtNested{ByName: map[string]rtSmall{"\xff": {}}},
				rtNested{ByName: map[string]rtSmall{"a": {Name: "\xff"}}}, rtNested{Floats: [2]float64{0, nan}},
				rtNested{Ptr: &rtSmall{Score: nan}}, rtNested{Keys: map[rtKey]uint16{"\xffa": 1, "\xffb": 2}})
		}},
		{"pointers to nil, empty and full values", func(t *testing.T) {
			full, fullMap, bytes := []int{1}, map[string]int{"a": 1}, []byte("b")
			var nilBytes []byte
			sameRoundTrip[rtPointers](t, rtPointers{}, rtPointers{S: &nilSlice, M: &nilMap, B: &nilBytes},
				rtPointers{S: &empty, M: &map[string]int{}, B: &[]byte{}, A: &[2]int{}, St: &rtSmall{}},
				rtPointers{S: &full, M: &fullMap, B: &bytes, A: &[2]int{1, 2}, St: &rtSmall{ID: 1}})
		}},
		{"top-level slices, maps, arrays and pointers", func(t *testing.T) {
			sameRoundTrip[[]int](t, nilSlice, empty, []int{1, 2})
			sameRoundTrip[[]byte](t, []byte(nil), []byte{}, []byte{0, 0xff})
			sameRoundTrip[[]rtSmall](t, []rtSmall(nil), []rtSmall{}, []rtSmall{{ID: 1}, {Name: "\xff"}})
			sameRoundTrip[map[string][]int](t, map[string][]int(nil), map[string][]int{"a": nil, "b": {}, "c": {1}})
			sameRoundTrip[[2]string](t, [2]string{"a", "b"}, [2]string{"a", "\xff"})
			sameRoundTrip[*rtSmall](t, (*rtSmall)(nil), &rtSmall{ID: 1}, &rtSmall{Score: nan}, nil)
			sameRoundTrip[*[]int](t, &nilSlice, &empty, (*[]int)(nil))
		}},
		{"recursive", func(t *testing.T) {
			sameRoundTrip[rtNode](t, rtNode{}, *rtList(10), rtNode{Kids: []rtNode{{V: 1, Kids: []rtNode{}}}},
				*rtList(maxCopyDepth + 10), *cycle)
			sameRoundTrip[*rtNode](t, rtList(3), cycle)
		}},
		{"-0 in parts left out", func(t *testing.T) {
			sameRoundTrip[rtNegZero](t, rtNegZero{}, rtNegZero{Dropped: rtSmall{Score: negZero}},
				rtNegZero{Zeroed: rtSmall{Score: negZero}}, rtNegZero{Arr: [2]float64{negZero, 0}},
				rtNegZero{F: negZero, Kept: rtSmall{Score: negZero}}, rtNegZero{E: negZero}, rtNegZero{E: 1}, rtNegZero{Zeroed: rtSmall{Score: negZero, ID: 1}})
			sameRoundTrip[[]rtNegZero](t, []rtNegZero{{Zeroed: rtSmall{Score: negZero}}, {Arr: [2]float64{negZero}}})
		}},
		{"uintptr", func(t *testing.T) {
			sameRoundTrip[rtUintptr](t, rtUintptr{1, map[uintptr]uintptr{math.MaxUint64: 2}})
		}},
		{"interface", func(t *testing.T) {
			sameRoundTrip[rtAny](t, rtAny{}, rtAny{1}, rtAny{[]int{1}}, rtAny{math.NaN()})
		}},
		{"json.Number", func(t *testing.T) {
			sameRoundTrip[rtNumber](t, rtNumber{}, rtNumber{"1.5"}, rtNumber{"x"})
		}},
		{"own codec methods", func(t *testing.T) {
			sameRoundTrip[rtTime](t, rtTime{}, rtTime{time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))})
		}},
		{"slice of another byte type", func(t *testing.T) {
			sameRoundTrip[rtMyBytes](t, rtMyBytes{}, rtMyBytes{[]rtMyByte{1, 2}})
		}},
		{"embedded pointer", func(t *testing.T) {
			sameRoundTrip[rtEmbedPtr](t, rtEmbedPtr{}, rtEmbedPtr{&rtBase{ID: 1}})
		}},
		{"bool map keys", func(t *testing.T) { sameRoundTrip[rtBoolKeys](t, rtBoolKeys{}) }},
		{"channel", func(t *testing.T) { sameRoundTrip[rtChan](t, rtChan{}) }},
		{"complex", func(t *testing.T) { sameRoundTrip[rtComplex](t, rtComplex{1i}) }},
		{"pointer to pointer", func(t *testing.T) {
			p := &one
			sameRoundTrip[rtPtrPtr](t, rtPtrPtr{}, rtPtrPtr{new(*int)}, rtPtrPtr{&p})
		}},
		{"omitzero with an IsZero method", func(t *testing.T) {
			sameRoundTrip[rtOmitZero](t, rtOmitZero{rtZeroer{1}})
		}},
		{"long strings", func(t *testing.T) {
			sameRoundTrip[rtSmall](t, rtSmall{Name: strings.Repeat("é", 5000)}, rtSmall{Name: strings.Repeat("é", 5000) + "\xff"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t)
		})
	}
	// Which types have a plan is part of what is tested: a type wrongly
	// left to the codec would pass the comparisons above unnoticed.
	for _, c := range []struct {
		v    any
		want bool
	}{
		{rtSmall{}, true}, {rtOptions{}, true}, {rtHidden{}, true}, {rtShadows{}, true}, {rtPromotes{}, true},
		{rtCollide{}, true}, {rtTagWins{}, true}, {rtTwice{}, true}, {rtTaggedEmbed{}, true},
		{rtEmbedScalar{}, true}, {rtFold{}, true}, {rtNested{}, true}, {rtPointers{}, true}, {rtNode{}, true},
		{rtUintptr{}, true}, {rtNegZero{}, true}, {[]byte{}, true}, {map[string][]int{}, true},
		{rtAny{}, false}, {rtNumber{}, false}, {rtTime{}, false}, {rtMyBytes{}, false}, {rtEmbedPtr{}, false},
		{rtBoolKeys{}, false}, {rtChan{}, false}, {rtComplex{}, false}, {rtPtrPtr{}, false}, {rtOmitZero{}, false},
		{celsius(0), false}, {Tuple2[int, int]{}, false},
	} {
		if got := copyPlanOf(reflect.TypeOf(c.v)) != nil; got != (c.want && !jsonV2) {
			t.Errorf("%T has a copy plan: %v, want %v", c.v, got, c.want)
		}
	}
}

// countingCodec is JSON that counts the values it encodes: a program's
// own codec in place of DefaultCodec.
type countingCodec struct {
	jsonCodec
	marshals *int
}

func (c countingCodec) Name() string { return "counting-json" }
func (c countingCodec) Marshal(v any) ([]byte, error) {
	*c.marshals++
	return c.jsonCodec.Marshal(v)
}

// While DefaultCodec is another codec, every round trip goes through it,
// for types with a plan too, and for round trips chosen before the codec
// was replaced.
func TestRoundTripOfUsesTheCodecInUse(t *testing.T) {
	ints, smalls := roundTripOf[int](), roundTripOf[rtSmall]()
	var marshals int
	saved := DefaultCodec
	DefaultCodec = countingCodec{marshals: &marshals}
	t.Cleanup(func() { DefaultCodec = saved })
	for _, rt := range []struct {
		name string
		f    func(any) (any, error)
		v    any
	}{
		{"int", ints, 1}, {"struct", smalls, rtSmall{ID: 1}},
		{"int chosen after", roundTripOf[int](), 2}, {"slice", roundTripOf[[]rtSmall](), []rtSmall{{}}},
	} {
		before := marshals
		if _, err := rt.f(rt.v); err != nil {
			t.Fatalf("%s: %v", rt.name, err)
		}
		if marshals != before+1 {
			t.Errorf("%s: the codec in use encoded %d values, want 1", rt.name, marshals-before)
		}
	}
}

// BenchmarkRoundTripOf compares, per value, the codec's full round trip
// with the one roundTripOf chooses, for a scalar, a small struct, and a
// struct with a slice, a map and a pointer.
func BenchmarkRoundTripOf(b *testing.B) {
	one := 1
	nested := rtNested{Items: []rtSmall{{1, 2, "a"}, {3, 4, "b"}}, ByName: map[string]rtSmall{"a": {ID: 1}},
		Ptr: &rtSmall{ID: 2}, Ptrs: []*int{&one}}
	for _, c := range []struct {
		name         string
		codec, chose func(any) (any, error)
		v            any
	}{
		{"int", codecRoundTrip[int], roundTripOf[int](), 123456},
		{"small", codecRoundTrip[rtSmall], roundTripOf[rtSmall](), rtSmall{7, 1.5, "item"}},
		{"nested", codecRoundTrip[rtNested], roundTripOf[rtNested](), nested},
	} {
		for _, side := range []struct {
			name string
			f    func(any) (any, error)
		}{{"codec", c.codec}, {"roundTripOf", c.chose}} {
			b.Run(c.name+"/"+side.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := side.f(c.v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The struct shapes FuzzCopyPlanStructShapes builds from: embedded
// structs whose fields collide with each other and with the outer
// struct's.
type (
	FuzzE1 struct {
		N int
		A string
	}
	FuzzE2 struct {
		N int `json:"N"`
		K float64
	}
	FuzzW1 struct{ FuzzE1 }
	FuzzW2 struct {
		FuzzE1
		N int `json:"n,omitempty"`
	}
)

var (
	fuzzFieldTypes = []reflect.Type{
		reflect.TypeFor[int](), reflect.TypeFor[float64](), reflect.TypeFor[string](), reflect.TypeFor[*int](),
		reflect.TypeFor[[]int](), reflect.TypeFor[map[string]int](), reflect.TypeFor[bool](), reflect.TypeFor[[]byte](),
		reflect.TypeFor[FuzzE1](), reflect.TypeFor[FuzzE2](), reflect.TypeFor[FuzzW1](), reflect.TypeFor[FuzzW2](),
		reflect.TypeFor[[2]float64](), reflect.TypeFor[*FuzzE1](), reflect.TypeFor[rtSmall](), reflect.TypeFor[[]rtSmall](),
		reflect.TypeFor[float32](), reflect.TypeFor[*string](), reflect.TypeFor[map[int]*FuzzE2](), reflect.TypeFor[uint8](),
	}
	fuzzTags = []reflect.StructTag{"", `json:"n"`, `json:"N"`, `json:"a"`, `json:"A"`, `json:",omitempty"`,
		`json:"n,omitempty"`, `json:",string"`, `json:"-"`, `json:"-,"`, `json:"x y"`, `json:"K"`, `json:"k,omitzero"`,
		`json:",omitempty,string"`, `json:"a\"b"`, `json:"\u212a"`}
	fuzzNames = []string{"N", "A", "K", "F"}
)

// fuzzStruct builds a struct type from spec, three bytes a field: its
// type (an exported struct type is embedded when the byte is below
// len(fuzzFieldTypes), or in every other run of that many values), its
// tag and its name.
func fuzzStruct(spec []byte) reflect.Type {
	var fields []reflect.StructField
	used := map[string]bool{}
	for i := 0; i+2 < len(spec) && len(fields) < 12; i += 3 {
		ft := fuzzFieldTypes[int(spec[i])%len(fuzzFieldTypes)]
		f := reflect.StructField{Type: ft, Tag: fuzzTags[int(spec[i+1])%len(fuzzTags)]}
		if ft.Kind() == reflect.Struct && int(spec[i])/len(fuzzFieldTypes)%2 == 0 && strings.HasPrefix(ft.Name(), "Fuzz") {
			f.Name, f.Anonymous = ft.Name(), true
		} else {
			f.Name = fuzzNames[int(spec[i+2])%len(fuzzNames)]
		}
		if used[f.Name] {
			f.Name = fmt.Sprintf("%s%d", f.Name, i)
			f.Anonymous = false
		}
		used[f.Name] = true
		fields = append(fields, f)
	}
	return reflect.StructOf(fields)
}

// fuzzFill sets every part of v from s, x and i; shape picks nil, empty
// or full slices, maps and pointers.
func fuzzFill(v reflect.Value, s string, x float64, i int64, shape uint8, depth int) {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		v.SetInt(i)
	case reflect.Uint8:
		v.SetUint(uint64(shape))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(x)
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(shape&4 != 0)
	case reflect.Pointer:
		if shape%3 != 0 && depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			fuzzFill(v.Elem(), s, x, i, shape, depth+1)
		}
	case reflect.Slice:
		if n := int(shape % 3); n > 0 {
			v.Set(reflect.MakeSlice(v.Type(), n-1, n-1))
			for j := range n - 1 {
				fuzzFill(v.Index(j), s, x, i+int64(j), shape/3, depth+1)
			}
		}
	case reflect.Map:
		if shape%3 != 0 {
			v.Set(reflect.MakeMap(v.Type()))
			if shape%3 == 2 && depth < 4 {
				k := reflect.New(v.Type().Key()).Elem()
				fuzzFill(k, s, x, i, shape, depth+1)
				e := reflect.New(v.Type().Elem()).Elem()
				fuzzFill(e, s, x, i, shape/3, depth+1)
				v.SetMapIndex(k, e)
			}
		}
	case reflect.Array:
		for j := range v.Len() {
			fuzzFill(v.Index(j), s, x, i, shape, depth+1)
		}
	case reflect.Struct:
		for j := range v.NumField() {
			fuzzFill(v.Field(j), s, x, i, shape/2+uint8(j), depth+1)
		}
	}
}

// FuzzCopyPlanStructShapes compares the copy plan of generated struct
// types (tags, omitempty, omitzero, the string option, embedded structs
// whose names collide) with the default codec's round trip.
func FuzzCopyPlanStructShapes(f *testing.F) {
	f.Add([]byte{0, 0, 0, 8, 0, 0, 9, 0, 0}, "a", 1.5, int64(7), uint8(2))
	f.Add([]byte{10, 0, 0, 11, 0, 0, 1, 2, 0}, "\xff", math.NaN(), int64(-1), uint8(1))
	f.Add([]byte{12, 5, 1, 13, 7, 2, 3, 13, 3, 14, 3, 0, 7, 6, 0}, "é", math.Copysign(0, -1), int64(0), uint8(0))
	f.Add([]byte{2, 7, 0, 6, 7, 1, 17, 13, 2, 19, 12, 0, 0, 15, 3}, "", 1e300, int64(math.MaxInt64), uint8(5))
	f.Fuzz(func(t *testing.T, spec []byte, s string, x float64, i int64, shape uint8) {
		typ := fuzzStruct(spec)
		in := reflect.New(typ).Elem()
		fuzzFill(in, s, x, i, shape, 0)
		b, err := jsonCodec{}.Marshal(in.Interface())
		if err != nil {
			return // the codec refuses it: the plan must give up
		}
		want := reflect.New(typ)
		if err := json.Unmarshal(b, want.Interface()); err != nil {
			return
		}
		p := copyPlanOf(typ)
		if p == nil {
			t.Fatalf("%v has no copy plan", typ) // every part of it has one
		}
		got := reflect.New(typ).Elem()
		if p.flat && p.keeps(in) {
			got = in
		} else if !p.copyInto(got, in, 0) {
			return // handed to the codec
		}
		if diff := cmp.Diff(want.Elem().Interface(), got.Interface(), sameValues); diff != "" {
			t.Errorf("%v %+v (JSON %s): the copy differs from the codec's round trip (-codec +copy):\n%s", typ, in, b, diff)
		}
	})
}

// rtNest nests one level a slice.
type rtNest []rtNest

func nest(levels int) rtNest {
	v := rtNest{}
	for range levels {
		v = rtNest{v}
	}
	return v
}

// A value nested exactly maxCopyDepth levels deep is copied; one level
// more goes through the codec, with the same result.
func TestCopyPlanDepthBound(t *testing.T) {
	p := copyPlanOf(reflect.TypeFor[rtNest]())
	if p == nil {
		t.Fatal("rtNest has no copy plan")
	}
	for _, c := range []struct {
		levels int
		copied bool
	}{{maxCopyDepth - 1, true}, {maxCopyDepth, true}, {maxCopyDepth + 1, false}} {
		v := nest(c.levels)
		dst := reflect.New(p.t).Elem()
		if got := p.copyInto(dst, reflect.ValueOf(v), 0); got != c.copied {
			t.Errorf("%d levels: copied %v, want %v", c.levels, got, c.copied)
		}
		// reflect.DeepEqual, not cmp.Diff, which takes exponential
		// time over slices of slices.
		want, werr := codecRoundTrip[rtNest](v)
		got, gerr := roundTripOf[rtNest]()(v)
		if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%d levels: round trip differs from the codec's (errors %v, %v)", c.levels, gerr, werr)
		}
	}
}
