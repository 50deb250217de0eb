package rtsrc

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		code     string // "" = ok
		path     string
	}{
		{"object", `{"a":[1,-0.5e3,"x",true,false,null],"b":{}}`, "", ""},
		{"whitespace", " {\n\t\"a\" : [ ] } ", "", ""},
		{"escapes", `"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"`, "", ""},
		{"dup", `{"a":{"b":1,"b":2}}`, CodeDuplicateKey, "/a/b"},
		{"dup escaped", `{"a":1,"\u0061":2}`, CodeDuplicateKey, "/a"},
		{"nan", `{"a":[NaN]}`, CodeNonFinite, "/a/0"},
		{"inf", `{"a":Infinity}`, CodeNonFinite, "/a"},
		{"neg inf", `{"a":-Infinity}`, CodeNonFinite, "/a"},
		{"lone high", `{"a":"\ud800x"}`, CodeLoneSurrogate, "/a"},
		{"lone low", `{"a":"\udc00"}`, CodeLoneSurrogate, "/a"},
		{"reversed pair", `{"a":"\ude00\ud83d"}`, CodeLoneSurrogate, "/a"},
		{"invalid utf8", "{\"a\":\"\xc3\"}", CodeInvalidUTF8, ""},
		{"raw control", "\"a\x01\"", CodeSyntax, ""},
		{"leading zero", `01`, CodeSyntax, ""},
		{"bare dot", `1.`, CodeSyntax, ""},
		{"plus", `+1`, CodeSyntax, ""},
		{"trailing comma", `[1,]`, CodeSyntax, "/1"},
		{"trailing data", `{} x`, CodeSyntax, ""},
		{"empty", ``, CodeSyntax, ""},
		{"deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), CodeDepth, "/" + strings.TrimSuffix(strings.Repeat("0/", MaxDepth), "/")},
		{"max depth", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), "", ""},
		{"overflow", `{"a":[1e309]}`, CodeNonFinite, "/a/0"},
		{"long overflow", "[" + strings.Repeat("9", 400) + "]", CodeNonFinite, "/0"},
		{"underflow ok", `1e-400`, "", ""},
		{"pointer escapes", `{"a/b~c":{"x":1,"x":1}}`, CodeDuplicateKey, "/a~1b~0c/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e Errors
			_, ok := Parse([]byte(tt.in), &e)
			if tt.code == "" {
				if !ok {
					t.Fatalf("unexpected error: %v", e.Err())
				}
				return
			}
			if ok {
				t.Fatalf("accepted; want %s", tt.code)
			}
			ve := e.Err().(*ValidationError)
			if ve.Errors[0].Code != tt.code || ve.Errors[0].Path != tt.path {
				t.Fatalf("got %v; want %s at %q", ve, tt.code, tt.path)
			}
		})
	}
}

func TestStringValue(t *testing.T) {
	t.Parallel()
	var e Errors
	v, ok := Parse([]byte(`"a\u00e9\ud83d\ude00\n"`), &e)
	if !ok || v.Str != "aé😀\n" {
		t.Fatalf("got %q, %v", v.Str, e.Err())
	}
}

func TestIntAndFloat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		code string
	}{
		{"9223372036854775807", ""},
		{"9223372036854775808", CodeMax},
		{"-9223372036854775809", CodeMin},
		{"1.0", CodeType},
		{"1e2", CodeType},
		{`"1"`, CodeType},
	} {
		var e Errors
		v, _ := Parse([]byte(tt.in), &e)
		Int(v, Root, &e)
		if got := firstCode(&e); got != tt.code {
			t.Errorf("Int(%s): code %q, want %q", tt.in, got, tt.code)
		}
	}
	for _, tt := range []struct {
		in   string
		code string
	}{
		{"1.7976931348623157e308", ""},
		{"1", ""},
		{"true", CodeType},
	} {
		var e Errors
		v, _ := Parse([]byte(tt.in), &e)
		Float(v, Root, &e)
		if got := firstCode(&e); got != tt.code {
			t.Errorf("Float(%s): code %q, want %q", tt.in, got, tt.code)
		}
	}
}

func firstCode(e *Errors) string {
	if err := e.Err(); err != nil {
		return err.(*ValidationError).Errors[0].Code
	}
	return ""
}

func TestErrorCap(t *testing.T) {
	t.Parallel()
	var e Errors
	for i := 0; i < 200; i++ {
		e.Add(Root.Index(i), CodeType, "x")
	}
	ve := e.Err().(*ValidationError)
	if len(ve.Errors) != MaxErrors || ve.Errors[MaxErrors-1].Code != CodeTooManyErrors {
		t.Fatalf("got %d errors, last %v", len(ve.Errors), ve.Errors[len(ve.Errors)-1])
	}
}
