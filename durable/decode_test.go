package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/sdk"
)

// Unit tests and fuzzers that need no database (they run under -short).

func TestDecodeStrict(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"name":"a"}`, true},
		{` {"name":"a"} `, true},
		{`null`, true},
		{`{}`, true},
		{`{"name":"a","x":1}`, false},
		{`{"name":1}`, false},
		{`{"name":"a"} {}`, false},
		{`{"name":"a"}]`, false},
		{`[`, false},
		{``, false},
	} {
		_, err := decodeStrict[EchoIn]([]byte(c.in))
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidInput)) {
			t.Errorf("%q: %v", c.in, err)
		}
	}
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `null`, `{"name":"\u00e9"}`, `{"name":"a"} 1`, `{"x":1}`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeStrict[EchoIn](b)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error not ErrInvalidInput: %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		re, _ := json.Marshal(v)
		w, err := decodeStrict[EchoIn](re)
		if err != nil || w != v {
			t.Fatalf("round trip of %q: %v %v", b, w, err)
		}
	})
}

func TestCursor(t *testing.T) {
	for _, pk := range []int64{1, 42, 1 << 62} {
		got, err := parseCursor(encodeCursor(pk))
		if err != nil || got != pk {
			t.Errorf("%d: %d %v", pk, got, err)
		}
	}
	for _, bad := range []string{"!!", "MA", "LTE", "MDE", "YQ", "MQ=="} { // "0", "-1", "01", "a", padded "1"
		if _, err := parseCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzCursor(f *testing.F) {
	for _, s := range []string{"", "MQ", "NDI", "!!", "MDE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		pk, err := parseCursor(c)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatal(err)
			}
			return
		}
		if c != "" && (pk < 1 || encodeCursor(pk) != c) {
			t.Fatalf("%q → %d", c, pk)
		}
	})
}

func TestWorkerOptionBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		o    WorkerOptions
		ok   bool
	}{
		{"defaults", WorkerOptions{}, true},
		{"heartbeat at the stuck timeout", WorkerOptions{HeartbeatInterval: time.Minute, StuckTimeout: time.Minute}, false},
		{"heartbeat just below", WorkerOptions{HeartbeatInterval: time.Minute - 1, StuckTimeout: time.Minute}, true},
		{"backoff 3600 s", WorkerOptions{RetryBackoff: 3600 * time.Second}, true},
		{"backoff 3601 s", WorkerOptions{RetryBackoff: 3601 * time.Second}, false},
		{"concurrency 10000", WorkerOptions{Concurrency: 10000}, true},
		{"concurrency 10001", WorkerOptions{Concurrency: 10001}, false},
		{"poll max below poll", WorkerOptions{PollInterval: time.Second, PollMaxInterval: time.Second - 1}, false},
	} {
		o := c.o
		err := o.defaults()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidOption)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	o := WorkerOptions{}
	if err := o.defaults(); err != nil || o.Concurrency != 10 || o.HeartbeatInterval != 15*time.Second || o.StuckTimeout != 300*time.Second ||
		o.RetryBackoff != 60*time.Second || o.SweepInterval != 30*time.Second || o.Queue != "default" || o.Runner != "local" {
		t.Fatalf("defaults: %+v %v", o, err)
	}
}

func TestTruncate(t *testing.T) {
	s := string(make([]byte, 70000))
	if got := truncate(s, MaxErrorMessageBytes); len(got) > MaxErrorMessageBytes {
		t.Fatalf("%d bytes", len(got))
	}
	if got := truncate("ééé", 16); got != "ééé" {
		t.Fatal(got)
	}
	if got := truncate(string(make([]rune, 100)), 20); len(got) > 20 {
		t.Fatal(len(got))
	}
}

// TestErrTypeName: an attempt's recorded error type names a sentinel (the
// outermost in the chain) rather than *errors.errorString, and else the
// innermost typed error, past fmt's wrappers.
func TestErrTypeName(t *testing.T) {
	type leafErr struct{ error }
	for want, err := range map[string]error{
		"durable.ErrPlanChanged":    fmt.Errorf("%w (a new task is required): %w", ErrPlanChanged, fmt.Errorf("x: %w", sdk.ErrRetryPinMismatch)),
		"sdk.ErrRetryPinMismatch":   fmt.Errorf("run: %w", sdk.ErrRetryPinMismatch),
		"durable.ErrResultTooLarge": &permanent{fmt.Errorf("%w: 2 MiB", ErrResultTooLarge)},
		"context.DeadlineExceeded":  fmt.Errorf("step: %w", context.DeadlineExceeded),
		"*durable.leafErr":          fmt.Errorf("a: %w", fmt.Errorf("b: %w", &leafErr{errors.New("boom")})),
		"*errors.errorString":       errors.New("plain"),
		// From a Ray leaf: the type the error was created as.
		"*durable.remoteErr": &sdk.StepError{Err: &errwire.Remote{Type: "*fmt.wrapError",
			Wrapped: []error{&errwire.Remote{Type: "*durable.remoteErr"}}}},
	} {
		if got := errTypeName(err); got != want {
			t.Errorf("errTypeName(%v) = %s, want %s", err, got, want)
		}
	}
}
