package ray

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// TestRawIO: a pipe wrapped by rawIO carries more than the pipe's
// capacity both ways (writes wait for room, reads for data, in the
// poller), reads end with io.EOF when the writer closes, a write to a pipe
// whose reader is gone fails with EPIPE, and a blocking descriptor is left
// as it is.
func TestRawIO(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rr, rw := rawIO(r), rawIO(w)
	if _, ok := rr.(*rawFile); !ok {
		t.Fatalf("os.Pipe's read end is not wrapped: %T", rr)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: many pipe buffers
	errc := make(chan error, 1)
	go func() {
		n, err := rw.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		errc <- errors.Join(err, w.Close())
	}()
	got, err := io.ReadAll(rr)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
	if n, err := rr.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the writer closed: %d, %v; want 0, EOF", n, err)
	}
	r.Close()

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if _, err := rawIO(w2).Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("writing to a pipe without a reader: %v, want EPIPE", err)
	}
	w2.Close()

	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	blocking := os.NewFile(uintptr(fds[0]), "blocking")
	defer blocking.Close()
	defer syscall.Close(fds[1])
	if f := rawIO(blocking); f != io.ReadWriter(blocking) {
		t.Fatalf("a blocking descriptor was wrapped: %T", f)
	}
}
