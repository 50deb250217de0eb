package reader

import (
	"bytes"
	"unicode/utf8"
)

// spacedASCIISize returns the size of the canonical compact JSON text b
// (as stored: sorted keys, "," and ":" separators, raw UTF-8) in the form
// the response cap is measured on (canonical.ASCIISize(v, true): ", " and
// ": " separators, DEL and non-ASCII escaped as \uxxxx, astral code points
// as surrogate pairs) without decoding or encoding anything: one pass.
func spacedASCIISize(b []byte) int64 {
	n := int64(len(b))
	in := false
	for i := 0; i < len(b); {
		c := b[i]
		if in {
			switch {
			case c == '\\':
				i += 2 // the escaped byte (an escape's hex digits are plain ASCII)
				continue
			case c == '"':
				in = false
			case c == 0x7f:
				n += 5
			case c >= utf8.RuneSelf:
				r, size := utf8.DecodeRune(b[i:])
				if r >= 0x10000 {
					n += int64(12 - size)
				} else {
					n += int64(6 - size)
				}
				i += size
				continue
			}
			i++
			continue
		}
		switch c {
		case '"':
			in = true
		case ',', ':':
			n++
		}
		i++
	}
	return n
}

// splitRecords returns the raw records of a stored topology page, the
// canonical compact text {"collection":C,"records":[r0,r1,…],"schema_version":1}
// as the progress store writes it; ok is false for any other shape.
func splitRecords(payload []byte, coll string) (recs [][]byte, ok bool) {
	head := `{"collection":"` + coll + `","records":[`
	const tail = `],"schema_version":1}`
	if !bytes.HasPrefix(payload, []byte(head)) || !bytes.HasSuffix(payload, []byte(tail)) || len(payload) < len(head)+len(tail) {
		return nil, false
	}
	body := payload[len(head) : len(payload)-len(tail)]
	depth, in, start := 0, false, 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		if in {
			switch c {
			case '\\':
				i++
			case '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, false
			}
		case ',':
			if depth == 0 {
				recs = append(recs, body[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 || in || start >= len(body) {
		return nil, false
	}
	return append(recs, body[start:]), true
}
