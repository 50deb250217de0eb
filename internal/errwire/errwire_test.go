package errwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type codeErr struct {
	Code int `json:"code"`
}

func (e *codeErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

var (
	errNegative = errors.New("negative")
	errOther    = errors.New("negative") // same message, not registered
)

func init() {
	RegisterType(reflect.TypeFor[*codeErr]())
	RegisterSentinel(errNegative, 0)
}

func roundTrip(t *testing.T, err error) error {
	t.Helper()
	got, derr := Unmarshal(jsonCodec{}, Marshal(jsonCodec{}, err))
	if derr != nil {
		t.Fatal(derr)
	}
	return got
}

// messages lists every link's Error() text in pre-order.
func messages(err error) []string {
	var out []string
	Walk(err, func(e error) bool { out = append(out, e.Error()); return true })
	return out
}

func TestChainRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"typed wrapped", fmt.Errorf("calling billing for item %d: %w", 2, &codeErr{429})},
		{"typed alone", &codeErr{500}},
		{"sentinel wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("inner %d: %w", 3, errNegative))},
		{"joined", errors.Join(errNegative, &codeErr{1}, errors.New("plain"))},
		{"multi %w", fmt.Errorf("a %w b %w", errNegative, &codeErr{7})},
		{"plain", errors.New("just text")},
		{"stdlib sentinel unregistered", fmt.Errorf("reading: %w", io.EOF)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := roundTrip(t, tc.err)
			if got.Error() != tc.err.Error() {
				t.Fatalf("Error() %q, want %q", got, tc.err)
			}
			if diff := cmp.Diff(messages(tc.err), messages(got)); diff != "" {
				t.Fatalf("messages of the chain (-local +decoded):\n%s", diff)
			}
			if want, have := errors.Is(tc.err, errNegative), errors.Is(got, errNegative); want != have {
				t.Fatalf("errors.Is(ErrNegative): local %v, decoded %v", want, have)
			}
			if errors.Is(got, errOther) {
				t.Fatal("an unregistered sentinel with the same message matched")
			}
			var lw, gw *codeErr
			if want, have := errors.As(tc.err, &lw), errors.As(got, &gw); want != have || (want && *lw != *gw) {
				t.Fatalf("errors.As(*codeErr): local %v %v, decoded %v %v", want, lw, have, gw)
			}
		})
	}
	// A typed error alone comes back as itself, not a wrapper.
	if _, ok := roundTrip(t, &codeErr{3}).(*codeErr); !ok {
		t.Fatal("a lone typed error is wrapped")
	}
	// An unregistered link is a *Remote with its type name.
	var r *Remote
	if got := roundTrip(t, fmt.Errorf("x: %w", io.EOF)); !errors.As(got, &r) || r.Type != "*fmt.wrapError" {
		t.Fatalf("want a *Remote *fmt.wrapError, got %#v", got)
	}
}

func TestChainBounds(t *testing.T) {
	t.Parallel()
	// MaxLinks links are kept; one more is dropped (and counted).
	deep := func(n int) error {
		err := error(&codeErr{0})
		for i := 1; i < n; i++ {
			err = fmt.Errorf("l%d: %w", i, err)
		}
		return err
	}
	if c := Encode(jsonCodec{}, deep(MaxLinks)); len(c.Links) != MaxLinks || c.Dropped != 0 {
		t.Fatalf("at the cap: %d links, %d dropped", len(c.Links), c.Dropped)
	}
	c := Encode(jsonCodec{}, deep(MaxLinks+1))
	if len(c.Links) != MaxLinks || c.Dropped != 1 {
		t.Fatalf("one over: %d links, %d dropped", len(c.Links), c.Dropped)
	}
	got, err := Decode(jsonCodec{}, c)
	if err != nil || got.Error() != deep(MaxLinks+1).Error() {
		t.Fatalf("the top message must survive: %v %v", got, err)
	}
	// A message of MaxMessageBytes is kept; one byte more is cut.
	at := strings.Repeat("é", MaxMessageBytes/2)
	if got := roundTrip(t, errors.New(at)); got.Error() != at {
		t.Fatal("a message at the cap was changed")
	}
	over := roundTrip(t, errors.New(at+"x")).Error()
	if len(over) > MaxMessageBytes || !strings.HasSuffix(over, truncMarker) || !strings.HasPrefix(over, "éé") {
		t.Fatalf("one over the cap: %d bytes", len(over))
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []string{
		`{"v":2,"links":[{"message":"x"}]}`,
		`{"v":1,"links":[]}`,
		`{"v":1,"links":[{"message":"x","wraps":[0]}]}`,
		`{"v":1,"links":[{"message":"x","wraps":[5]}]}`,
		`{"v":1,"links":[{"message":"x","wraps":[1]},{"message":"y","wraps":[0]}]}`,
		`not json`,
	} {
		if _, err := Unmarshal(jsonCodec{}, []byte(tc)); err == nil {
			t.Errorf("%s: accepted", tc)
		}
	}
}

type sliceErr []string

func (e sliceErr) Error() string { return strings.Join(e, ",") }

func TestRegisterSentinel(t *testing.T) {
	t.Parallel()
	RegisterSentinel(errNegative, 0) // again: no-op
	mustPanic := func(name string, f func()) {
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("same name, other value", func() { RegisterSentinel(errOther, 0) })
	mustPanic("nil", func() { RegisterSentinel(nil, 0) })
	mustPanic("not comparable", func() { RegisterSentinel(sliceErr{"a"}, 0) })
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(Marshal(jsonCodec{}, fmt.Errorf("a: %w", &codeErr{1})))
	f.Add(Marshal(jsonCodec{}, errors.Join(errNegative, errors.New("b"))))
	f.Add([]byte(`{"v":1,"links":[{"message":"x","type":"*errwire.codeErr","value":"bnVsbA=="}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err, derr := Unmarshal(jsonCodec{}, data)
		if derr != nil {
			return
		}
		_ = err.Error()
		errors.Is(err, errNegative)
		var c *codeErr
		errors.As(err, &c)
	})
}

// TestOriginalTypeAndSentinelSurviveTheWire: every link of a decoded chain
// reports the Go type name (OriginalType) and registered sentinel name
// (RegisteredSentinel) its original link had, in the same order, so that
// a name recorded from either side is the same.
func TestOriginalTypeAndSentinelSurviveTheWire(t *testing.T) {
	t.Parallel()
	type link struct{ Type, Sentinel string }
	links := func(err error) []link {
		var out []link
		Walk(err, func(e error) bool {
			if ty := OriginalType(e); ty != "" {
				out = append(out, link{ty, RegisteredSentinel(e)})
			}
			return true
		})
		return out
	}
	for name, err := range map[string]error{
		"unregistered":         fmt.Errorf("a: %w", io.EOF),
		"plain":                errors.New("plain"),
		"sentinel":             fmt.Errorf("a: %w", errNegative),
		"typed":                &codeErr{2},
		"typed wrapping more":  &wrapCode{codeErr{4}, errNegative},
		"joined":               errors.Join(&codeErr{1}, fmt.Errorf("b: %w", errOther)),
		"unregistered wrapper": fmt.Errorf("c: %w", &wrapCode{codeErr{5}, io.EOF}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, got := links(err), links(roundTrip(t, err))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("links of the decoded chain differ from the original's (-original +decoded):\n%s", diff)
			}
		})
	}
	if RegisteredSentinel(errOther) != "" || RegisteredSentinel(nil) != "" || OriginalType(nil) != "" {
		t.Fatal("an unregistered sentinel or nil has a name")
	}
	if RegisteredSentinel(errNegative) == "" {
		t.Fatal("the registered sentinel has no name")
	}
}

// wrapCode is a registered type that wraps a further error.
type wrapCode struct {
	codeErr
	Err error `json:"-"`
}

func (e *wrapCode) Error() string { return e.codeErr.Error() + ": " + e.Err.Error() }
func (e *wrapCode) Unwrap() error { return e.Err }

func init() { RegisterType(reflect.TypeFor[*wrapCode]()) }

// Walk visits the tree in pre-order, depth first, skipping nil links, and
// stops at the first link visit refuses.
func TestWalk(t *testing.T) {
	t.Parallel()
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	tree := fmt.Errorf("top: %w", errors.Join(fmt.Errorf("left: %w", a), b, &wrapCode{codeErr{7}, c}))
	for _, tc := range []struct {
		name   string
		err    error
		stopAt string // the message at which visit returns false; "" never
		want   []string
		end    bool
	}{
		{"nil", nil, "", nil, true},
		{"one link", a, "", []string{"a"}, true},
		{"a tree", tree, "", []string{tree.Error(), errors.Unwrap(tree).Error(), "left: a", "a", "b", "code 7: c", "c"}, true},
		{"stops at the first refusal", tree, "b", []string{tree.Error(), errors.Unwrap(tree).Error(), "left: a", "a", "b"}, false},
		{"stops at the root", tree, tree.Error(), []string{tree.Error()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			end := Walk(tc.err, func(e error) bool {
				got = append(got, e.Error())
				return e.Error() != tc.stopAt
			})
			if diff := cmp.Diff(tc.want, got); diff != "" || end != tc.end {
				t.Errorf("Walk: end %v, want %v; visits (-want +got):\n%s", end, tc.end, diff)
			}
		})
	}
}
