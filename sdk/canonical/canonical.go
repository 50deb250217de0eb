package canonical

import (
	"bytes"
	"io"
	"sync"
)

var bufPool = sync.Pool{New: func() any { return new(encoder) }}

// maxPooledBuffer keeps one huge value from pinning its buffer in the pool.
const maxPooledBuffer = 8 << 20

// Transform returns the canonical form of the JSON text data under V1.
func Transform(data []byte) ([]byte, error) { return V1.Transform(data) }

// Marshal returns the canonical form of the Go value v under V1.
func Marshal(v any) ([]byte, error) { return V1.Marshal(v) }

// Transform decodes the JSON text data strictly and returns its canonical
// form under c.
func (c Codec) Transform(data []byte) ([]byte, error) {
	return c.AppendTransform(nil, data)
}

// AppendTransform appends the canonical form of data to dst.
// The canonical text is written as the input is parsed (no value tree),
// and every cap is enforced while parsing, so memory stays about the size
// of the output, and a rejected input costs what the caps allow.
func (c Codec) AppendTransform(dst, data []byte) ([]byte, error) {
	e := encoder{c: &c, buf: dst}
	if dst == nil {
		e.buf = make([]byte, 0, min(len(data), 64<<10))
	}
	if _, err := c.decode(data, false, &e); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// Marshal returns the canonical form of v under c.
func (c Codec) Marshal(v any) ([]byte, error) {
	e := bufPool.Get().(*encoder)
	defer func() {
		e.c, e.w, e.werr, e.n, e.path = nil, nil, nil, 0, e.path[:0]
		if cap(e.buf) <= maxPooledBuffer {
			e.buf = e.buf[:0]
			bufPool.Put(e)
		}
	}()
	e.c = &c
	if err := e.any(v, 0); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf), nil
}

// AppendMarshal appends the canonical form of v to dst.
func (c Codec) AppendMarshal(dst []byte, v any) ([]byte, error) {
	e := encoder{c: &c, buf: dst}
	if err := e.any(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// Encode writes the canonical form of v to w in chunks, without holding the
// whole output in memory; it returns the number of bytes written. On error
// w may have received a prefix of the output.
func (c Codec) Encode(w io.Writer, v any) (int64, error) {
	e := encoder{c: &c, w: w, buf: make([]byte, 0, flushThreshold+4096)}
	if err := e.any(v, 0); err != nil {
		return e.n, err
	}
	err := e.flush()
	return e.n, err
}

// Decode parses JSON text strictly, checks every rule of c, and returns the
// value as written (no NFC applied) as nil, bool, string, Number, []any or
// map[string]any. Marshal(Decode(x)) equals Transform(x).
func (c Codec) Decode(data []byte) (any, error) {
	n, err := c.decode(data, true, nil)
	if err != nil {
		return nil, err
	}
	return n.toAny(), nil
}

func (n *node) toAny() any {
	switch n.kind {
	case kindFalse:
		return false
	case kindTrue:
		return true
	case kindInt:
		return Number(n.s)
	case kindFloat:
		var e encoder
		e.c = &NoFold
		e.buf = appendPyRepr(e.buf, n.f)
		return Number(e.buf)
	case kindString:
		return n.s
	case kindArray:
		a := make([]any, len(n.arr))
		for i := range n.arr {
			a[i] = n.arr[i].toAny()
		}
		return a
	case kindObject:
		m := make(map[string]any, len(n.obj))
		for i := range n.obj {
			m[n.obj[i].raw] = n.obj[i].val.toAny()
		}
		return m
	}
	return nil
}

// MarshalASCII returns v as Python's json.dumps(v, sort_keys=True,
// ensure_ascii=True) with compact (",", ":") or, when spaced, default
// (", ", ": ") separators, and no normalization. It exists only to measure
// sizes the contracts define on that form (lifecycle snapshot, read
// responses); it is never hashed or stored.
func MarshalASCII(v any, spaced bool) ([]byte, error) {
	c := asciiCompact
	if spaced {
		c = asciiSpaced
	}
	return c.Marshal(v)
}

// ASCIISize returns len(MarshalASCII(v, spaced)) without keeping the text.
func ASCIISize(v any, spaced bool) (int64, error) {
	c := asciiCompact
	if spaced {
		c = asciiSpaced
	}
	return c.Encode(io.Discard, v)
}
