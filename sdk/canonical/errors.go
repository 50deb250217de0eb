package canonical

import (
	"errors"
	"strconv"
	"strings"
)

// ErrRejected matches every *Error: errors.Is(err, ErrRejected).
var ErrRejected = errors.New("canonical: value rejected")

// Rule names the contract rule a rejected value broke. The names are part of
// the conformance protocol (conformance/README.md) and never change.
type Rule string

// Rules shared by every codec.
const (
	RuleSyntax           Rule = "syntax"            // not one JSON value
	RuleInvalidUTF8      Rule = "invalid_utf8"      // input or Go string is not well-formed UTF-8
	RuleLoneSurrogate    Rule = "lone_surrogate"    // \uD800-\uDFFF escape without its pair
	RuleControlCharacter Rule = "control_character" // raw U+0000-U+001F inside a string
	RuleDuplicateKey     Rule = "duplicate_key"     // the same key twice in one object
	RuleNonFinite        Rule = "non_finite"        // NaN, ±Infinity, or a literal that overflows a double
	RuleIntegerDigits    Rule = "integer_digits"    // integer literal longer than MaxIntegerDigits
	RuleDepth            Rule = "depth"             // value nested deeper than the codec allows
	RuleUnsupportedType  Rule = "unsupported_type"  // Go value with no JSON meaning (func, chan, []byte…)
	RuleNonStringKey     Rule = "non_string_key"    // Go map whose key is not a string
)

// Rules of canonical JSON v1 normalization (V1, and V1Uncapped without the caps).
const (
	RuleObjectEntries       Rule = "object_entries"        // more than MaxObjectEntries members
	RuleArrayItems          Rule = "array_items"           // more than MaxArrayItems items
	RuleStringLength        Rule = "string_length"         // string value over MaxStringCodePoints before NFC
	RuleKeyEmpty            Rule = "key_empty"             // "" as a key
	RuleKeyLength           Rule = "key_length"            // key over MaxStringCodePoints after NFC
	RuleDuplicateKeyNFC     Rule = "duplicate_key_nfc"     // distinct keys equal after NFC
	RuleUnassignedCodePoint Rule = "unassigned_code_point" // code point reserved in UnicodeVersion
)

// Error implements error so that errors.Is(err, RuleDepth) works; it is the
// bare rule name.
func (r Rule) Error() string { return string(r) }

// Error is a rejected value: the rule, where it broke, and why.
type Error struct {
	Rule   Rule
	Path   string // JSON pointer of the offending value ("" is the root)
	Offset int    // byte offset in the input text, or -1 for Go values
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("canonical: ")
	b.WriteString(string(e.Rule))
	if e.Path != "" {
		b.WriteString(" at ")
		b.WriteString(e.Path)
	}
	if e.Offset >= 0 {
		b.WriteString(" (byte ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is reports ErrRejected and the error's own Rule as matches.
func (e *Error) Is(target error) bool {
	if target == ErrRejected {
		return true
	}
	r, ok := target.(Rule)
	return ok && r == e.Rule
}

// pathSeg is one step of a JSON pointer: an object key or an array index.
type pathSeg struct {
	key   string
	index int // -1 for keys
}

// pointer renders segs as an RFC 6901 JSON pointer.
func pointer(segs []pathSeg) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.key))
	}
	return b.String()
}
