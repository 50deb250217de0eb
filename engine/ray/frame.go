package ray

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxHeaderBytes bounds a frame header; payloads travel in sections.
const maxHeaderBytes = 16 << 20

// maxSectionBytes bounds one section (a value) on the wire.
const maxSectionBytes = 1 << 34

// writeFrame writes one frame: a big-endian uint32 header length, the JSON
// header with "sizes" set to the section lengths, then the raw sections.
func writeFrame(w io.Writer, header map[string]any, sections ...[]byte) error {
	sizes := make([]int, len(sections))
	for i, s := range sections {
		sizes[i] = len(s)
	}
	header["sizes"] = sizes
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(h))
	binary.BigEndian.PutUint32(buf, uint32(len(h)))
	buf = append(buf, h...)
	// Small payloads go in the same write; large ones are written in place.
	total := 0
	for _, s := range sections {
		total += len(s)
	}
	if total <= 64<<10 {
		for _, s := range sections {
			buf = append(buf, s...)
		}
		_, err = w.Write(buf)
		return err
	}
	if _, err = w.Write(buf); err != nil {
		return err
	}
	for _, s := range sections {
		if _, err = w.Write(s); err != nil {
			return err
		}
	}
	return nil
}

// appendSizes closes a hand-written JSON header (an object left open)
// with the sections' "sizes".
func appendSizes(hdr []byte, sections [][]byte) []byte {
	hdr = append(hdr, `,"sizes":[`...)
	for i, s := range sections {
		if i > 0 {
			hdr = append(hdr, ',')
		}
		hdr = strconv.AppendInt(hdr, int64(len(s)), 10)
	}
	return append(hdr, "]}"...)
}

// frame is a decoded frame.
type frame struct {
	raw      json.RawMessage
	sections [][]byte
}

// readFrame reads one frame (the header stays raw; decode it with
// frame.decode).
func readFrame(r io.Reader) (*frame, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	return readFrameAfter(r, h)
}

// readFrameAfter reads the sections of the frame whose header h was just
// read.
func readFrameAfter(r io.Reader, h []byte) (*frame, error) {
	var sz struct {
		Sizes []int64 `json:"sizes"`
	}
	if err := json.Unmarshal(h, &sz); err != nil {
		return nil, fmt.Errorf("frame header: %w", err)
	}
	return readSections(r, h, sz.Sizes)
}

// okEventPrefix and okEventSuffix frame the bridge's "ok" event header as
// the bridge writes it: {"event":"ok","hs":[7,9]}, no sections.
const (
	okEventPrefix = `{"event":"ok","hs":[`
	okEventSuffix = `]}`
)

// parseOKEvent reads an "ok" event header written exactly as the bridge
// writes it (okEventPrefix, handles in decimal separated by commas,
// okEventSuffix), appending its handles to hs; anything else (another
// frame, or the same event spelled otherwise, which the JSON decoder then
// reads) returns false.
func parseOKEvent(raw []byte, hs []objHandle) ([]objHandle, bool) {
	if !bytes.HasPrefix(raw, []byte(okEventPrefix)) || !bytes.HasSuffix(raw[len(okEventPrefix):], []byte(okEventSuffix)) {
		return hs, false
	}
	body := raw[len(okEventPrefix) : len(raw)-len(okEventSuffix)]
	if len(body) == 0 {
		return hs, true
	}
	for len(body) > 0 {
		i := bytes.IndexByte(body, ',')
		num := body
		if i >= 0 {
			num, body = body[:i], body[i+1:]
			if len(body) == 0 {
				return hs, false // a trailing comma
			}
		} else {
			body = nil
		}
		// Digits only, no leading zero (as JSON and Python's str write
		// them), at most 18 (no overflow).
		if len(num) == 0 || len(num) > 18 || (num[0] == '0' && len(num) > 1) {
			return hs, false
		}
		var h int64
		for _, c := range num {
			if c < '0' || c > '9' {
				return hs, false
			}
			h = h*10 + int64(c-'0')
		}
		hs = append(hs, objHandle(h))
	}
	return hs, true
}

// sizedHeader is a frame header type that carries the sections' sizes
// (its "sizes" member).
type sizedHeader interface{ sectionSizes() []int64 }

// readFrameInto reads one frame whose header decodes into h: one JSON
// decode where readFrame and frame.decode make two (the leaf's request
// loop, once per leaf).
func readFrameInto(r io.Reader, h sizedHeader) (*frame, error) {
	raw, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, h); err != nil {
		return nil, fmt.Errorf("frame header: %w", err)
	}
	return readSections(r, raw, h.sectionSizes())
}

// readHeader reads a frame's length-prefixed header.
func readHeader(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxHeaderBytes {
		return nil, fmt.Errorf("frame header of %d bytes exceeds %d", size, maxHeaderBytes)
	}
	h := make([]byte, size)
	if _, err := io.ReadFull(r, h); err != nil {
		return nil, unexpectedEOF(err)
	}
	return h, nil
}

// readSections reads the sections that follow header h.
func readSections(r io.Reader, h []byte, sizes []int64) (*frame, error) {
	f := &frame{raw: h, sections: make([][]byte, len(sizes))}
	for i, s := range sizes {
		if s < 0 || s > maxSectionBytes {
			return nil, fmt.Errorf("frame section of %d bytes", s)
		}
		sec, err := readSection(r, s)
		if err != nil {
			return nil, err
		}
		f.sections[i] = sec
	}
	return f, nil
}

// directSectionBytes is the largest section allocated before its bytes
// arrive.
const directSectionBytes = 16 << 20

// readSection reads exactly n bytes. Up to directSectionBytes it allocates
// n at once; beyond, memory grows with the bytes actually read, so a header
// announcing a huge section on a short stream cannot make the reader
// allocate it up front.
func readSection(r io.Reader, n int64) ([]byte, error) {
	if n <= directSectionBytes {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, unexpectedEOF(err)
		}
		return b, nil
	}
	var buf bytes.Buffer
	buf.Grow(directSectionBytes)
	got, err := buf.ReadFrom(io.LimitReader(r, n))
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (f *frame) decode(v any) error { return json.Unmarshal(f.raw, v) }

func (f *frame) section(i int) []byte {
	if i < 0 || i >= len(f.sections) {
		return nil
	}
	return f.sections[i]
}
