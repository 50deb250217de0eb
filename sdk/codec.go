package sdk

import (
	"encoding/json"
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

// DefaultCodec is JSON (encoding/json), version 1.
var DefaultCodec Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Version() int                       { return 1 }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

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
