package canonical

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// decoder parses JSON text strictly (RFC 8259 as Python's json.loads with
// strict=True accepts it) into a node tree, applying the codec's
// normalization and caps as it goes.
//
// Rule precedence (conformance/README.md) is that of the seed system, which
// parses fully and then normalizes: every parse error wins over every
// normalization error, and normalization errors are reported in document
// order, a container's count cap before anything inside it. The decoder
// gets the same answers in one pass with memory bounded by the caps: the
// first normalization error found is kept as pending and the decoder
// switches to discarding, so the rest of the text is only checked for parse
// errors (which replace it) and for the count caps of the containers still
// open (which, opening earlier, precede it in document order).
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
	// out, when set, receives the canonical text as the input is parsed
	// (Transform) instead of a node tree (Decode); segs is the stack of
	// the open objects' member texts in out, sorted when an object closes,
	// and tmp the buffer that reorders them.
	out  *encoder
	segs []segment
	tmp  []byte
	// nkeys is the stack of the open objects' normalized keys, for
	// duplicate_key_nfc.
	nkeys []string
	// keys and keyAt are the stack of the raw keys (and their offsets) of
	// the open objects' first smallObject members, for duplicate_key.
	keys  []string
	keyAt []int
	// pending is the first normalization error in document order found so
	// far, at byte pendingAt; while it is set the decoder builds nothing.
	pending   *Error
	pendingAt int
}

// segment is one object member's text in decoder.out: "key":value.
type segment struct {
	key        string // normalized
	start, end int
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decode parses data into a node tree; with out set it writes the
// canonical text to out instead and returns a zero node.
func (c *Codec) decode(data []byte, asWritten bool, out *encoder) (node, error) {
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
	d := decoder{data: data, c: c, asWritten: asWritten, out: out}
	d.skipSpace()
	n, err := d.value(0)
	if err != nil {
		return node{}, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return node{}, d.fail(RuleSyntax, "extra data after the value")
	}
	if d.pending != nil {
		return node{}, d.pending
	}
	return n, nil
}

func (d *decoder) fail(rule Rule, detail string) error {
	return &Error{Rule: rule, Path: pointer(d.path), Offset: d.pos, Detail: detail}
}

// discarding reports whether a normalization error is pending: the rest of
// the input is only checked, not kept.
func (d *decoder) discarding() bool { return d.pending != nil }

// emitting reports whether canonical text is being written to d.out.
func (d *decoder) emitting() bool { return d.out != nil && d.pending == nil }

// scalar returns n, or writes it to d.out when streaming.
func (d *decoder) scalar(n node) (node, error) {
	if d.out == nil {
		return n, nil
	}
	if d.pending == nil {
		d.out.node(&n)
	}
	return node{}, nil
}

// normFail records a normalization error of the value at byte at (the
// current path) unless an earlier one in document order is pending. It
// returns the error recorded, or nil.
func (d *decoder) normFail(at int, err *Error) *Error {
	if d.pending != nil && d.pendingAt <= at {
		return nil
	}
	err.Path = pointer(d.path)
	d.pending, d.pendingAt = err, at
	return err
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
	if d.out != nil && d.pending == nil {
		d.out.reserve(4 << 10)
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		at := d.pos
		s, err := d.str()
		if err != nil {
			return node{}, err
		}
		if d.discarding() || !d.c.normalize {
			return d.scalar(node{kind: kindString, s: s})
		}
		ns, err := d.c.value(s, false)
		if err != nil {
			d.normFail(at, err.(*Error))
			return node{}, nil
		}
		if !d.asWritten {
			s = ns
		}
		return d.scalar(node{kind: kindString, s: s})
	case c == '-' || (c >= '0' && c <= '9'):
		if bytes.HasPrefix(d.data[d.pos:], []byte("-Infinity")) {
			return node{}, d.fail(RuleNonFinite, "-Infinity is not allowed")
		}
		n, err := d.number()
		if err != nil {
			return node{}, err
		}
		return d.scalar(n)
	case d.literal("true"):
		return d.scalar(node{kind: kindTrue})
	case d.literal("false"):
		return d.scalar(node{kind: kindFalse})
	case d.literal("null"):
		return d.scalar(node{kind: kindNull})
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
	open := d.pos
	d.pos++ // '['
	d.skipSpace()
	n := node{kind: kindArray}
	if d.emitting() {
		d.out.buf = append(d.out.buf, '[')
	}
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return d.closeArray(n)
	}
	base := len(d.items)
	var capErr *Error // this array's array_items error, while pending
	for i := 0; ; i++ {
		if i == MaxArrayItems && d.c.capped {
			capErr = d.normFail(open, &Error{Rule: RuleArrayItems, Offset: -1})
		}
		d.path = append(d.path, pathSeg{index: i})
		var v node
		var err error
		if d.pending != nil && depth < d.c.maxDepth && d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			_, err = d.number() // only checked: the common case of a huge rejected array
		} else {
			v, err = d.value(depth + 1)
		}
		if err != nil {
			return node{}, err
		}
		d.path = d.path[:len(d.path)-1]
		if d.out == nil && !d.discarding() {
			d.items = append(d.items, v)
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return node{}, d.fail(RuleSyntax, "expecting ',' or ']'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
			if d.emitting() {
				d.out.comma()
			}
		case ']':
			d.pos++
			if capErr != nil && d.pending == capErr {
				capErr.Detail = "array has " + strconv.Itoa(i+1) + " items, more than " + strconv.Itoa(MaxArrayItems)
			}
			if d.out == nil && !d.discarding() {
				n.arr = append([]node(nil), d.items[base:]...)
			}
			if len(d.items) > base {
				clear(d.items[base:])
				d.items = d.items[:base]
			}
			return d.closeArray(n)
		default:
			return node{}, d.fail(RuleSyntax, "expecting ',' or ']'")
		}
	}
}

func (d *decoder) closeArray(n node) (node, error) {
	if d.out == nil {
		return n, nil
	}
	if d.pending == nil {
		d.out.buf = append(d.out.buf, ']')
	}
	return node{}, nil
}

// smallObject is the member count up to which duplicate keys are found by
// scanning; larger objects use a set.
const smallObject = 16

// keySeed seeds the hashes of keySet.
var keySeed = maphash.MakeSeed()

// keyHash hashes keys for keySet (a variable so that a test can make every
// key collide).
var keyHash = func(s string) uint64 { return maphash.String(keySeed, s) }

// keySet finds repeated raw keys (duplicate_key) in one object. The first
// smallObject keys are scanned on the decoder's key stack; past that it
// keeps a 64-bit hash of each key with the offset of its first occurrence
// and confirms a hash match by decoding that key again, so an object of
// any size costs ~40 bytes per member (an object over the member cap is
// only checked, not kept, but duplicate_key is a parse error and must
// still be found).
type keySet struct {
	base   int            // this object's first entry in d.keys
	hashes map[uint64]int // key hash → offset of the key's first occurrence
	extra  map[string]struct{}
}

// seen reports whether key (whose opening quote is at byte at) is already
// a key of the object, and adds it.
func (d *decoder) seen(ks *keySet, key string, at int) bool {
	if ks.hashes == nil {
		keys := d.keys[ks.base:]
		for _, k := range keys {
			if k == key {
				return true
			}
		}
		if len(keys) < smallObject {
			d.keys, d.keyAt = append(d.keys, key), append(d.keyAt, at)
			return false
		}
		ks.hashes = make(map[uint64]int, 4*smallObject)
		for i, k := range keys {
			ks.add(keyHash(k), k, d.keyAt[ks.base+i])
		}
		clear(d.keys[ks.base:])
		d.keys, d.keyAt = d.keys[:ks.base], d.keyAt[:ks.base]
	}
	h := keyHash(key)
	if first, ok := ks.hashes[h]; ok {
		if d.keyAtOffset(first) == key {
			return true
		}
		if _, ok := ks.extra[key]; ok {
			return true
		}
	}
	ks.add(h, key, at)
	return false
}

// add adds a new key with hash h at byte at: a key whose hash is taken by
// another key goes to the exact set.
func (ks *keySet) add(h uint64, key string, at int) {
	if _, taken := ks.hashes[h]; !taken {
		ks.hashes[h] = at
		return
	}
	if ks.extra == nil {
		ks.extra = map[string]struct{}{}
	}
	ks.extra[strings.Clone(key)] = struct{}{}
}

// keyAtOffset decodes the (already validated) key whose opening quote is at
// byte at again.
func (d *decoder) keyAtOffset(at int) string {
	pos, scratch := d.pos, d.scratch
	d.pos, d.scratch = at, nil
	s, _ := d.str()
	d.pos, d.scratch = pos, scratch
	return s
}

func (d *decoder) object(depth int) (node, error) {
	open := d.pos
	d.pos++ // '{'
	d.skipSpace()
	n := node{kind: kindObject}
	outStart := -1 // the '{' in d.out
	if d.emitting() {
		outStart = len(d.out.buf)
		d.out.buf = append(d.out.buf, '{')
	}
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		if d.out == nil {
			return n, nil
		}
		if d.emitting() {
			d.out.buf = append(d.out.buf, '}')
		}
		return node{}, nil
	}
	ks := keySet{base: len(d.keys)}
	nbase, sbase := len(d.nkeys), len(d.segs)
	defer func() {
		clear(d.keys[ks.base:])
		d.keys, d.keyAt = d.keys[:ks.base], d.keyAt[:ks.base]
		if len(d.nkeys) > nbase {
			clear(d.nkeys[nbase:])
			d.nkeys = d.nkeys[:nbase]
		}
		if len(d.segs) > sbase {
			clear(d.segs[sbase:])
			d.segs = d.segs[:sbase]
		}
	}()
	var nfcSeen map[string]struct{} // normalized keys, past smallObject members
	var capErr *Error               // this object's object_entries error, while pending
	base := len(d.members)
	for i := 0; ; i++ {
		if i == MaxObjectEntries && d.c.capped {
			capErr = d.normFail(open, &Error{Rule: RuleObjectEntries, Offset: -1})
		}
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return node{}, d.fail(RuleSyntax, "expecting a property name in double quotes")
		}
		keyStart := d.pos
		raw, err := d.str()
		if err != nil {
			return node{}, err
		}
		if d.seen(&ks, raw, keyStart) {
			d.pos = keyStart
			return node{}, &Error{Rule: RuleDuplicateKey, Path: pointer(append(d.path, pathSeg{key: raw, index: -1})), Offset: keyStart, Detail: "duplicate key " + strconv.Quote(raw)}
		}
		d.path = append(d.path, pathSeg{key: raw, index: -1})
		key := raw
		if !d.discarding() && d.c.normalize {
			key, nfcSeen = d.normalKey(raw, keyStart, d.nkeys[nbase:], nfcSeen)
			if !d.discarding() {
				d.nkeys = append(d.nkeys, key)
			}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return node{}, d.fail(RuleSyntax, "expecting ':'")
		}
		d.pos++
		d.skipSpace()
		segStart := -1
		if d.emitting() {
			segStart = len(d.out.buf)
			d.out.string(key)
			d.out.colon()
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		d.path = d.path[:len(d.path)-1]
		switch {
		case d.discarding():
		case d.out != nil:
			d.segs = append(d.segs, segment{key: key, start: segStart, end: len(d.out.buf)})
		default:
			d.members = append(d.members, member{key: key, raw: raw, val: v})
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return node{}, d.fail(RuleSyntax, "expecting ',' or '}'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
			if d.emitting() {
				d.out.comma()
			}
			continue
		case '}':
			d.pos++
		default:
			return node{}, d.fail(RuleSyntax, "expecting ',' or '}'")
		}
		if capErr != nil && d.pending == capErr {
			capErr.Detail = "object has " + strconv.Itoa(i+1) + " members, more than " + strconv.Itoa(MaxObjectEntries)
		}
		break
	}
	if len(d.members) > base {
		if !d.discarding() {
			n.obj = append([]member(nil), d.members[base:]...)
			slices.SortFunc(n.obj, func(a, b member) int { return cmp.Compare(a.key, b.key) })
		}
		clear(d.members[base:])
		d.members = d.members[:base]
	}
	if d.out == nil {
		return n, nil
	}
	if d.emitting() {
		d.sortMembers(outStart, d.segs[sbase:])
		d.out.buf = append(d.out.buf, '}')
	}
	return node{}, nil
}

// sortMembers reorders the member texts segs, written after the '{' at
// d.out.buf[open], by key (code-point order: byte order of UTF-8).
func (d *decoder) sortMembers(open int, segs []segment) {
	if slices.IsSortedFunc(segs, func(a, b segment) int { return cmp.Compare(a.key, b.key) }) {
		return
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.key, b.key) })
	d.tmp = append(d.tmp[:0], d.out.buf[open+1:]...)
	d.out.buf = d.out.buf[:open+1]
	for i, sg := range segs {
		if i > 0 {
			d.out.comma()
		}
		d.out.buf = append(d.out.buf, d.tmp[sg.start-open-1:sg.end-open-1]...)
	}
	if cap(d.tmp) > maxPooledBuffer {
		d.tmp = nil
	}
}

// normalKey applies the key rules to raw (at byte at; d.path ends with it):
// unassigned_code_point, key_empty, key_length, then duplicate_key_nfc
// against the object's earlier members. It returns the normalized key and
// the set of normalized keys, made once the object is past smallObject.
func (d *decoder) normalKey(raw string, at int, prev []string, set map[string]struct{}) (string, map[string]struct{}) {
	k, err := d.c.key(raw)
	if err != nil {
		d.normFail(at, err.(*Error))
		return raw, set
	}
	if set == nil && len(prev) >= smallObject {
		set = make(map[string]struct{}, 2*len(prev))
		for _, k := range prev {
			set[k] = struct{}{}
		}
	}
	dup := false
	if set != nil {
		_, dup = set[k]
		set[k] = struct{}{}
	} else {
		for _, p := range prev {
			if p == k {
				dup = true
				break
			}
		}
	}
	if dup {
		d.normFail(at, &Error{Rule: RuleDuplicateKeyNFC, Offset: -1, Detail: "two keys are equal after Unicode normalization: " + strconv.Quote(k)})
	}
	return k, set
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
		if d.asWritten && !d.discarding() {
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
		if d.asWritten && !d.discarding() {
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
