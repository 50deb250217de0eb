package sdk

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// ValueError is a value the codec refused at run time (a non-finite float,
// or a func or channel held in an interface), naming its node. Local runs
// pass every value through the codec, so they fail as a Ray run would.
type ValueError = flowgraph.ValueError

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// encodable checks that values of T survive the value codec (JSON): every
// value that crosses a step boundary is encoded on Ray, so a type that
// cannot be decoded again, or whose parts JSON would drop, is refused at
// definition time with a *DefinitionError whose message is the type path
// ("Out.Items[].price: unexported field"). root names the value ("In",
// "Out", "Bound", "Acc"). Non-finite floats are allowed by the type and
// refused at run time (ValueError).
func encodable[T any](root string) error {
	if problem := typeProblem(reflect.TypeFor[T](), root, map[reflect.Type]bool{}); problem != "" {
		return &DefinitionError{Code: CodeUnencodableValue, Msg: problem}
	}
	return nil
}

// codecPair reports whether t brings its own encoding (both directions);
// half is true when it has only one.
func codecPair(t reflect.Type, enc, dec reflect.Type) (ok, half bool) {
	marshals := t.Implements(enc) || reflect.PointerTo(t).Implements(enc)
	unmarshals := reflect.PointerTo(t).Implements(dec)
	return marshals && unmarshals, marshals != unmarshals
}

// typeProblem returns the first part of t that the codec cannot carry, as
// "path: reason", or "".
func typeProblem(t reflect.Type, path string, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer {
		if ok, half := codecPair(t, jsonMarshaler, jsonUnmarshaler); ok {
			return ""
		} else if half {
			return fmt.Sprintf("%s: %s implements only one of json.Marshaler and json.Unmarshaler", path, t)
		}
		if ok, half := codecPair(t, textMarshaler, textUnmarshaler); ok {
			return ""
		} else if half && t.Kind() == reflect.Struct {
			return fmt.Sprintf("%s: %s implements only one of encoding.TextMarshaler and encoding.TextUnmarshaler", path, t)
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return ""
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprintf("%s: complex number (%s)", path, t)
	case reflect.Chan:
		return fmt.Sprintf("%s: channel (%s)", path, t)
	case reflect.Func:
		return fmt.Sprintf("%s: function (%s)", path, t)
	case reflect.UnsafePointer:
		return fmt.Sprintf("%s: unsafe pointer", path)
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return fmt.Sprintf("%s: interface %s cannot be decoded (only any, which decodes to plain JSON values)", path, t)
		}
		return ""
	case reflect.Pointer:
		return typeProblem(t.Elem(), path, seen)
	case reflect.Slice, reflect.Array:
		return typeProblem(t.Elem(), path+"[]", seen)
	case reflect.Map:
		k := t.Key()
		switch k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if ok, _ := codecPair(k, textMarshaler, textUnmarshaler); !ok {
				return fmt.Sprintf("%s: map key type %s (JSON keys are strings, integers or encoding.TextMarshaler)", path, k)
			}
		}
		return typeProblem(t.Elem(), path+"[]", seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("json") == "-" {
				continue // excluded by its author
			}
			fpath := path + "." + f.Name
			if !f.IsExported() {
				if f.Anonymous && f.Type.Kind() == reflect.Struct {
					// encoding/json promotes the exported fields of an
					// embedded unexported struct.
					if p := typeProblem(f.Type, fpath, seen); p != "" {
						return p
					}
					continue
				}
				return fmt.Sprintf("%s: unexported field (the codec would drop it)", fpath)
			}
			if p := typeProblem(f.Type, fpath, seen); p != "" {
				return p
			}
		}
		return ""
	}
	return fmt.Sprintf("%s: unsupported type %s", path, t)
}

// roundTrip passes v, a T, through the value codec into a fresh T.
func roundTrip[T any](v any) (any, error) {
	t, err := as[T](v)
	if err != nil {
		return nil, err
	}
	b, err := DefaultCodec.Marshal(t)
	if err != nil {
		return nil, err
	}
	var out T
	if err := DefaultCodec.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// roundTripOf is T's codec round trip, chosen once per type. While the
// codec in use is the default JSON one, a value of a type with a
// copyPlan (see valuecopy.go) is copied as the codec would give it back
// (a flat value the codec keeps as it is comes back itself, without a
// copy), and anything the plan cannot vouch for goes through roundTrip,
// so that what the codec changes or refuses is changed or refused
// exactly as before. A type with its own JSON or text methods, and every
// value while DefaultCodec is another codec, always goes through the
// codec.
func roundTripOf[T any]() func(any) (any, error) {
	p := copyPlanOf(reflect.TypeFor[T]())
	if p == nil {
		return roundTrip[T]
	}
	return func(v any) (any, error) {
		if _, ok := DefaultCodec.(jsonCodec); !ok {
			return roundTrip[T](v)
		}
		if _, ok := v.(T); !ok {
			return roundTrip[T](v)
		}
		src := reflect.ValueOf(v)
		if p.flat && p.keeps(src) {
			return v, nil
		}
		var out T
		if p.copyInto(reflect.ValueOf(&out).Elem(), src, 0) {
			return out, nil
		}
		return roundTrip[T](v)
	}
}

var codecMethods = []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler}

// hasCodecMethods reports whether t or *t encodes or decodes itself.
func hasCodecMethods(t reflect.Type) bool {
	for _, m := range codecMethods {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

// stepValues builds a step's codec round trips and records, as the node's
// definition error, the first of its types the codec cannot carry.
func stepValues[In, Out any](n *flowgraph.Node) {
	n.Step.Values = &flowgraph.StepValues{Input: roundTripOf[In](), Output: roundTripOf[Out]()}
	if err := encodable[In]("In"); err != nil {
		n.Err = err
	} else if err := encodable[Out]("Out"); err != nil {
		n.Err = err
	}
}

// boundInvoke is Invoke of a Bind step with the bound value decoded afresh
// for every call, as each Ray leaf call decodes it.
func boundInvoke[B, In, Out any](fn func(context.Context, B, In) (Out, error), bound B) func(context.Context, any) (any, error) {
	encoded, encErr := DefaultCodec.Marshal(bound)
	return func(ctx context.Context, in any) (any, error) {
		if encErr != nil {
			return nil, &flowgraph.ValueError{Value: "bound value", Type: typeName[B](), Err: encErr}
		}
		var b B
		if err := DefaultCodec.Unmarshal(encoded, &b); err != nil {
			return nil, &flowgraph.ValueError{Value: "bound value", Type: typeName[B](), Err: err}
		}
		v, err := as[In](in)
		if err != nil {
			return nil, err
		}
		return fn(ctx, b, v)
	}
}
