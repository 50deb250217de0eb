package canonical

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// overCapInputs are inputs far over a cap; the rule they break and, with
// a syntax error appended, the parse error that must still win.
func overCapInputs(size int) []struct {
	name string
	in   []byte
	rule Rule
} {
	ones := make([]byte, 0, size)
	ones = append(ones, '[')
	for len(ones) < size-2 {
		ones = append(ones, '1', ',')
	}
	ones = append(ones, '1', ']')
	objs := []byte("[" + strings.Repeat(`{"a":[1,"x"],"b":{"c":null}},`, size/30) + `{}]`)
	nested := []byte("[" + strings.Repeat("["+strings.Repeat("1,", 1023)+"1],", size/2048) + "[]]")
	long := []byte(`["` + strings.Repeat("é", size/2) + `"]`)
	return []struct {
		name string
		in   []byte
		rule Rule
	}{
		{"flat array", ones, RuleArrayItems},
		{"array of objects", objs, RuleArrayItems},
		{"array of full arrays", nested, RuleArrayItems},
		{"long string", long, RuleStringLength},
	}
}

// bytesAllocated returns the bytes f allocates (the test must not run in
// parallel with others: the counter is process-wide).
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOverCapInputAllocationIsBounded: caps are enforced while parsing
// and the canonical text is written as it is parsed, so rejecting an input
// far over a cap allocates what the caps allow before the rejection point,
// whatever the input's size. It used to parse the whole input into a tree
// first: an 8 MiB array of ones allocated 2.3 GB. A parse error after the
// cap is exceeded still wins (conformance/README.md: parse errors before
// normalization errors), and finding it costs no more.
func TestOverCapInputAllocationIsBounded(t *testing.T) {
	// What the caps let through before the rejection: 1,024 small
	// values (a few KiB), or 1,024 arrays of 1,024 ones (2 MiB of text).
	limits := map[string]uint64{"flat array": 256 << 10, "array of objects": 256 << 10, "array of full arrays": 8 << 20, "long string": 256 << 10}
	sizes := []int{2 << 20, 16 << 20}
	if raceEnabled {
		sizes = []int{3 << 20} // the smallest with 1,025 full arrays
	}
	var small []uint64
	for i, size := range sizes {
		for j, tc := range overCapInputs(size) {
			var err error
			got := bytesAllocated(func() { _, err = V1.Transform(tc.in) })
			if !errors.Is(err, tc.rule) {
				t.Fatalf("%s: err = %v, want %s", tc.name, err, tc.rule)
			}
			if got > limits[tc.name] {
				t.Errorf("%s: rejecting %d bytes allocated %d bytes, want at most %d", tc.name, len(tc.in), got, limits[tc.name])
			}
			// 8 times the input, not 8 times the allocation.
			if i == 0 {
				small = append(small, got)
			} else if got > small[j]+64<<10 {
				t.Errorf("%s: rejecting %d bytes allocated %d bytes, %d for an input 8 times smaller", tc.name, len(tc.in), got, small[j])
			}
			if i == len(sizes)-1 {
				allocs := testing.AllocsPerRun(2, func() { _, err = V1.Transform(tc.in) })
				if allocs > 64 {
					t.Errorf("%s: %v allocations per rejection, want at most 64", tc.name, allocs)
				}
			}
			bad := append(bytes.Clone(tc.in[:len(tc.in)-1]), ',', ']')
			got = bytesAllocated(func() { _, err = V1.Transform(bad) })
			if !errors.Is(err, RuleSyntax) {
				t.Fatalf("%s + trailing syntax error: err = %v, want syntax", tc.name, err)
			}
			if got > limits[tc.name] {
				t.Errorf("%s + trailing syntax error: allocated %d bytes, want at most %d", tc.name, got, limits[tc.name])
			}
		}
	}
}

// TestValidInputAllocation: a valid input is written as it is parsed, so a
// large one allocates a small multiple of its output (it used to hold a
// node tree of ~40 bytes per input byte).
func TestValidInputAllocation(t *testing.T) {
	row := "[" + strings.Repeat("1,", 1023) + "1]"
	in := []byte("[" + strings.Repeat(row+",", 1023) + row + "]")
	var out []byte
	var err error
	got := bytesAllocated(func() { out, err = V1.Transform(in) })
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("Transform: %v", err)
	}
	if got > 3*uint64(len(in)) {
		t.Errorf("Transform of %d bytes allocated %d bytes, want at most 3 times the output", len(in), got)
	}
}

// BenchmarkTransformOverCap rejects 8 MiB inputs far over a cap.
func BenchmarkTransformOverCap(b *testing.B) {
	for _, tc := range overCapInputs(8 << 20) {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(tc.in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := V1.Transform(tc.in); !errors.Is(err, tc.rule) {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCapPrecedenceWhileParsing pins the rule precedence of
// conformance/README.md for inputs where the one-pass decoder finds a
// normalization error before the end of the text: the first in document
// order wins (a container's count before its contents), and any later
// parse error wins over all of them. Each expectation was checked against
// the independent Python reference.
func TestCapPrecedenceWhileParsing(t *testing.T) {
	t.Parallel()
	ones := func(n int) string { return strings.TrimSuffix(strings.Repeat("1,", n), ",") }
	members := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			if i > from {
				b.WriteByte(',')
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
		}
		return b.String()
	}
	long := `"` + strings.Repeat("a", 2049) + `"`
	for _, tc := range []struct {
		name, in string
		rule     Rule
		path     string
		detail   string
	}{
		{"array at cap", "[" + ones(1024) + "]", "", "", ""},
		{"array over cap", "[" + ones(1025) + "]", RuleArrayItems, "", "array has 1025 items, more than 1024"},
		{"object at cap", "{" + members(0, 256) + "}", "", "", ""},
		{"object over cap", "{" + members(0, 257) + "}", RuleObjectEntries, "", "object has 257 members, more than 256"},
		{"string before an over-cap array", "[" + long + ",[" + ones(1025) + "]]", RuleStringLength, "/0", ""},
		{"string inside an over-cap array", "[[" + ones(1025) + "," + long + "]]", RuleArrayItems, "/0", "array has 1026 items, more than 1024"},
		{"over-cap inner then over-cap outer", "[[" + ones(1025) + "]," + ones(1029) + "]", RuleArrayItems, "", "array has 1030 items, more than 1024"},
		{"over-cap array then syntax", "[" + ones(1025) + ",]", RuleSyntax, "", ""},
		{"over-cap array then duplicate key", "[[" + ones(1025) + `],{"a":1,"a":2}]`, RuleDuplicateKey, "/1/a", ""},
		{"over-cap object then late duplicate", "{" + members(0, 300) + `,"k5":2}`, RuleDuplicateKey, "/k5", ""},
		{"over-cap object then escaped duplicate", "{" + members(0, 300) + `,"k\u0031":2}`, RuleDuplicateKey, "/k1", ""},
		{"over-cap object then depth", "{" + members(0, 300) + `,"z":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "}", RuleDepth, "", ""},
		{"over-cap array then a number too deep", "[[" + ones(1025) + "]," + strings.Repeat("[", 16) + "1" + strings.Repeat("]", 16) + "]", RuleDepth, "", ""},
		{"over-cap array then a number at the deepest", "[[" + ones(1025) + "]," + strings.Repeat("[", 15) + "1" + strings.Repeat("]", 15) + "]", RuleArrayItems, "/0", ""},
		{"key error then over-cap object", `{"":1,` + members(0, 300) + "}", RuleObjectEntries, "", "object has 301 members, more than 256"},
		{"key_length before an over-cap sibling", `[{"` + strings.Repeat("b", 2049) + `":1},[` + ones(1025) + "]]", RuleKeyLength, "/0/" + strings.Repeat("b", 2049), ""},
		{"NFC duplicate", `{"\u00e9":1,"e\u0301":2}`, RuleDuplicateKeyNFC, "/e\u0301", ""},
		{"NFC duplicate past 16 members", "{" + members(0, 20) + `,"\u00e9":1,"e\u0301":2}`, RuleDuplicateKeyNFC, "/e\u0301", ""},
		{"NFC duplicate then syntax", `{"\u00e9":1,"e\u0301":2,}`, RuleSyntax, "", ""},
	} {
		for _, decode := range []bool{false, true} {
			var err error
			if decode {
				_, err = V1.Decode([]byte(tc.in))
			} else {
				_, err = V1.Transform([]byte(tc.in))
			}
			if tc.rule == "" {
				if err != nil {
					t.Errorf("%s (decode %v): %v", tc.name, decode, err)
				}
				continue
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Rule != tc.rule || (tc.rule != RuleSyntax && tc.rule != RuleDepth && ce.Path != tc.path) || (tc.detail != "" && ce.Detail != tc.detail) {
				t.Errorf("%s (decode %v): err = %v, want %s at %q %s", tc.name, decode, err, tc.rule, tc.path, tc.detail)
			}
		}
	}
}

// TestDuplicateKeysUnderHashCollisions makes every key of a length collide
// (the set keeps 64-bit hashes of the keys of large objects): duplicates
// are still found exactly, and distinct keys are never reported. Not
// parallel: it swaps the package's hash function.
func TestDuplicateKeysUnderHashCollisions(t *testing.T) {
	defer func(h func(string) uint64) { keyHash = h }(keyHash)
	keyHash = func(s string) uint64 { return uint64(len(s) % 3) }
	members := func(keys ...string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + k + `":` + strconv.Itoa(i))
		}
		return b.String() + "}"
	}
	var distinct []string
	for i := range 300 {
		distinct = append(distinct, "k"+strconv.Itoa(i))
	}
	for _, tc := range []struct {
		name string
		keys []string
		dup  string
	}{
		{"distinct", distinct, ""},
		{"repeat of the first", append(distinct[:40:40], "k0"), "k0"},
		{"repeat of a colliding one", append(distinct[:40:40], "k39"), "k39"},
		{"repeat past the cap", append(distinct[:300:300], "k299"), "k299"},
		{"repeat within the first 16", append(distinct[:10:10], "k3"), "k3"},
		{"escaped repeat", append(distinct[:40:40], `k\u0033`), "k3"},
	} {
		_, err := NoFold.Transform([]byte(members(tc.keys...)))
		var ce *Error
		switch {
		case tc.dup == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.dup != "" && (!errors.As(err, &ce) || ce.Rule != RuleDuplicateKey || ce.Path != "/"+tc.dup):
			t.Errorf("%s: err = %v, want duplicate_key at /%s", tc.name, err, tc.dup)
		}
	}
}
