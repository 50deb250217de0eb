package canonical

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

type record struct {
	Zeta     string            `json:"zeta"`
	Alpha    int               `json:"alpha"`
	Optional *string           `json:"optional,omitempty"`
	Nullable *inner            `json:"nullable"`
	Skipped  string            `json:"-"`
	Empty    []string          `json:"empty"`
	Omitted  []string          `json:"omitted,omitempty"`
	Zero     time.Time         `json:"zero,omitzero"`
	Labels   map[string]string `json:"labels"`
	Inner    inner             `json:"inner"`
	Any      any               `json:"any"`
	//lint:ignore U1000 present to check that unexported fields are skipped
	unexported int
	NoTag      bool
}

type recursive struct {
	Next *recursive `json:"next,omitempty"`
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("text:" + string(k)), nil }

func TestMarshalGoValues(t *testing.T) {
	t.Parallel()
	s := "set"
	deep := &recursive{}
	for range 16 { // 17 objects: the innermost, empty, is at depth 16
		deep = &recursive{Next: deep}
	}
	tooDeep := &recursive{Next: deep}
	cases := []struct {
		name string
		c    Codec
		v    any
		want string
		rule Rule
	}{
		{name: "struct-sorted-tags", c: V1, v: record{Zeta: "z", Alpha: 1, Labels: map[string]string{"b": "2", "a": "1"}, Inner: inner{Name: "n", Score: 2.0}, Any: []any{1.5, nil}},
			want: `{"NoTag":false,"alpha":1,"any":[1.5,null],"empty":[],"inner":{"name":"n","score":2},"labels":{"a":"1","b":"2"},"nullable":null,"zeta":"z"}`},
		{name: "struct-optional-set", c: NoFold, v: record{Optional: &s, Inner: inner{Score: 2}},
			want: `{"NoTag":false,"alpha":0,"any":null,"empty":[],"inner":{"name":"","score":2.0},"labels":{},"nullable":null,"optional":"set","zeta":""}`},
		{name: "nil-slice-and-map", c: V1, v: map[string]any{"s": []int(nil), "m": map[string]int(nil)}, want: `{"m":{},"s":[]}`},
		{name: "ints", c: V1, v: []any{int8(-8), uint64(math.MaxUint64), int64(math.MinInt64), uint8(7)}, want: `[-8,18446744073709551615,-9223372036854775808,7]`},
		{name: "float32", c: NoFold, v: []float32{0.1, 2}, want: `[0.10000000149011612,2.0]`},
		{name: "floats-fold", c: V1, v: []float64{1e23, math.Copysign(0, -1), 0.5, 1e-7}, want: `[99999999999999991611392,0,0.5,1e-07]`},
		{name: "big-int", c: V1, v: map[string]any{"a": new(big.Int).Lsh(big.NewInt(1), 70), "b": *big.NewInt(-5)}, want: `{"a":1180591620717411303424,"b":-5}`},
		{name: "numbers", c: V1, v: []any{Number("1.0"), json.Number("-0"), Number("1e-400")}, want: `[1,0,0]`},
		{name: "bad-number", c: V1, v: Number("1.2.3"), rule: RuleSyntax},
		{name: "raw-message", c: V1, v: map[string]any{"r": json.RawMessage(`{"b":1.0,"a":"e\u0301"}`)}, want: `{"r":{"a":"é","b":1}}`},
		{name: "raw-message-bad", c: V1, v: json.RawMessage(`{"a":1,"a":2}`), rule: RuleDuplicateKey},
		{name: "text-marshaler", c: V1, v: []any{textKey("x"), time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)}, want: `["text:x","2026-11-30T07:00:00Z"]`},
		{name: "nfc-map-key", c: V1, v: map[string]int{"e\u0301": 1}, want: `{"é":1}`},
		{name: "nfc-map-key-collision", c: V1, v: map[string]int{"e\u0301": 1, "é": 2}, rule: RuleDuplicateKeyNFC},
		{name: "empty-map-key", c: V1, v: map[string]int{"": 1}, rule: RuleKeyEmpty},
		{name: "nan", c: NoFold, v: math.NaN(), rule: RuleNonFinite},
		{name: "inf-in-struct", c: V1, v: inner{Score: math.Inf(-1)}, rule: RuleNonFinite},
		{name: "invalid-utf8", c: NoFold, v: "\xff", rule: RuleInvalidUTF8},
		{name: "invalid-utf8-key", c: V1, v: map[string]int{"\xed\xa0\x80": 1}, rule: RuleInvalidUTF8},
		{name: "reserved", c: V1, v: "\u0378", rule: RuleUnassignedCodePoint},
		{name: "bytes", c: V1, v: []byte("x"), rule: RuleUnsupportedType},
		{name: "func", c: V1, v: func() {}, rule: RuleUnsupportedType},
		{name: "chan-in-any", c: V1, v: []any{make(chan int)}, rule: RuleUnsupportedType},
		{name: "int-key", c: V1, v: map[int]string{1: "a"}, rule: RuleNonStringKey},
		{name: "recursive-16", c: V1, v: deep, want: strings.Repeat(`{"next":`, 16) + "{}" + strings.Repeat("}", 16)},
		{name: "recursive-17", c: V1, v: tooDeep, rule: RuleDepth},
		{name: "scalar-depth-16", c: V1, v: nestAny(16), want: nest("[", "]", 16, "1")},
		{name: "scalar-depth-17", c: V1, v: nestAny(17), rule: RuleDepth},
		{name: "typed-depth-17", c: V1, v: [][][][][][][][][][][][][][][][][]int{{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}}, rule: RuleDepth},
		{name: "slice-1024", c: V1, v: make([]int, 1024), want: items(1024)},
		{name: "slice-1025", c: V1, v: make([]int, 1025), rule: RuleArrayItems},
		{name: "any-slice-1025", c: V1, v: make([]any, 1025), rule: RuleArrayItems},
		{name: "array-1025-nofold", c: NoFold, v: [1025]int{}, want: items(1025)},
		{name: "map-256", c: V1, v: nMap(256)},
		{name: "map-257", c: V1, v: nMap(257), rule: RuleObjectEntries},
		{name: "map-257-uncapped", c: V1Uncapped, v: nMap(257)},
		{name: "string-2048", c: V1, v: strings.Repeat("é", 2048), want: quote(strings.Repeat("é", 2048))},
		{name: "string-2049", c: V1, v: strings.Repeat("é", 2049), rule: RuleStringLength},
		{name: "key-2049", c: V1, v: map[string]int{strings.Repeat("k", 2049): 1}, rule: RuleKeyLength},
		{name: "ascii-escapes-nofold-raw", c: NoFold, v: "\u2028<&>", want: "\"\u2028<&>\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.c.Marshal(tc.v)
			if tc.rule != "" {
				if !errors.Is(err, tc.rule) {
					t.Fatalf("want %s, got %s, %v", tc.rule, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", trim(got), trim([]byte(tc.want)))
			}
			// The Go-value path and the text path agree.
			viaText, err := tc.c.Transform(got)
			if err != nil || string(viaText) != string(got) {
				t.Fatalf("Transform(Marshal(v)) = %s, %v", trim(viaText), err)
			}
		})
	}
}

func nestAny(depth int) any {
	var v any = 1
	for range depth {
		v = []any{v}
	}
	return v
}

func nMap(n int) map[string]int {
	m := make(map[string]int, n)
	for i := range n {
		m["k"+strings.Repeat("x", i/26)+string(rune('a'+i%26))] = i
	}
	return m
}

func TestMarshalMatchesEncodingJSONOrder(t *testing.T) {
	t.Parallel()
	// For ASCII content without floats, canonical JSON is encoding/json's
	// output re-sorted; check the tag handling agrees with encoding/json.
	v := record{Zeta: "z", Alpha: 3, Labels: map[string]string{"x": "y"}, Inner: inner{Name: "n"}, Any: map[string]any{"k": []any{true}}, Empty: []string{}}
	ej, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Transform(ej)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("Marshal differs from Transform(json.Marshal) (-want +got):\n%s", diff)
	}
}

func TestEncodeStreams(t *testing.T) {
	t.Parallel()
	big := make([]any, 0, 4096)
	for i := range 4096 {
		big = append(big, map[string]any{"i": i, "s": strings.Repeat("x", 100)})
	}
	var sb strings.Builder
	n, err := V1Uncapped.Encode(&sb, big)
	if err != nil {
		t.Fatal(err)
	}
	want, err := V1Uncapped.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	if sb.String() != string(want) || n != int64(len(want)) {
		t.Fatalf("streamed %d bytes differ from Marshal's %d", n, len(want))
	}
	if _, err := V1.Marshal(big); !errors.Is(err, RuleArrayItems) {
		t.Fatalf("V1 must cap the same value: %v", err)
	}
	d1, err := V1Uncapped.Digest(DomainPlan, big)
	if err != nil || d1 != DomainPlan.Sum(want) {
		t.Fatalf("streamed digest differs: %v", err)
	}
}

func TestMarshalASCII(t *testing.T) {
	t.Parallel()
	v := map[string]any{"b": []any{"é😀\u007f", 1.0}, "a": nil}
	got, err := MarshalASCII(v, false)
	if err != nil {
		t.Fatal(err)
	}
	// Python: json.dumps(v, sort_keys=True, separators=(",", ":"))
	const compact = `{"a":null,"b":["\u00e9\ud83d\ude00\u007f",1.0]}`
	if string(got) != compact {
		t.Fatalf("got %s", got)
	}
	spaced, err := MarshalASCII(v, true)
	if err != nil || string(spaced) != `{"a": null, "b": ["\u00e9\ud83d\ude00\u007f", 1.0]}` {
		t.Fatalf("got %s, %v", spaced, err)
	}
	n, err := ASCIISize(v, false)
	if err != nil || n != int64(len(compact)) {
		t.Fatalf("ASCIISize = %d, %v", n, err)
	}
	type snap struct {
		B string `json:"b"`
		A int    `json:"a"`
	}
	spacedStruct, err := MarshalASCII(snap{B: "x", A: 1}, true)
	if err != nil || string(spacedStruct) != `{"a": 1, "b": "x"}` {
		t.Fatalf("got %s, %v", spacedStruct, err)
	}
}

func TestConcurrentMarshal(t *testing.T) {
	t.Parallel()
	done := make(chan string, 8)
	for range 8 {
		go func() {
			b, err := Marshal(record{Zeta: "z", Inner: inner{Score: 1.5}})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- string(b)
		}()
	}
	first := <-done
	for range 7 {
		if got := <-done; got != first {
			t.Fatalf("concurrent results differ: %s vs %s", got, first)
		}
	}
}
