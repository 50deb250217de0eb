package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Codec encodes the values that cross process boundaries (step inputs and
// results on Ray, the fold's initial accumulator everywhere). Its name and
// version are part of the plan fingerprint; byte limits count encoded
// bytes.
type Codec interface {
	Name() string
	Version() int
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// DefaultCodec is JSON (encoding/json), version 1. It refuses what JSON
// would drop or cannot carry instead of dropping it: non-finite floats,
// and, behind an interface (any), values whose dynamic type has a func,
// channel, complex number or unexported field. (Static types are checked
// once, when a flow is built; see CodeUnencodableValue.)
var DefaultCodec Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }
func (jsonCodec) Version() int { return 1 }
func (jsonCodec) Marshal(v any) ([]byte, error) {
	if rv := reflect.ValueOf(v); rv.IsValid() && containsInterface(rv.Type()) {
		if p := valueProblem(rv, "value", 0); p != "" {
			return nil, fmt.Errorf("rayflow: json codec: %s", p)
		}
	}
	return json.Marshal(v)
}
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

var hasInterface sync.Map // reflect.Type → bool

// containsInterface reports whether values of t can hold an interface
// value (whose dynamic type is unknown until run time).
func containsInterface(t reflect.Type) bool {
	if v, ok := hasInterface.Load(t); ok {
		return v.(bool)
	}
	found := interfaceIn(t, map[reflect.Type]bool{})
	hasInterface.Store(t, found)
	return found
}

func interfaceIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if ok, _ := codecPair(t, jsonMarshaler, jsonUnmarshaler); ok && t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return interfaceIn(t.Elem(), seen)
	case reflect.Map:
		return interfaceIn(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && interfaceIn(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// valueProblem checks the dynamic types behind v's interfaces.
func valueProblem(v reflect.Value, path string, depth int) string {
	if depth > 1000 { // a cycle: encoding/json reports it
		return ""
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return ""
		}
		e := v.Elem()
		if p := typeProblem(e.Type(), path, map[reflect.Type]bool{}); p != "" {
			return p
		}
		if containsInterface(e.Type()) {
			return valueProblem(e, path, depth+1)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return valueProblem(v.Elem(), path, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if !containsInterface(v.Type().Elem()) {
			return ""
		}
		for i := range v.Len() {
			if p := valueProblem(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); p != "" {
				return p
			}
		}
	case reflect.Map:
		if !containsInterface(v.Type().Elem()) {
			return ""
		}
		it := v.MapRange()
		for it.Next() {
			if p := valueProblem(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()), depth+1); p != "" {
				return p
			}
		}
	case reflect.Struct:
		if ok, _ := codecPair(v.Type(), jsonMarshaler, jsonUnmarshaler); ok {
			return ""
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" || !containsInterface(f.Type) {
				continue
			}
			if p := valueProblem(v.Field(i), path+"."+f.Name, depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}

// MarshalJSON encodes the tuple as a two-element array.
func (t Tuple2[A, B]) MarshalJSON() ([]byte, error) { return json.Marshal([]any{t.V0, t.V1}) }

// UnmarshalJSON decodes a two-element array.
func (t *Tuple2[A, B]) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, &[]any{&t.V0, &t.V1})
}

// MarshalJSON encodes the tuple as a three-element array.
func (t Tuple3[A, B, C]) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{t.V0, t.V1, t.V2})
}

// UnmarshalJSON decodes a three-element array.
func (t *Tuple3[A, B, C]) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, &[]any{&t.V0, &t.V1, &t.V2})
}
