package canonical

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// decoder parses JSON text strictly (RFC 8259 as Python's json.loads with
// strict=True accepts it) into a node tree, applying the codec's
// normalization as it goes.
type decoder struct {
	data    []byte
	pos     int
	c       *Codec
	path    []pathSeg
	scratch []byte
	// asWritten is set by Decode: strings are copied (the tree outlives
	// data) and string values are kept as written, after validation.
	asWritten bool
	// items and members are stacks shared by every container being
	// parsed: a container's children are pushed while it is open and
	// copied into one exactly sized slice when it closes.
	items   []node
	members []member
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (c *Codec) decode(data []byte, asWritten bool) (node, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return node{}, &Error{Rule: RuleInvalidUTF8, Offset: off, Detail: "input is not well-formed UTF-8"}
	}
	if bytes.HasPrefix(data, utf8BOM) {
		return node{}, &Error{Rule: RuleSyntax, Offset: 0, Detail: "unexpected byte order mark"}
	}
	d := decoder{data: data, c: c, asWritten: asWritten}
	d.skipSpace()
	n, err := d.value(0)
	if err != nil {
		return node{}, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return node{}, d.fail(RuleSyntax, "extra data after the value")
	}
	// Like the seed system (json.loads, then normalize), every parse error
	// wins over every normalization error; normalization then walks the
	// value in document order.
	nz := normalizer{c: c, asWritten: asWritten}
	if err := nz.node(&n); err != nil {
		return node{}, err
	}
	return n, nil
}

func (d *decoder) fail(rule Rule, detail string) error {
	return &Error{Rule: rule, Path: pointer(d.path), Offset: d.pos, Detail: detail}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (node, error) {
	if depth > d.c.maxDepth {
		return node{}, d.fail(RuleDepth, "exceeds maximum nesting depth "+strconv.Itoa(d.c.maxDepth))
	}
	if d.pos >= len(d.data) {
		return node{}, d.fail(RuleSyntax, "expecting a value")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, err := d.str()
		return node{kind: kindString, s: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		if bytes.HasPrefix(d.data[d.pos:], []byte("-Infinity")) {
			return node{}, d.fail(RuleNonFinite, "-Infinity is not allowed")
		}
		return d.number()
	case d.literal("true"):
		return node{kind: kindTrue}, nil
	case d.literal("false"):
		return node{kind: kindFalse}, nil
	case d.literal("null"):
		return node{kind: kindNull}, nil
	case bytes.HasPrefix(d.data[d.pos:], []byte("NaN")), bytes.HasPrefix(d.data[d.pos:], []byte("Infinity")):
		return node{}, d.fail(RuleNonFinite, "NaN and Infinity are not allowed")
	default:
		return node{}, d.fail(RuleSyntax, "expecting a value")
	}
}

func (d *decoder) literal(word string) bool {
	if bytes.HasPrefix(d.data[d.pos:], unsafe.Slice(unsafe.StringData(word), len(word))) {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *decoder) array(depth int) (node, error) {
	d.pos++ // '['
	d.skipSpace()
	n := node{kind: kindArray}
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return n, nil
	}
	base := len(d.items)
	for i := 0; ; i++ {
		d.path = append(d.path, pathSeg{index: i})
		v, err := d.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		d.path = d.path[:len(d.path)-1]
		d.items = append(d.items, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return node{}, d.fail(RuleSyntax, "expecting ',' or ']'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			n.arr = append([]node(nil), d.items[base:]...)
			clear(d.items[base:])
			d.items = d.items[:base]
			return n, nil
		default:
			return node{}, d.fail(RuleSyntax, "expecting ',' or ']'")
		}
	}
}

// smallObject is the member count up to which duplicate keys are found by
// scanning; larger objects use a set.
const smallObject = 16

func (d *decoder) object(depth int) (node, error) {
	d.pos++ // '{'
	d.skipSpace()
	n := node{kind: kindObject}
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return n, nil
	}
	var seen map[string]struct{}
	base := len(d.members)
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return node{}, d.fail(RuleSyntax, "expecting a property name in double quotes")
		}
		keyStart := d.pos
		key, err := d.str()
		if err != nil {
			return node{}, err
		}
		if d.duplicate(d.members[base:], &seen, key) {
			d.pos = keyStart
			return node{}, &Error{Rule: RuleDuplicateKey, Path: pointer(append(d.path, pathSeg{key: key, index: -1})), Offset: keyStart, Detail: "duplicate key " + strconv.Quote(key)}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return node{}, d.fail(RuleSyntax, "expecting ':'")
		}
		d.pos++
		d.skipSpace()
		d.path = append(d.path, pathSeg{key: key, index: -1})
		v, err := d.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		d.path = d.path[:len(d.path)-1]
		d.members = append(d.members, member{key: key, raw: key, val: v})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return node{}, d.fail(RuleSyntax, "expecting ',' or '}'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
			continue
		case '}':
			d.pos++
		default:
			return node{}, d.fail(RuleSyntax, "expecting ',' or '}'")
		}
		break
	}
	n.obj = append([]member(nil), d.members[base:]...)
	clear(d.members[base:])
	d.members = d.members[:base]
	return n, nil
}

// duplicate reports whether key is already a member.
func (d *decoder) duplicate(obj []member, seen *map[string]struct{}, key string) bool {
	if len(obj) < smallObject {
		for i := range obj {
			if obj[i].raw == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(obj))
		for i := range obj {
			(*seen)[obj[i].raw] = struct{}{}
		}
	}
	if _, ok := (*seen)[key]; ok {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

// str decodes a string token as written; normalization comes later.
func (d *decoder) str() (string, error) {
	start := d.pos
	d.pos++ // opening quote
	i := d.pos
	for i < len(d.data) {
		c := d.data[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	if i < len(d.data) && d.data[i] == '"' {
		raw := d.data[d.pos:i]
		d.pos = i + 1
		if d.asWritten {
			return string(raw), nil
		}
		return unsafe.String(unsafe.SliceData(raw), len(raw)), nil
	}
	d.pos = i
	buf, err := d.unescape(d.data[start+1 : i])
	if err != nil {
		return "", err
	}
	return string(buf), nil
}

// unescape continues a string whose first len(prefix) bytes had no escapes.
func (d *decoder) unescape(prefix []byte) ([]byte, error) {
	buf := append(d.scratch[:0], prefix...)
	for {
		if d.pos >= len(d.data) {
			return nil, d.fail(RuleSyntax, "unterminated string")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			d.scratch = buf
			return buf, nil
		case c < 0x20:
			return nil, d.fail(RuleControlCharacter, "raw control character U+"+hex4(rune(c))+" in a string")
		case c != '\\':
			buf = append(buf, c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			return nil, d.fail(RuleSyntax, "unterminated string")
		}
		esc := d.data[d.pos+1]
		d.pos += 2
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.fail(RuleSyntax, "invalid \\u escape")
			}
			if r >= 0xDC00 && r <= 0xDFFF {
				d.pos -= 6
				return nil, d.fail(RuleLoneSurrogate, "unpaired low surrogate \\u"+hex4(r))
			}
			if r >= 0xD800 && r <= 0xDBFF {
				lowStart := d.pos
				var lo rune
				if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					d.pos += 2
					lo, ok = d.hex4()
					if !ok {
						return nil, d.fail(RuleSyntax, "invalid \\u escape")
					}
				}
				if lo < 0xDC00 || lo > 0xDFFF {
					d.pos = lowStart - 6
					return nil, d.fail(RuleLoneSurrogate, "unpaired high surrogate \\u"+hex4(r))
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			d.pos -= 2
			return nil, d.fail(RuleSyntax, "invalid escape")
		}
	}
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
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
	d.pos += 4
	return r, true
}

func hex4(r rune) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// number decodes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() (node, error) {
	start := d.pos
	p := d.pos
	if d.data[p] == '-' {
		p++
	}
	intStart := p
	switch {
	case p < len(d.data) && d.data[p] == '0':
		p++
	case p < len(d.data) && d.data[p] >= '1' && d.data[p] <= '9':
		for p < len(d.data) && d.data[p] >= '0' && d.data[p] <= '9' {
			p++
		}
	default:
		return node{}, d.fail(RuleSyntax, "expecting a value")
	}
	intDigits := p - intStart
	isFloat := false
	if p < len(d.data) && d.data[p] == '.' {
		q := p + 1
		for q < len(d.data) && d.data[q] >= '0' && d.data[q] <= '9' {
			q++
		}
		if q > p+1 { // a '.' without digits ends the number, like Python's scanner
			p, isFloat = q, true
		}
	}
	if p < len(d.data) && (d.data[p] == 'e' || d.data[p] == 'E') {
		q := p + 1
		if q < len(d.data) && (d.data[q] == '+' || d.data[q] == '-') {
			q++
		}
		r := q
		for r < len(d.data) && d.data[r] >= '0' && d.data[r] <= '9' {
			r++
		}
		if r > q {
			p, isFloat = r, true
		}
	}
	d.pos = p
	lit := d.data[start:p]
	if !isFloat {
		if intDigits > MaxIntegerDigits {
			d.pos = start
			return node{}, d.fail(RuleIntegerDigits, "integer literal has "+strconv.Itoa(intDigits)+" digits, more than "+strconv.Itoa(MaxIntegerDigits))
		}
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return node{kind: kindInt, s: "0"}, nil
		}
		s := unsafe.String(unsafe.SliceData(lit), len(lit))
		if d.asWritten {
			s = string(lit)
		}
		return node{kind: kindInt, s: s}, nil
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil && !math.IsInf(f, 0) {
		// Underflow is not an error in Python (1e-400 == 0.0); only overflow is.
		err = nil
	}
	if err != nil || math.IsInf(f, 0) {
		d.pos = start
		return node{}, d.fail(RuleNonFinite, "number literal overflows a double")
	}
	return node{kind: kindFloat, f: f}, nil
}
