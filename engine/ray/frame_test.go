package ray

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{0xab}, 64<<10+1)              // over the single-write threshold
	huge := bytes.Repeat([]byte{0xcd}, directSectionBytes+1) // read growing, not reserved
	for _, tc := range []struct {
		name     string
		header   map[string]any
		sections [][]byte
	}{
		{"no sections", map[string]any{"op": "stats", "id": 3}, nil},
		{"empty section", map[string]any{"op": "put", "h": 1}, [][]byte{{}}},
		{"binary sections", map[string]any{"op": "submit"}, [][]byte{{0, 1, 2, 0xff}, []byte(`{"not":"json`)}},
		{"large section", map[string]any{"op": "put"}, [][]byte{big, {1}}},
		{"sections at and over the direct read cap", map[string]any{"op": "put"}, [][]byte{huge[:directSectionBytes], huge}},
		{"unicode header", map[string]any{"message": "caf\u00e9 \u2603"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := writeFrame(&buf, tc.header, tc.sections...); err != nil {
				t.Fatal(err)
			}
			f, err := readFrame(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes left after the frame", buf.Len())
			}
			var h map[string]any
			if err := f.decode(&h); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				if k == "sizes" {
					continue
				}
				if got, ok := h[k]; !ok || (k != "id" && k != "h" && got != v) {
					t.Fatalf("header %s: got %v, want %v", k, got, v)
				}
			}
			if len(f.sections) != len(tc.sections) {
				t.Fatalf("%d sections, want %d", len(f.sections), len(tc.sections))
			}
			for i := range tc.sections {
				if !bytes.Equal(f.section(i), tc.sections[i]) {
					t.Fatalf("section %d differs", i)
				}
			}
			if f.section(-1) != nil || f.section(len(tc.sections)) != nil {
				t.Fatal("an out-of-range section is not nil")
			}
		})
	}
}

// frameBytes is a raw frame with the given header text and trailing bytes.
func frameBytes(header string, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	return append(append(b, header...), rest...)
}

func TestReadFrameRejects(t *testing.T) {
	t.Parallel()
	atCap := make([]byte, 4)
	binary.BigEndian.PutUint32(atCap, maxHeaderBytes+1)
	for _, tc := range []struct {
		name string
		in   []byte
		want string // "" for io.EOF
		eof  error
	}{
		{"empty stream", nil, "", io.EOF},
		{"short length", []byte{0, 0}, "", io.ErrUnexpectedEOF},
		{"header over the cap", atCap, "exceeds", nil},
		{"short header", frameBytes(`{"sizes":[]}`)[:8], "", io.ErrUnexpectedEOF},
		{"header not json", frameBytes(`{"sizes":`), "frame header", nil},
		{"sizes not numbers", frameBytes(`{"sizes":["a"]}`), "frame header", nil},
		{"negative size", frameBytes(`{"sizes":[-1]}`), "frame section of -1 bytes", nil},
		{"size over the cap", frameBytes(`{"sizes":[17179869185]}`), "frame section of 17179869185 bytes", nil},
		{"short section", frameBytes(`{"sizes":[4]}`, 1, 2), "", io.ErrUnexpectedEOF},
		{"short huge section", frameBytes(`{"sizes":[17179869184]}`, 1, 2), "", io.ErrUnexpectedEOF},
	} {
		for reader, read := range frameReaders {
			t.Run(tc.name+"/"+reader, func(t *testing.T) {
				t.Parallel()
				_, err := read(tc.in)
				switch {
				case err == nil:
					t.Fatal("accepted")
				case tc.eof != nil && !errors.Is(err, tc.eof):
					t.Fatalf("got %v, want %v", err, tc.eof)
				case tc.want != "" && !strings.Contains(err.Error(), tc.want):
					t.Fatalf("got %v, want it to mention %q", err, tc.want)
				}
			})
		}
	}
}

// frameReaders are readFrame and readFrameInto (with the leaf's request
// header), which must accept and refuse the same frames.
var frameReaders = map[string]func([]byte) (*frame, error){
	"readFrame": func(in []byte) (*frame, error) { return readFrame(bytes.NewReader(in)) },
	"readFrameInto": func(in []byte) (*frame, error) {
		var h leafInbound
		return readFrameInto(bytes.NewReader(in), &h)
	},
}

// The header cap is exact: a header of maxHeaderBytes is read.
func TestReadFrameHeaderAtCap(t *testing.T) {
	t.Parallel()
	h := `{"sizes":[],"pad":"` + strings.Repeat("x", maxHeaderBytes-len(`{"sizes":[],"pad":""}`)) + `"}`
	if len(h) != maxHeaderBytes {
		t.Fatalf("header is %d bytes", len(h))
	}
	if _, err := readFrame(bytes.NewReader(frameBytes(h))); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadFrame: any byte stream either decodes into a frame that
// re-encodes to a frame with the same sections, or fails; never a panic,
// and memory is bounded by the input (sections are read, not reserved).
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = writeFrame(&buf, map[string]any{"op": "put", "h": 1}, []byte("abc"), nil)
	f.Add(buf.Bytes())
	f.Add(frameBytes(`{"sizes":[2]}`, 'h', 'i'))
	f.Add(frameBytes(`{"sizes":[17179869184]}`))
	f.Add(frameBytes(`{"id":1,"ok":true}`))
	f.Add(frameBytes(`{"name":"s","node":"n","bound":true,"sizes":[1,1]}`, 'b', 'i'))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := readFrame(bytes.NewReader(in))
		var lh leafInbound
		if typed, terr := readFrameInto(bytes.NewReader(in), &lh); terr == nil {
			// A frame the leaf reads is a frame, with the same sections.
			if err != nil {
				t.Fatalf("readFrameInto accepted what readFrame refuses: %v", err)
			}
			if !slices.EqualFunc(typed.sections, fr.sections, bytes.Equal) {
				t.Fatal("readFrameInto's sections differ from readFrame's")
			}
		}
		if err != nil {
			return
		}
		var h map[string]any
		if err := fr.decode(&h); err != nil {
			t.Fatalf("a decoded frame's header does not decode: %v", err)
		}
		var out bytes.Buffer
		if err := writeFrame(&out, h, fr.sections...); err != nil {
			return // e.g. a number JSON cannot re-encode
		}
		again, err := readFrame(&out)
		if err != nil {
			t.Fatalf("re-encoded frame: %v", err)
		}
		if len(again.sections) != len(fr.sections) {
			t.Fatal("section count changed")
		}
		for i := range fr.sections {
			if !bytes.Equal(again.sections[i], fr.sections[i]) {
				t.Fatalf("section %d changed", i)
			}
		}
	})
}

// TestHandWrittenFrames checks the collect and release frames, whose
// headers are written without encoding/json: they must decode to what the
// bridge reads (PROTOCOL.md), sections in argument order.
func TestHandWrittenFrames(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	b := &rayBridge{w: bufio.NewWriter(&out), live: map[objHandle]bool{}}
	args := []taskArg{{Handle: 7}, {Bytes: []byte("one")}, {Handle: 9}, {Bytes: []byte{}}}
	h, err := b.Collect(context.Background(), args, true)
	if err != nil {
		t.Fatal(err)
	}
	b.Release([]objHandle{3, 4, 5})
	b.Release([]objHandle{6})

	type arg struct {
		H *int64 `json:"h"`
		S *int   `json:"s"`
	}
	var collect struct {
		Op     string `json:"op"`
		ID     int    `json:"id"`
		H      int64  `json:"h"`
		Concat bool   `json:"concat"`
		Args   []arg  `json:"args"`
	}
	f, err := readFrame(&out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(f.raw, &collect); err != nil {
		t.Fatalf("collect header %s: %v", f.raw, err)
	}
	if collect.Op != "collect" || collect.ID != 0 || collect.H != int64(h) || !collect.Concat || len(collect.Args) != 4 {
		t.Fatalf("collect header %s", f.raw)
	}
	for i, a := range args {
		got := collect.Args[i]
		switch {
		case a.Handle != 0 && (got.H == nil || *got.H != int64(a.Handle) || got.S != nil):
			t.Fatalf("arg %d: %s", i, f.raw)
		case a.Handle == 0 && (got.S == nil || got.H != nil || !bytes.Equal(f.section(*got.S), a.Bytes)):
			t.Fatalf("arg %d: %s", i, f.raw)
		}
	}
	for _, want := range [][]int64{{3, 4, 5}, {6}} {
		var release struct {
			Op      string  `json:"op"`
			Handles []int64 `json:"handles"`
		}
		f, err := readFrame(&out)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(f.raw, &release); err != nil || release.Op != "release" || !slices.Equal(release.Handles, want) {
			t.Fatalf("release header %s (%v), want handles %v", f.raw, err, want)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes left", out.Len())
	}
}
