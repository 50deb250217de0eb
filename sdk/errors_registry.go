package sdk

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// errorTypes are the error types that cross process boundaries with their
// value: a leaf process encodes them with the codec, the coordinator
// decodes them, so errors.As works on a Ray run as it does locally.
var errorTypes = struct {
	sync.RWMutex
	m map[string]reflect.Type
}{m: map[string]reflect.Type{}}

// RegisterErrorType makes leaf errors of type E (usually a pointer to a
// struct with exported fields) come back from a Ray leaf as an E, so that
// errors.As(err, &target) works on the coordinator. Call it at package
// initialization, like RegisterFlow. Unregistered error types come back
// with their message and Go type name only.
func RegisterErrorType[E error]() {
	t := reflect.TypeFor[E]()
	errorTypes.Lock()
	defer errorTypes.Unlock()
	errorTypes.m[t.String()] = t
}

// EncodeError finds the first error in err's chain (following Unwrap)
// whose type is registered and encodes it with codec. It returns the
// type's name and value, or ok false.
func EncodeError(codec Codec, err error) (typeName string, value []byte, ok bool) {
	errorTypes.RLock()
	defer errorTypes.RUnlock()
	for e := err; e != nil; e = errors.Unwrap(e) {
		name := reflect.TypeOf(e).String()
		if _, found := errorTypes.m[name]; !found {
			continue
		}
		b, mErr := codec.Marshal(e)
		if mErr != nil {
			return "", nil, false
		}
		return name, b, true
	}
	return "", nil, false
}

// DecodeError decodes a value EncodeError produced into a fresh error of
// the registered type called typeName.
func DecodeError(codec Codec, typeName string, value []byte) (error, bool) {
	errorTypes.RLock()
	t, found := errorTypes.m[typeName]
	errorTypes.RUnlock()
	if !found {
		return nil, false
	}
	p := reflect.New(t) // *E
	if t.Kind() == reflect.Pointer {
		p.Elem().Set(reflect.New(t.Elem()))
		if err := codec.Unmarshal(value, p.Elem().Interface()); err != nil {
			return nil, false
		}
	} else if err := codec.Unmarshal(value, p.Interface()); err != nil {
		return nil, false
	}
	e, ok := p.Elem().Interface().(error)
	return e, ok
}

// EncodedResult is a workflow result an engine still holds in the codec's
// bytes (a Ray run's final value): DecodeResult turns it into the flow's
// output type.
type EncodedResult struct {
	Codec Codec
	Bytes []byte
}

// DecodeResult converts an engine's result to Out, decoding an
// *EncodedResult with its codec.
func DecodeResult[Out any](v any) (Out, error) {
	var out Out
	if r, ok := v.(*EncodedResult); ok {
		if err := r.Codec.Unmarshal(r.Bytes, &out); err != nil {
			return out, fmt.Errorf("rayflow: decoding the result (%T): %w", out, err)
		}
		return out, nil
	}
	return as[Out](v)
}
