package validatecmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/registry"
	"github.com/rayflow/rayflow/gen/rt"
	gensummary "github.com/rayflow/rayflow/gen/summary"
)

func TestRun(t *testing.T) {
	t.Parallel()
	valid := "../../../schema/testdata/valid/LifecycleSnapshot/base.json"
	invalid := "../../../schema/testdata/invalid/LifecycleSnapshot/capacity_queue.json"
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"valid", []string{"--schema", "LifecycleSnapshot", valid}, ExitOK, valid + ": ok\n"},
		{"hash prefix", []string{"--schema", "#LifecycleSnapshot", valid}, ExitOK, valid + ": ok\n"},
		{"invalid", []string{"--schema", "LifecycleSnapshot", valid, invalid}, ExitInvalid, invalid + ": /capacity/queue_capacity: CONST: must be 0\n"},
		{"unknown schema", []string{"--schema", "Nope", valid}, ExitUsage, ""},
		{"no files", []string{"--schema", "LifecycleSnapshot"}, ExitUsage, ""},
		{"missing file", []string{"--schema", "LifecycleSnapshot", "nope.json"}, ExitError, ""},
		{"list", []string{"-list"}, ExitOK, "LifecycleSnapshot\n"},
		{"help", []string{"--help"}, ExitOK, "Examples:\n  rayflow validate --schema Plan plan.json\n"},
		{"help short", []string{"-h"}, ExitOK, "Usage: rayflow validate --schema DEF FILE...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Fatalf("stdout %q does not contain %q", out.String(), tt.out)
			}
		})
	}
}

// padded returns the record in file with spaces after its first byte so
// that it is exactly n bytes long.
func padded(t *testing.T, file string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > n {
		t.Fatalf("%s is %d bytes, more than %d", file, len(b), n)
	}
	return slices.Concat(b[:1], bytes.Repeat([]byte{' '}, n-len(b)), b[1:])
}

// TestRecordSizeEdges validates records at their definition's byte cap and
// one byte over it, from regular files, /dev/zero and a pipe that never
// ends: a record is read only up to its cap plus one byte.
func TestRecordSizeEdges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	summary, ok := registry.Lookup("Summary")
	if !ok || summary.MaxBytes != gensummary.SummaryMaxBytes {
		t.Fatalf("registry: Summary has cap %d, want %d", summary.MaxBytes, gensummary.SummaryMaxBytes)
	}
	// NodeFanout has no cap of its own: it is read up to the largest.
	if s, _ := registry.Lookup("NodeFanout"); s.MaxBytes != 0 {
		t.Fatalf("NodeFanout has a cap (%d); pick a definition without one", s.MaxBytes)
	}
	base := "../../../schema/testdata/valid/Summary/base.json"
	fanout := "../../../schema/testdata/valid/NodeFanout/base.json"
	capped := gensummary.SummaryMaxBytes
	largest := registry.MaxRecordBytes
	atCap := write("at_cap.json", padded(t, base, capped))
	overCap := write("over_cap.json", padded(t, base, capped+1))
	farOver := write("far_over.json", padded(t, base, 8<<20))
	fanoutAt := write("fanout_at.json", padded(t, fanout, largest))
	fanoutOver := write("fanout_over.json", padded(t, fanout, largest+1))
	tooLarge := func(name string, n, limit int) string {
		return fmt.Sprintf("%s: /: TOO_LARGE: record is %d bytes, more than the %d-byte cap\n", name, n, limit)
	}
	stream := func(name string, limit int) string {
		return fmt.Sprintf("%s: /: TOO_LARGE: record is more than the %d-byte cap (reading stopped at %d bytes)\n", name, limit, limit+1)
	}
	// An endless pipe, as stdin would be: the writer blocks once the
	// command stops reading, and ends when the read end is closed.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() {
		zeros := make([]byte, 1<<16)
		for {
			if _, err := w.Write(zeros); err != nil {
				w.Close()
				return
			}
		}
	}()
	pipe := fmt.Sprintf("/dev/fd/%d", r.Fd())
	for _, tc := range []struct {
		name   string
		schema string
		file   string
		code   int
		out    string
	}{
		{"at the cap", "Summary", atCap, ExitOK, atCap + ": ok\n"},
		{"one over the cap", "Summary", overCap, ExitInvalid, tooLarge(overCap, capped+1, capped)},
		{"8 MiB over the cap", "Summary", farOver, ExitInvalid, tooLarge(farOver, 8<<20, capped)},
		{"no cap of its own, at the largest", "NodeFanout", fanoutAt, ExitOK, fanoutAt + ": ok\n"},
		{"no cap of its own, one over the largest", "NodeFanout", fanoutOver, ExitInvalid, tooLarge(fanoutOver, largest+1, largest)},
		{"/dev/zero", "Summary", "/dev/zero", ExitInvalid, stream("/dev/zero", capped)},
		{"/dev/zero, no cap of its own", "NodeFanout", "/dev/zero", ExitInvalid, stream("/dev/zero", largest)},
		{"an endless pipe", "Summary", pipe, ExitInvalid, stream(pipe, capped)},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"--schema", tc.schema, tc.file}, &out, &errb)
		if code != tc.code || out.String() != tc.out {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", tc.name, code, out.String(), errb.String(), tc.code, tc.out)
		}
	}
}

// countingReader hands out zeros, up to n bytes, and counts what was read.
type countingReader struct{ read, n int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	k := min(len(p), c.n-c.read)
	clear(p[:k])
	c.read += k
	return k, nil
}

// TestReadRecordStopsAfterTheCap: a record longer than its cap is read to
// its cap plus one byte, not to its end.
func TestReadRecordStopsAfterTheCap(t *testing.T) {
	t.Parallel()
	const limit = 16384
	for _, tc := range []struct {
		name      string
		size      int
		wantRead  int
		tooLarge  bool
		wantBytes int
	}{
		{"empty", 0, 0, false, 0},
		{"at the cap", limit, limit, false, limit},
		{"one over", limit + 1, limit + 1, true, 0},
		{"64 MiB", 64 << 20, limit + 1, true, 0},
	} {
		c := &countingReader{n: tc.size}
		data, err := readRecord(c, limit)
		var ve *rt.ValidationError
		if c.read != tc.wantRead || len(data) != tc.wantBytes || errors.As(err, &ve) != tc.tooLarge || (err != nil) != tc.tooLarge ||
			(tc.tooLarge && !ve.Has(rt.CodeTooLarge)) {
			t.Errorf("%s: read %d bytes, returned %d, error %v; want %d read, %d returned, TOO_LARGE %v",
				tc.name, c.read, len(data), err, tc.wantRead, tc.wantBytes, tc.tooLarge)
		}
	}
}
