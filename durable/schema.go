package durable

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A flow's input schema is the JSON Schema (draft 2020-12, a small
// subset) of its Go input type, made by reflection the way encoding/json
// reads the type: a struct is an object of its exported fields under
// their json names (embedded structs inlined, "-" skipped) with no other
// property; a field is required unless tagged omitempty or omitzero; a
// map is an object of its values; a slice or array an array of its
// items ([]byte a base64 string); a pointer, slice or map also accepts
// null; integers are "integer" (with their type's range below 64 bits),
// floats "number", strings and text unmarshalers "string" (time.Time a
// date-time), bools "boolean". An interface, a json.Unmarshaler and a
// type met again inside itself accept any value. Workers publish it
// (rayflow_worker_flows); a client validates the input of a flow it has
// not registered against it (validateInput).

// jsonSchema is a node of an input schema.
type jsonSchema struct {
	Type                 schemaType             `json:"type,omitempty"`
	Format               string                 `json:"format,omitempty"`
	Minimum              *json.Number           `json:"minimum,omitempty"`
	Maximum              *json.Number           `json:"maximum,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *jsonSchema            `json:"additionalProperties,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	// Closed marks an object with no properties but its own (it is
	// written as "additionalProperties": false).
	Closed bool `json:"-"`
}

// schemaType is a schema's "type": one JSON type, or several (a nullable
// value is its type and "null"). Empty accepts any value.
type schemaType []string

// MarshalJSON writes one type as a string, several as an array.
func (t schemaType) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// UnmarshalJSON reads a string or an array of strings.
func (t *schemaType) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = schemaType{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*t = many
	return nil
}

// MarshalJSON writes the schema, a closed object with
// "additionalProperties": false.
func (s *jsonSchema) MarshalJSON() ([]byte, error) {
	type plain jsonSchema
	if !s.Closed {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		*plain
		AdditionalProperties bool `json:"additionalProperties"`
	}{(*plain)(s), false})
}

// UnmarshalJSON reads a schema ("additionalProperties": false as Closed).
func (s *jsonSchema) UnmarshalJSON(b []byte) error {
	type plain jsonSchema
	var aux struct {
		*plain
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	aux.plain = (*plain)(s)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	switch a := bytes.TrimSpace(aux.AdditionalProperties); {
	case len(a) == 0, string(a) == "true":
	case string(a) == "false":
		s.Closed = true
	default:
		s.AdditionalProperties = new(jsonSchema)
		return json.Unmarshal(a, s.AdditionalProperties)
	}
	return nil
}

// schemaDialect is the "$schema" of a published input schema.
const schemaDialect = "https://json-schema.org/draft/2020-12/schema"

// InputSchemaOf returns the input schema of Go type t as JSON (with its
// "$schema").
func InputSchemaOf(t reflect.Type) (json.RawMessage, error) {
	s := schemaOf(t, map[reflect.Type]bool{})
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	// "$schema" first, then the schema's own keys.
	head := `{"$schema":"` + schemaDialect + `"`
	if len(b) > 2 {
		head += ","
	}
	return append([]byte(head), b[1:]...), nil
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) *jsonSchema {
	if t == timeType {
		return &jsonSchema{Type: schemaType{"string"}, Format: "date-time"}
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
			return &jsonSchema{}
		}
		if reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return &jsonSchema{Type: schemaType{"string"}}
		}
	}
	if seen[t] {
		return &jsonSchema{} // a recursive type: not described further
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Bool:
		return &jsonSchema{Type: schemaType{"boolean"}}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return &jsonSchema{Type: schemaType{"integer"}, Minimum: number(-(int64(1) << (bits - 1))), Maximum: number(int64(1)<<(bits-1) - 1)}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		max := json.Number(strconv.FormatUint(uint64(1)<<(t.Bits()-1)-1+uint64(1)<<(t.Bits()-1), 10))
		return &jsonSchema{Type: schemaType{"integer"}, Minimum: number(0), Maximum: &max}
	case reflect.Float32, reflect.Float64:
		return &jsonSchema{Type: schemaType{"number"}}
	case reflect.String:
		return &jsonSchema{Type: schemaType{"string"}}
	case reflect.Pointer:
		return nullable(schemaOf(t.Elem(), seen))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			return &jsonSchema{Type: schemaType{"string", "null"}}
		}
		return &jsonSchema{Type: schemaType{"array", "null"}, Items: schemaOf(t.Elem(), seen)}
	case reflect.Array:
		return &jsonSchema{Type: schemaType{"array"}, Items: schemaOf(t.Elem(), seen)}
	case reflect.Map:
		return &jsonSchema{Type: schemaType{"object", "null"}, AdditionalProperties: schemaOf(t.Elem(), seen)}
	case reflect.Struct:
		s := &jsonSchema{Type: schemaType{"object"}, Properties: map[string]*jsonSchema{}, Closed: true}
		structFields(t, seen, s)
		return s
	}
	return &jsonSchema{} // interface: any value
}

// structFields adds t's fields to s as encoding/json names them.
func structFields(t reflect.Type, seen map[reflect.Type]bool, s *jsonSchema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				structFields(et, seen, s) // inlined, as encoding/json does
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs := schemaOf(ft, seen)
		if slices.Contains(strings.Split(opts, ","), "string") {
			fs = &jsonSchema{Type: schemaType{"string"}}
		}
		if _, dup := s.Properties[name]; dup {
			continue // the outer field wins
		}
		s.Properties[name] = fs
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			s.Required = append(s.Required, name)
		}
	}
}

func nullable(s *jsonSchema) *jsonSchema {
	if len(s.Type) == 0 || slices.Contains(s.Type, "null") {
		return s
	}
	c := *s
	c.Type = append(slices.Clip(s.Type), "null")
	return &c
}

func number(n int64) *json.Number {
	v := json.Number(strconv.FormatInt(n, 10))
	return &v
}

// InputFieldError is an input refused by a flow's published schema: the
// field at fault (a JSON path such as items[2].name; "" for the input as
// a whole) and why. It matches ErrInvalidInput (errors.Is).
type InputFieldError struct {
	Flow   string
	Field  string
	Reason string
}

func (e *InputFieldError) Error() string {
	field := e.Field
	if field == "" {
		field = "(the input)"
	}
	return fmt.Sprintf("%v (the published schema of %s): field %s: %s", ErrInvalidInput, e.Flow, field, e.Reason)
}

// Unwrap makes the error match ErrInvalidInput.
func (e *InputFieldError) Unwrap() error { return ErrInvalidInput }

// validateInput checks raw (valid JSON) against schema (a published input
// schema) for flow.
func validateInput(flow string, schema []byte, raw []byte) error {
	var s jsonSchema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("durable: the published input schema of %s: %w", flow, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &InputFieldError{Flow: flow, Reason: "not valid JSON"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &InputFieldError{Flow: flow, Reason: "trailing data after the JSON value"}
	}
	if field, reason := check(&s, v, ""); reason != "" {
		return &InputFieldError{Flow: flow, Field: field, Reason: reason}
	}
	return nil
}

// jsonType is the JSON type of a value decoded with UseNumber.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if isInteger(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// isInteger reports whether n is written as an integer (encoding/json
// decodes 1.0 or 1e2 into a float, not into an integer type).
func isInteger(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

// check returns the path and reason of v's first violation of s ("" when
// none).
func check(s *jsonSchema, v any, path string) (string, string) {
	if len(s.Type) > 0 {
		got := jsonType(v)
		ok := slices.Contains(s.Type, got) || got == "integer" && slices.Contains(s.Type, "number")
		if !ok {
			return path, fmt.Sprintf("want %s, got %s", strings.Join(s.Type, " or "), article(got, v))
		}
	}
	switch v := v.(type) {
	case json.Number:
		r, _ := new(big.Rat).SetString(string(v))
		if s.Minimum != nil {
			if m, ok := new(big.Rat).SetString(string(*s.Minimum)); ok && r.Cmp(m) < 0 {
				return path, fmt.Sprintf("%s is below the minimum %s", v, *s.Minimum)
			}
		}
		if s.Maximum != nil {
			if m, ok := new(big.Rat).SetString(string(*s.Maximum)); ok && r.Cmp(m) > 0 {
				return path, fmt.Sprintf("%s is above the maximum %s", v, *s.Maximum)
			}
		}
	case string:
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return path, fmt.Sprintf("%q is not an RFC 3339 date-time", truncate(v, 64))
			}
		}
	case []any:
		if s.Items != nil {
			for i, item := range v {
				if p, r := check(s.Items, item, path+"["+strconv.Itoa(i)+"]"); r != "" {
					return p, r
				}
			}
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := v[name]; !ok {
				return join(path, name), "required, missing"
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ps, known := s.Properties[k]
			switch {
			case known:
			case s.AdditionalProperties != nil:
				ps = s.AdditionalProperties
			case s.Closed:
				names := make([]string, 0, len(s.Properties))
				for n := range s.Properties {
					names = append(names, n)
				}
				slices.Sort(names)
				return join(path, k), fmt.Sprintf("unknown field (known: %s)", strings.Join(names, ", "))
			default:
				continue
			}
			if p, r := check(ps, v[k], join(path, k)); r != "" {
				return p, r
			}
		}
	}
	return "", ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func article(typ string, v any) string {
	switch typ {
	case "null":
		return "null"
	case "integer", "number":
		return fmt.Sprintf("the number %v", v)
	case "array", "object":
		return "an " + typ
	case "string":
		return fmt.Sprintf("the string %q", truncate(v.(string), 64))
	}
	return "a " + typ
}
