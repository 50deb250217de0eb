package errwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"
)

// Version is the chain encoding's version ("v" in the document).
const Version = 1

// Bounds of an encoded chain: links beyond MaxLinks are dropped (the last
// kept link still carries its full message), and a message over
// MaxMessageBytes is cut at a rune boundary with a marker.
const (
	MaxLinks        = 32
	MaxMessageBytes = 32 << 10
	truncMarker     = "…(truncated)"
)

// Codec encodes registered error values (sdk.Codec satisfies it).
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

var registry = struct {
	sync.RWMutex
	types     map[string]reflect.Type
	sentinels map[string]error
}{types: map[string]reflect.Type{}, sentinels: map[string]error{}}

// RegisterType registers t (an error type) under its Go type name.
func RegisterType(t reflect.Type) {
	registry.Lock()
	defer registry.Unlock()
	registry.types[t.String()] = t
}

// LookupType returns the registered type called name.
func LookupType(name string) (reflect.Type, bool) {
	registry.RLock()
	defer registry.RUnlock()
	t, ok := registry.types[name]
	return t, ok
}

// SentinelName is the wire name of a sentinel registered from package
// pkg: "pkg:<Go type>:<message>".
func SentinelName(pkg string, err error) string {
	return pkg + ":" + reflect.TypeOf(err).String() + ":" + err.Error()
}

// RegisterSentinel registers err, a comparable error value such as
// errors.New's, under its name from the package that calls the function
// that called RegisterSentinel (skip frames above this one). Registering
// the same value twice is a no-op; a different value with the same name
// (same package, type and message) panics.
func RegisterSentinel(err error, skip int) string {
	if err == nil {
		panic("rayflow: RegisterSentinel(nil)")
	}
	if !reflect.TypeOf(err).Comparable() {
		panic(fmt.Sprintf("rayflow: RegisterSentinel: %T is not comparable, so it cannot be a sentinel (register the type with RegisterErrorType)", err))
	}
	pkg := "unknown"
	if pc, _, _, ok := runtime.Caller(skip + 1); ok {
		if f := runtime.FuncForPC(pc); f != nil {
			pkg = funcPackage(f.Name())
		}
	}
	name := SentinelName(pkg, err)
	registry.Lock()
	defer registry.Unlock()
	if prev, ok := registry.sentinels[name]; ok && prev != err {
		panic(fmt.Sprintf("rayflow: RegisterSentinel: another sentinel is registered as %q (same package, type and message)", name))
	}
	registry.sentinels[name] = err
	return name
}

// funcPackage is the package path of a function symbol
// ("example.com/app/billing.init.0" → "example.com/app/billing").
func funcPackage(sym string) string {
	slash := strings.LastIndex(sym, "/")
	if dot := strings.Index(sym[slash+1:], "."); dot >= 0 {
		return sym[:slash+1+dot]
	}
	return sym
}

// RegisteredSentinel returns the name e is registered under
// (RegisterSentinel), or "" when e is no registered sentinel. A decoded
// chain holds the registered value itself, so the name is the same on
// both sides of the wire.
func RegisteredSentinel(e error) string {
	if e == nil {
		return ""
	}
	return sentinelName(e)
}

// OriginalType is the Go type name e had where it was created: a
// *Remote's Type, "" for the wrapper a decoded registered value that
// wrapped further links comes in (the value follows it in Unwrap), and
// e's own type name otherwise.
func OriginalType(e error) string {
	switch v := e.(type) {
	case nil:
		return ""
	case *Remote:
		return v.Type
	case *typedWrapper:
		return ""
	}
	return reflect.TypeOf(e).String()
}

// sentinelName returns the registered name of e, or "".
func sentinelName(e error) (name string) {
	if !reflect.TypeOf(e).Comparable() {
		return ""
	}
	// A comparable type can still hold an incomparable interface value.
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	registry.RLock()
	defer registry.RUnlock()
	for name, s := range registry.sentinels {
		if s == e {
			return name
		}
	}
	return ""
}

func lookupSentinel(name string) (error, bool) {
	registry.RLock()
	defer registry.RUnlock()
	e, ok := registry.sentinels[name]
	return e, ok
}

// Walk visits err's tree (Unwrap() error and Unwrap() []error) in
// pre-order, depth first, skipping nil links, until visit returns false;
// it reports whether the walk went to the end.
func Walk(err error, visit func(error) bool) bool {
	if err == nil {
		return true
	}
	if !visit(err) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !Walk(e, visit) {
				return false
			}
		}
	}
	return true
}

// Chain is the encoded form of an error tree, links in pre-order; link 0
// is the error itself.
type Chain struct {
	V     int    `json:"v"`
	Links []Link `json:"links"`
	// Dropped counts links left out over MaxLinks.
	Dropped int `json:"dropped,omitempty"`
}

// Link is one error of the tree.
type Link struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	// Value is the codec's encoding of a link whose type is registered.
	Value []byte `json:"value,omitempty"`
	// Sentinel names a registered sentinel value.
	Sentinel string `json:"sentinel,omitempty"`
	// Wraps are the indexes of the links this one wraps (Unwrap).
	Wraps []int `json:"wraps,omitempty"`
}

// Encode walks err's tree (Unwrap() error and Unwrap() []error) and
// encodes it. It never fails: a value the codec cannot encode is sent as
// an unregistered link (message and type name).
func Encode(codec Codec, err error) Chain {
	c := Chain{V: Version}
	var walk func(e error) int
	walk = func(e error) int {
		if len(c.Links) >= MaxLinks {
			c.Dropped++
			return -1
		}
		i := len(c.Links)
		c.Links = append(c.Links, Link{Message: bound(e.Error()), Type: reflect.TypeOf(e).String()})
		if name := sentinelName(e); name != "" {
			c.Links[i].Sentinel = name
		} else if _, ok := LookupType(c.Links[i].Type); ok && codec != nil {
			if b, mErr := codec.Marshal(e); mErr == nil {
				c.Links[i].Value = b
			}
		}
		var kids []error
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if k := u.Unwrap(); k != nil {
				kids = []error{k}
			}
		case interface{ Unwrap() []error }:
			for _, k := range u.Unwrap() {
				if k != nil {
					kids = append(kids, k)
				}
			}
		}
		var wraps []int
		for _, k := range kids {
			if j := walk(k); j >= 0 {
				wraps = append(wraps, j)
			}
		}
		c.Links[i].Wraps = wraps
		return i
	}
	if err != nil {
		walk(err)
	}
	return c
}

// Marshal encodes err's chain as JSON.
func Marshal(codec Codec, err error) []byte {
	b, _ := json.Marshal(Encode(codec, err))
	return b
}

func bound(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	cut := MaxMessageBytes - len(truncMarker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncMarker
}

// Remote is a link whose Go type is not registered (or whose value did
// not decode): its message and type name, and the links it wrapped.
type Remote struct {
	Type    string
	Message string
	Wrapped []error
}

func (e *Remote) Error() string { return e.Message }

// Unwrap returns the wrapped links, so errors.Is and errors.As look
// through an unregistered wrapper (fmt.Errorf's %w) to the registered
// errors and sentinels below it.
func (e *Remote) Unwrap() []error { return e.Wrapped }

// typedWrapper is a registered value that wrapped further links: errors.As
// finds the value, and errors.Is and errors.As continue into the links it
// wrapped (which a decoded value cannot hold itself).
type typedWrapper struct {
	msg   string
	value error
	kids  []error
}

func (e *typedWrapper) Error() string   { return e.msg }
func (e *typedWrapper) Unwrap() []error { return append([]error{e.value}, e.kids...) }

// Decode rebuilds the error tree. A malformed chain is an error.
func Decode(codec Codec, c Chain) (error, error) {
	if c.V != Version {
		return nil, fmt.Errorf("error chain version %d, want %d", c.V, Version)
	}
	if len(c.Links) == 0 || len(c.Links) > MaxLinks {
		return nil, fmt.Errorf("error chain of %d links", len(c.Links))
	}
	built := make([]error, len(c.Links))
	state := make([]uint8, len(c.Links)) // 0 new, 1 building, 2 built
	var build func(i int) (error, error)
	build = func(i int) (error, error) {
		switch state[i] {
		case 1:
			return nil, errors.New("error chain has a cycle")
		case 2:
			return built[i], nil
		}
		state[i] = 1
		l := c.Links[i]
		var kids []error
		for _, j := range l.Wraps {
			if j <= i || j >= len(c.Links) {
				return nil, fmt.Errorf("error chain link %d wraps link %d", i, j)
			}
			k, err := build(j)
			if err != nil {
				return nil, err
			}
			kids = append(kids, k)
		}
		var e error
		if l.Sentinel != "" {
			e, _ = lookupSentinel(l.Sentinel)
		}
		if e == nil && l.Value != nil {
			if v, ok := decodeValue(codec, l.Type, l.Value); ok {
				e = v
				if len(kids) > 0 {
					e = &typedWrapper{msg: l.Message, value: v, kids: kids}
				}
			}
		}
		if e == nil {
			e = &Remote{Type: l.Type, Message: l.Message, Wrapped: kids}
		}
		built[i], state[i] = e, 2
		return e, nil
	}
	return build(0)
}

// Unmarshal decodes a chain Marshal produced.
func Unmarshal(codec Codec, data []byte) (error, error) {
	var c Chain
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("error chain: %w", err)
	}
	return Decode(codec, c)
}

// DecodeValue decodes a registered type's value into a fresh error.
func decodeValue(codec Codec, typeName string, value []byte) (error, bool) {
	t, found := LookupType(typeName)
	if !found || codec == nil {
		return nil, false
	}
	p := reflect.New(t) // *E
	if t.Kind() == reflect.Pointer {
		p.Elem().Set(reflect.New(t.Elem()))
		if err := codec.Unmarshal(value, p.Elem().Interface()); err != nil {
			return nil, false
		}
	} else if err := codec.Unmarshal(value, p.Interface()); err != nil {
		return nil, false
	}
	e, ok := p.Elem().Interface().(error)
	return e, ok
}

// DecodeValue decodes one registered type's value (the pre-chain form).
func DecodeValue(codec Codec, typeName string, value []byte) (error, bool) {
	return decodeValue(codec, typeName, value)
}
