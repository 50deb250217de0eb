package canonical

import (
	"io"
	"unicode/utf8"
)

// flushThreshold is how much output a streaming encoder buffers before
// writing it out.
const flushThreshold = 32 << 10

// encoder writes canonical text into buf, flushing to w when streaming.
type encoder struct {
	c    *Codec
	buf  []byte
	w    io.Writer
	werr error
	n    int64 // bytes flushed to w so far
	path []pathSeg
}

func (e *encoder) maybeFlush() {
	if e.w == nil || len(e.buf) < flushThreshold || e.werr != nil {
		return
	}
	var k int
	k, e.werr = e.w.Write(e.buf)
	e.n += int64(k)
	e.buf = e.buf[:0]
}

func (e *encoder) flush() error {
	if e.w != nil && e.werr == nil && len(e.buf) > 0 {
		var k int
		k, e.werr = e.w.Write(e.buf)
		e.n += int64(k)
		e.buf = e.buf[:0]
	}
	return e.werr
}

// reserve makes room for n more bytes by doubling the buffer: append
// grows large buffers by only 1.25×, which allocates ~5× the final size
// over a long output.
func (e *encoder) reserve(n int) {
	if cap(e.buf)-len(e.buf) >= n {
		return
	}
	b := make([]byte, len(e.buf), 2*cap(e.buf)+n)
	copy(b, e.buf)
	e.buf = b
}

func (e *encoder) comma() {
	if e.c.spaced {
		e.buf = append(e.buf, ',', ' ')
		return
	}
	e.buf = append(e.buf, ',')
}

func (e *encoder) colon() {
	if e.c.spaced {
		e.buf = append(e.buf, ':', ' ')
		return
	}
	e.buf = append(e.buf, ':')
}

// node writes a decoded tree (already normalized and sorted).
func (e *encoder) node(n *node) {
	switch n.kind {
	case kindNull:
		e.buf = append(e.buf, "null"...)
	case kindFalse:
		e.buf = append(e.buf, "false"...)
	case kindTrue:
		e.buf = append(e.buf, "true"...)
	case kindInt:
		e.buf = append(e.buf, n.s...)
	case kindFloat:
		e.buf = appendFloat(e.buf, n.f, e.c.fold)
	case kindString:
		e.string(n.s)
	case kindArray:
		e.buf = append(e.buf, '[')
		for i := range n.arr {
			if i > 0 {
				e.comma()
			}
			e.node(&n.arr[i])
		}
		e.buf = append(e.buf, ']')
	case kindObject:
		e.buf = append(e.buf, '{')
		for i := range n.obj {
			if i > 0 {
				e.comma()
			}
			e.string(n.obj[i].key)
			e.colon()
			e.node(&n.obj[i].val)
		}
		e.buf = append(e.buf, '}')
	}
	e.maybeFlush()
}

// needsEscape marks the bytes that cannot be written raw: controls, '"'
// and '\\'. With ASCII escaping, DEL and every non-ASCII byte too.
var needsEscape, needsEscapeASCII [256]bool

func init() {
	for i := range 256 {
		esc := i < 0x20 || i == '"' || i == '\\'
		needsEscape[i] = esc
		needsEscapeASCII[i] = esc || i >= 0x7F
	}
}

const lowerHex = "0123456789abcdef"

// string writes s (valid UTF-8) quoted with minimal escapes: \" \\ \b \f
// \n \r \t, other C0 controls as \u00xx, everything else raw. In ASCII mode
// DEL and non-ASCII become \uxxxx (astral code points as surrogate pairs),
// like Python's ensure_ascii.
func (e *encoder) string(s string) {
	table := &needsEscape
	if e.c.ascii {
		table = &needsEscapeASCII
	}
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if !table[c] {
			i++
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		switch c {
		case '"', '\\':
			e.buf = append(e.buf, '\\', c)
		case '\b':
			e.buf = append(e.buf, '\\', 'b')
		case '\f':
			e.buf = append(e.buf, '\\', 'f')
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		default:
			if c < utf8.RuneSelf {
				e.buf = appendU(e.buf, rune(c))
				break
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 {
				r -= 0x10000
				e.buf = appendU(e.buf, 0xD800+(r>>10))
				e.buf = appendU(e.buf, 0xDC00+(r&0x3FF))
			} else {
				e.buf = appendU(e.buf, r)
			}
			i += size
			start = i
			continue
		}
		i++
		start = i
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', lowerHex[r>>12&15], lowerHex[r>>8&15], lowerHex[r>>4&15], lowerHex[r&15])
}
