package rtsrc

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds container nesting in parsed input. No rayflow record comes
// near it; it keeps the parser's recursion bounded on hostile input.
const MaxDepth = 64

// Kind is the JSON type of a parsed value.
type Kind uint8

// JSON kinds.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string { return kindNames[k] }

// Value is one parsed JSON value. Numbers keep their literal text so that
// integer fields can refuse 1.0 and 1e2 exactly like CUE does.
type Value struct {
	Kind    Kind
	Bool    bool
	Str     string // decoded string, or the number literal
	Elems   []Value
	Members []Member
	Raw     []byte // the value's bytes in the input
}

// Member is one object entry, in input order.
type Member struct {
	Key   string
	Value Value
}

// Parse parses one JSON document strictly. Errors are reported into e with
// the JSON pointer of the offending place; on error the returned value is
// unusable.
func Parse(data []byte, e *Errors) (*Value, bool) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		e.Add(Root, CodeInvalidUTF8, "input is not valid UTF-8 (byte offset %d)", off)
		return nil, false
	}
	p := parser{data: data, e: e}
	v := new(Value)
	p.skipWS()
	if !p.value(v, Root, 0) {
		return nil, false
	}
	p.skipWS()
	if p.pos != len(p.data) {
		p.fail(Root, CodeSyntax, "unexpected data after the top-level value")
		return nil, false
	}
	return v, true
}

type parser struct {
	data []byte
	pos  int
	e    *Errors
}

func (p *parser) fail(path *Path, code, msg string) {
	p.e.Add(path, code, "%s (byte offset %d)", msg, p.pos)
}

func (p *parser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) lit(s string) bool {
	if len(p.data)-p.pos >= len(s) && string(p.data[p.pos:p.pos+len(s)]) == s {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) value(v *Value, path *Path, depth int) bool {
	if p.pos >= len(p.data) {
		p.fail(path, CodeSyntax, "unexpected end of input")
		return false
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		if depth >= MaxDepth {
			p.fail(path, CodeDepth, "nesting deeper than "+strconv.Itoa(MaxDepth))
			return false
		}
		if !p.object(v, path, depth) {
			return false
		}
	case c == '[':
		if depth >= MaxDepth {
			p.fail(path, CodeDepth, "nesting deeper than "+strconv.Itoa(MaxDepth))
			return false
		}
		if !p.array(v, path, depth) {
			return false
		}
	case c == '"':
		s, ok := p.str(path)
		if !ok {
			return false
		}
		v.Kind, v.Str = KindString, s
	case c == 't':
		if !p.lit("true") {
			p.fail(path, CodeSyntax, "invalid literal")
			return false
		}
		v.Kind, v.Bool = KindBool, true
	case c == 'f':
		if !p.lit("false") {
			p.fail(path, CodeSyntax, "invalid literal")
			return false
		}
		v.Kind = KindBool
	case c == 'n':
		if !p.lit("null") {
			p.fail(path, CodeSyntax, "invalid literal")
			return false
		}
		v.Kind = KindNull
	case c == 'N' || c == 'I' || (c == '-' && p.pos+1 < len(p.data) && p.data[p.pos+1] == 'I'):
		if p.lit("NaN") || p.lit("Infinity") || p.lit("-Infinity") {
			p.pos = start
			p.fail(path, CodeNonFinite, "NaN and Infinity are not JSON numbers")
			return false
		}
		p.fail(path, CodeSyntax, "invalid literal")
		return false
	case c == '-' || (c >= '0' && c <= '9'):
		if !p.number(path) {
			return false
		}
		v.Kind, v.Str = KindNumber, string(p.data[start:p.pos])
		if overflows(v.Str) {
			p.pos = start
			p.fail(path, CodeNonFinite, "number overflows float64 (it would be Infinity)")
			return false
		}
	default:
		p.fail(path, CodeSyntax, "unexpected character "+strconv.QuoteRune(rune(c)))
		return false
	}
	v.Raw = p.data[start:p.pos]
	return true
}

func (p *parser) object(v *Value, path *Path, depth int) bool {
	p.pos++ // {
	v.Kind = KindObject
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.Members = []Member{}
		return true
	}
	for {
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			p.fail(path, CodeSyntax, "expected an object key")
			return false
		}
		keyPos := p.pos
		k, ok := p.str(path)
		if !ok {
			return false
		}
		for i := range v.Members {
			if v.Members[i].Key == k {
				p.pos = keyPos
				p.fail(path.Key(k), CodeDuplicateKey, "duplicate object key")
				return false
			}
		}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			p.fail(path, CodeSyntax, "expected ':' after an object key")
			return false
		}
		p.pos++
		p.skipWS()
		v.Members = append(v.Members, Member{Key: k})
		if !p.value(&v.Members[len(v.Members)-1].Value, path.Key(k), depth+1) {
			return false
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			p.fail(path, CodeSyntax, "unexpected end of input in an object")
			return false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return true
		default:
			p.fail(path, CodeSyntax, "expected ',' or '}' in an object")
			return false
		}
	}
}

func (p *parser) array(v *Value, path *Path, depth int) bool {
	p.pos++ // [
	v.Kind = KindArray
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.Elems = []Value{}
		return true
	}
	for {
		p.skipWS()
		v.Elems = append(v.Elems, Value{})
		if !p.value(&v.Elems[len(v.Elems)-1], path.Index(len(v.Elems)-1), depth+1) {
			return false
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			p.fail(path, CodeSyntax, "unexpected end of input in an array")
			return false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return true
		default:
			p.fail(path, CodeSyntax, "expected ',' or ']' in an array")
			return false
		}
	}
}

func (p *parser) number(path *Path) bool {
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		p.fail(path, CodeSyntax, "invalid number")
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			p.fail(path, CodeSyntax, "invalid number")
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			p.fail(path, CodeSyntax, "invalid number")
			return false
		}
	}
	p.pos = i
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// str parses a string literal at p.pos (which is '"').
func (p *parser) str(path *Path) (string, bool) {
	d := p.data
	i := p.pos + 1
	// Fast path: no escapes.
	for j := i; j < len(d); j++ {
		c := d[j]
		if c == '"' {
			p.pos = j + 1
			return string(d[i:j]), true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = j
			p.fail(path, CodeSyntax, "control character in a string")
			return "", false
		}
	}
	buf := make([]byte, 0, 16)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), true
		case c < 0x20:
			p.pos = i
			p.fail(path, CodeSyntax, "control character in a string")
			return "", false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		// escape
		if i+1 >= len(d) {
			break
		}
		switch d[i+1] {
		case '"', '\\', '/':
			buf = append(buf, d[i+1])
			i += 2
		case 'b':
			buf = append(buf, '\b')
			i += 2
		case 'f':
			buf = append(buf, '\f')
			i += 2
		case 'n':
			buf = append(buf, '\n')
			i += 2
		case 'r':
			buf = append(buf, '\r')
			i += 2
		case 't':
			buf = append(buf, '\t')
			i += 2
		case 'u':
			r, ok := hex4(d[i+2:])
			if !ok {
				p.pos = i
				p.fail(path, CodeSyntax, "invalid \\u escape")
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				var r2 rune = -1
				if r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					if x, ok := hex4(d[i+2:]); ok && x >= 0xDC00 && x <= 0xDFFF {
						r2 = x
					}
				}
				if r2 < 0 {
					p.pos = i - 6
					p.fail(path, CodeLoneSurrogate, "lone UTF-16 surrogate escape")
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos = i
			p.fail(path, CodeSyntax, "invalid escape")
			return "", false
		}
	}
	p.pos = len(d)
	p.fail(path, CodeSyntax, "unterminated string")
	return "", false
}

// overflows reports whether a number literal is beyond float64, i.e. it
// would read as ±Infinity. Such literals are rejected like Infinity itself.
func overflows(lit string) bool {
	if len(lit) < 309 && !strings.ContainsAny(lit, "eE") {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	return err != nil && math.IsInf(f, 0)
}
