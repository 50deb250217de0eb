package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rayflow/rayflow/gen/registry"
	"github.com/rayflow/rayflow/gen/rt"
	"github.com/rayflow/rayflow/schema/internal/cueref"
)

var update = flag.Bool("update", false, "rewrite the generated fixtures in testdata/")

var (
	refOnce sync.Once
	refVal  *cueref.Ref
	refErr  error
)

// reference returns the shared CUE evaluator (building it is the slow part).
func reference(t testing.TB) *cueref.Ref {
	t.Helper()
	refOnce.Do(func() { refVal, refErr = cueref.New(".") })
	if refErr != nil {
		t.Fatalf("load CUE schema: %v", refErr)
	}
	return refVal
}

// goVerdict decodes with the generated code.
func goVerdict(t testing.TB, def string, data []byte) error {
	t.Helper()
	s, ok := registry.Lookup(def)
	if !ok {
		t.Fatalf("no generated decoder for #%s", def)
	}
	_, err := s.Decode(data)
	if err != nil {
		var ve *rt.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("#%s: decoder returned %T, want *rt.ValidationError", def, err)
		}
	}
	return err
}

// edit is one change to a base fixture: set Ptr to Val (Go value, JSON
// marshaled; json.RawMessage is used as is), or delete it.
type edit struct {
	Ptr string
	Val any
	Del bool
}

func set(ptr string, v any) edit { return edit{Ptr: ptr, Val: v} }
func del(ptr string) edit        { return edit{Ptr: ptr, Del: true} }

// fixture is one generated fixture file.
type fixture struct {
	Def   string
	Name  string
	Base  string // file name in testdata/valid/<Def>/, without .json
	Edits []edit
	Bytes func([]byte) []byte // optional raw transform after edits
	Valid bool
	Want  []string // "CODE PATH" lines (PATH is a JSON pointer, empty for the root) that the generated errors must contain
}

func (f fixture) dir() string {
	if f.Valid {
		return filepath.Join("testdata", "valid", f.Def)
	}
	return filepath.Join("testdata", "invalid", f.Def)
}

func loadBase(t testing.TB, def, base string) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "valid", def, base+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return decodeAny(t, b)
}

func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// encode writes compact JSON with sorted keys and no HTML escaping.
func encode(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func toAny(t testing.TB, v any) any {
	if r, ok := v.(json.RawMessage); ok {
		return decodeAny(t, r)
	}
	return decodeAny(t, encode(t, v))
}

func unescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// apply sets or deletes the value at a JSON pointer ("/a/0/b"). Setting
// index len(list) appends.
func apply(t testing.TB, root any, e edit) any {
	t.Helper()
	if e.Ptr == "" {
		return toAny(t, e.Val)
	}
	parts := strings.Split(e.Ptr[1:], "/")
	var walk func(cur any, i int) any
	walk = func(cur any, i int) any {
		key := unescape(parts[i])
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if e.Del {
					delete(c, key)
				} else {
					c[key] = toAny(t, e.Val)
				}
				return c
			}
			c[key] = walk(c[key], i+1)
			return c
		case []any:
			n, err := strconv.Atoi(key)
			if err != nil || n > len(c) {
				t.Fatalf("bad index %s in %s", key, e.Ptr)
			}
			if last {
				if e.Del {
					return append(c[:n], c[n+1:]...)
				}
				if n == len(c) {
					return append(c, toAny(t, e.Val))
				}
				c[n] = toAny(t, e.Val)
				return c
			}
			c[n] = walk(c[n], i+1)
			return c
		}
		t.Fatalf("cannot walk %s at %s", e.Ptr, key)
		return nil
	}
	return walk(root, 0)
}

func (f fixture) build(t testing.TB) []byte {
	v := loadBase(t, f.Def, f.Base)
	for _, e := range f.Edits {
		v = apply(t, v, e)
	}
	b := encode(t, v)
	if f.Bytes != nil {
		b = f.Bytes(b)
	}
	return b
}

// padTo pads a JSON object with spaces before its closing brace up to n bytes.
func padTo(n int) func([]byte) []byte {
	return func(b []byte) []byte {
		if len(b) > n {
			panic(fmt.Sprintf("fixture already %d bytes, more than %d", len(b), n))
		}
		return append(append(b[:len(b)-1:len(b)-1], bytes.Repeat([]byte(" "), n-len(b))...), '}')
	}
}

// replace substitutes the first occurrence of old with new in the bytes.
func replace(old, new string) func([]byte) []byte {
	return func(b []byte) []byte {
		if !bytes.Contains(b, []byte(old)) {
			panic("fixture does not contain " + old)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

func list(n int, f func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// fixtureFiles lists every fixture on disk: def -> files, with the verdict
// the directory promises.
type fixtureFile struct {
	Def   string
	Path  string
	Valid bool
}

func fixtureFiles(t testing.TB) []fixtureFile {
	t.Helper()
	var out []fixtureFile
	for _, kind := range []string{"valid", "invalid"} {
		defs, err := os.ReadDir(filepath.Join("testdata", kind))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range defs {
			files, _ := filepath.Glob(filepath.Join("testdata", kind, d.Name(), "*.json"))
			sort.Strings(files)
			for _, f := range files {
				out = append(out, fixtureFile{Def: d.Name(), Path: f, Valid: kind == "valid"})
			}
		}
	}
	return out
}
