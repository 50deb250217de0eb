package rtsrc

import (
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The helpers below are called by generated code. They report into e and
// return ok=false when the value cannot be used.

// TooLarge reports a record over its byte cap. Callers check the cap before
// parsing anything.
func TooLarge(e *Errors, n, limit int) {
	e.Add(Root, CodeTooLarge, "record is %d bytes, more than the %d-byte cap", n, limit)
}

func typeErr(v *Value, p *Path, e *Errors, want string) {
	e.Add(p, CodeType, "expected %s, got %s", want, v.Kind)
}

// Object checks that v is an object.
func Object(v *Value, p *Path, e *Errors) bool {
	if v.Kind != KindObject {
		typeErr(v, p, e, "object")
		return false
	}
	return true
}

// Array checks that v is an array.
func Array(v *Value, p *Path, e *Errors) bool {
	if v.Kind != KindArray {
		typeErr(v, p, e, "array")
		return false
	}
	return true
}

// String decodes a string.
func String(v *Value, p *Path, e *Errors) (string, bool) {
	if v.Kind != KindString {
		typeErr(v, p, e, "string")
		return "", false
	}
	return v.Str, true
}

// Bool decodes a boolean.
func Bool(v *Value, p *Path, e *Errors) (bool, bool) {
	if v.Kind != KindBool {
		typeErr(v, p, e, "boolean")
		return false, false
	}
	return v.Bool, true
}

// IsIntLiteral reports whether a number literal has no fraction or exponent.
func IsIntLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

// Int decodes an integer. A literal with a fraction or exponent is not an
// integer (CUE reads 1.0 as a float). Integers outside int64 are reported
// as MIN/MAX violations.
func Int(v *Value, p *Path, e *Errors) (int64, bool) {
	if v.Kind != KindNumber || !IsIntLiteral(v.Str) {
		if v.Kind == KindNumber {
			e.Add(p, CodeType, "expected integer, got %s", v.Str)
			return 0, false
		}
		typeErr(v, p, e, "integer")
		return 0, false
	}
	n, err := strconv.ParseInt(v.Str, 10, 64)
	if err != nil {
		if v.Str[0] == '-' {
			e.Add(p, CodeMin, "%s is below the 64-bit integer range", v.Str)
		} else {
			e.Add(p, CodeMax, "%s is above the 64-bit integer range", v.Str)
		}
		return 0, false
	}
	return n, true
}

// Float decodes any JSON number as float64. Numbers beyond float64 are
// reported as MIN/MAX violations (every number in the strict profile is
// bounded by finite limits).
func Float(v *Value, p *Path, e *Errors) (float64, bool) {
	if v.Kind != KindNumber {
		typeErr(v, p, e, "number")
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	if err != nil || math.IsInf(f, 0) {
		if f < 0 {
			e.Add(p, CodeMin, "%s is below the float64 range", v.Str)
		} else {
			e.Add(p, CodeMax, "%s is above the float64 range", v.Str)
		}
		return 0, false
	}
	return f, true
}

// RawJSON keeps an unconstrained value as its input bytes.
func RawJSON(v *Value) json.RawMessage {
	return append(json.RawMessage(nil), v.Raw...)
}

// Unknown reports a field that the closed definition does not declare.
func Unknown(p *Path, key string, e *Errors) {
	e.Add(p.Key(key), CodeUnknownField, "field is not allowed")
}

// Missing reports an absent required field.
func Missing(p *Path, key string, e *Errors) {
	e.Add(p.Key(key), CodeMissingField, "required field is missing")
}

// NotNull reports null where the field is not nullable.
func NotNull(p *Path, e *Errors) {
	e.Add(p, CodeType, "null is not allowed here")
}

// MaxRunes checks a length cap in code points.
func MaxRunes(s string, n int, p *Path, e *Errors) {
	if len(s) > n && utf8.RuneCountInString(s) > n {
		e.Add(p, CodeMaxRunes, "longer than %d code points", n)
	}
}

// MinRunes checks a minimum length in code points.
func MinRunes(s string, n int, p *Path, e *Errors) {
	if utf8.RuneCountInString(s) < n {
		e.Add(p, CodeMinRunes, "shorter than %d code points", n)
	}
}

// MaxBytes checks a length cap in UTF-8 bytes.
func MaxBytes(s string, n int, p *Path, e *Errors) {
	if len(s) > n {
		e.Add(p, CodeMaxBytes, "longer than %d UTF-8 bytes", n)
	}
}

// MaxRawBytes checks the size of a member's value as it appears in the
// input (a canonical record's member is its canonical encoding).
func MaxRawBytes(v *Value, n int, p *Path, e *Errors) {
	if len(v.Raw) > n {
		e.Add(p, CodeMaxBytes, "encoded in more than %d bytes", n)
	}
}

// Pattern checks a regular expression (RE2, as in CUE).
func Pattern(re *regexp.Regexp, s string, p *Path, e *Errors) {
	if !re.MatchString(s) {
		e.Add(p, CodePattern, "does not match %s", re.String())
	}
}

// NotPattern checks a forbidden regular expression.
func NotPattern(re *regexp.Regexp, s string, p *Path, e *Errors) {
	if re.MatchString(s) {
		e.Add(p, CodePattern, "must not match %s", re.String())
	}
}

// MinItems checks a minimum list length.
func MinItems(n, min int, p *Path, e *Errors) {
	if n < min {
		e.Add(p, CodeMinItems, "has %d items, fewer than %d", n, min)
	}
}

// MaxItems checks a list length cap.
func MaxItems(n, max int, p *Path, e *Errors) {
	if n > max {
		e.Add(p, CodeMaxItems, "has %d items, more than %d", n, max)
	}
}

// MinFields checks a minimum map size.
func MinFields(n, min int, p *Path, e *Errors) {
	if n < min {
		e.Add(p, CodeMinFields, "has %d entries, fewer than %d", n, min)
	}
}

// MaxFields checks a map size cap.
func MaxFields(n, max int, p *Path, e *Errors) {
	if n > max {
		e.Add(p, CodeMaxFields, "has %d entries, more than %d", n, max)
	}
}

// Unique checks that a list of comparable scalars has no repeated item.
func Unique[T comparable](xs []T, p *Path, e *Errors) {
	if len(xs) < 2 {
		return
	}
	seen := make(map[T]int, len(xs))
	for i, x := range xs {
		if j, dup := seen[x]; dup {
			e.Add(p.Index(i), CodeUniqueItems, "repeats item %d", j)
			continue
		}
		seen[x] = i
	}
}

// Enum reports a string outside an enumeration.
func Enum(s string, p *Path, e *Errors) {
	e.Add(p, CodeEnum, "%s is not an allowed value", strconv.Quote(s))
}

// SortedKeys returns the keys of m in code-point order, for deterministic
// error order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Null is the Go type of a field whose only allowed value is JSON null
// (CUE `field: null`). Its zero value is the only value, so constructed
// records are always right; it encodes as null with encoding/json and
// sdk/canonical.
type Null struct{}

// MarshalJSON encodes Null as null.
func (Null) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// NullValue checks that v is null.
func NullValue(v *Value, p *Path, e *Errors) {
	if v.Kind != KindNull {
		typeErr(v, p, e, "null")
	}
}
