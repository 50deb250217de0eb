package rtsrc

import (
	"fmt"
	"strconv"
	"strings"
)

// Stable error codes. They are part of the public contract of the generated
// validators: tests, fixtures and the CLI match on them.
const (
	CodeTooLarge      = "TOO_LARGE"       // input exceeds the record's byte cap
	CodeSyntax        = "SYNTAX"          // not JSON
	CodeInvalidUTF8   = "INVALID_UTF8"    // input bytes are not UTF-8
	CodeLoneSurrogate = "LONE_SURROGATE"  // \uD800-\uDFFF escape without its pair
	CodeNonFinite     = "NON_FINITE"      // NaN, Infinity, -Infinity
	CodeDuplicateKey  = "DUPLICATE_KEY"   // the same object key twice
	CodeDepth         = "DEPTH"           // nesting deeper than MaxDepth
	CodeUnknownField  = "UNKNOWN_FIELD"   // field not in the closed definition
	CodeMissingField  = "MISSING_FIELD"   // required field absent
	CodeType          = "TYPE"            // wrong JSON type
	CodeConst         = "CONST"           // value differs from the fixed value
	CodeEnum          = "ENUM"            // string not in the enumeration
	CodeUnionTag      = "UNION_TAG"       // discriminator names no variant
	CodeMin           = "MIN"             // number below its lower bound
	CodeMax           = "MAX"             // number above its upper bound
	CodePattern       = "PATTERN"         // string does not match its pattern
	CodeMinRunes      = "MIN_RUNES"       // string shorter than allowed (code points)
	CodeMaxRunes      = "MAX_RUNES"       // string longer than allowed (code points)
	CodeMaxBytes      = "MAX_BYTES"       // string longer than allowed (UTF-8 bytes)
	CodeMinItems      = "MIN_ITEMS"       // list too short
	CodeMaxItems      = "MAX_ITEMS"       // list too long
	CodeUniqueItems   = "UNIQUE_ITEMS"    // list has a repeated item
	CodeMinFields     = "MIN_FIELDS"      // map has too few entries
	CodeMaxFields     = "MAX_FIELDS"      // map has too many entries
	CodeTooManyErrors = "TOO_MANY_ERRORS" // the collector stopped at MaxErrors
)

// MaxErrors caps how many errors one decode or validation reports. The last
// kept entry is then a TOO_MANY_ERRORS error at the root.
const MaxErrors = 64

// Error is one violation: a JSON pointer (RFC 6901, "" for the root), a
// stable code and a human message.
type Error struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e Error) String() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Code + ": " + e.Message
}

// ValidationError is returned by generated decoders and validators. Errors
// are in a deterministic order: the order of the fields in the schema, then
// of the items in the data.
type ValidationError struct {
	Errors []Error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, x := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.String())
	}
	return b.String()
}

// Has reports whether an error with this code is present (any path).
func (e *ValidationError) Has(code string) bool {
	for _, x := range e.Errors {
		if x.Code == code {
			return true
		}
	}
	return false
}

// Errors collects violations up to MaxErrors.
type Errors struct {
	list []Error
	full bool
}

// Add records one violation at p.
func (e *Errors) Add(p *Path, code, format string, args ...any) {
	if e.full {
		return
	}
	if len(e.list) == MaxErrors-1 {
		e.list = append(e.list, Error{Path: "", Code: CodeTooManyErrors, Message: "more than " + strconv.Itoa(MaxErrors-1) + " errors; the rest were not reported"})
		e.full = true
		return
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	e.list = append(e.list, Error{Path: p.String(), Code: code, Message: msg})
}

// Len is the number of collected errors.
func (e *Errors) Len() int { return len(e.list) }

// Full reports whether the collector stopped collecting.
func (e *Errors) Full() bool { return e.full }

// Err returns nil or a *ValidationError holding the collected errors.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return &ValidationError{Errors: append([]Error(nil), e.list...)}
}

// Path is a JSON pointer built as a linked list, so that the success path
// allocates nothing for it.
type Path struct {
	parent *Path
	key    string
	index  int
	isIdx  bool
}

// Root is the empty path.
var Root *Path

// Key returns p extended by an object key.
func (p *Path) Key(k string) *Path { return &Path{parent: p, key: k} }

// Index returns p extended by a list index.
func (p *Path) Index(i int) *Path { return &Path{parent: p, index: i, isIdx: true} }

var ptrEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// String renders the RFC 6901 pointer ("" for the root).
func (p *Path) String() string {
	if p == nil {
		return ""
	}
	var parts []string
	for q := p; q != nil; q = q.parent {
		if q.isIdx {
			parts = append(parts, strconv.Itoa(q.index))
		} else {
			parts = append(parts, ptrEscaper.Replace(q.key))
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(parts[i])
	}
	return b.String()
}
