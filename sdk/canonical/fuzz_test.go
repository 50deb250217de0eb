package canonical

import (
	"encoding/json"
	"errors"
	"testing"
)

func FuzzTransform(f *testing.F) {
	for _, tc := range textCases() {
		if len(tc.in) < 512 {
			f.Add([]byte(tc.in))
		}
	}
	f.Add([]byte(`{"a":[1,2.5,"x\u00e9",{"b":null}],"c":true}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range []Codec{V1, V1Uncapped, NoFold} {
			out, err := c.Transform(in)
			if err != nil {
				var ce, de *Error
				if !errors.As(err, &ce) {
					t.Fatalf("%s: untyped error %v", c, err)
				}
				// Transform streams its output, Decode builds a tree: the
				// same rejection either way.
				if _, derr := c.Decode(in); !errors.As(derr, &de) || *de != *ce {
					t.Fatalf("%s: Transform rejects with %v, Decode with %v", c, err, derr)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("%s: output is not JSON: %q", c, out)
			}
			again, err := c.Transform(out)
			if errors.Is(err, RuleStringLength) && c == V1 {
				continue // NFC expanded a string past the cap: the documented exception
			}
			if err != nil || string(again) != string(out) {
				t.Fatalf("%s: not idempotent: %q -> %q (%v)", c, out, again, err)
			}
			v, err := c.Decode(in)
			if err != nil {
				t.Fatalf("%s: Decode rejects what Transform accepts: %v", c, err)
			}
			m, err := c.Marshal(v)
			if err != nil || string(m) != string(out) {
				t.Fatalf("%s: Marshal(Decode(x)) = %q, %v; want %q", c, m, err, out)
			}
		}
	})
}

func FuzzDecodeAgreesWithEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,3]}`))
	f.Add([]byte(`[1e400]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, err := NoFold.Transform(in)
		var ce *Error
		if err != nil && errors.As(err, &ce) && ce.Rule == RuleSyntax && json.Valid(in) {
			t.Fatalf("encoding/json accepts %q, we report a syntax error: %v", in, err)
		}
		if err == nil && !json.Valid(in) {
			t.Fatalf("we accept %q, encoding/json does not", in)
		}
	})
}
