package canonical

import (
	"cmp"
	"encoding"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Go values are encoded straight from memory: common dynamic types through
// a type switch, everything else through per-type encoders cached like
// encoding/json's. Struct fields follow encoding/json's tag rules (name,
// "-", omitempty, omitzero); nil slices and maps encode as [] and {} so that
// an empty collection has one canonical form.

// Number is a JSON number literal kept as text, as Decode returns it. An
// integer literal is encoded exactly; any other literal as a double.
type Number string

func (e *encoder) fail(rule Rule, detail string) error {
	return &Error{Rule: rule, Path: pointer(e.path), Offset: -1, Detail: detail}
}

func (e *encoder) checkDepth(depth int) error {
	if depth > e.c.maxDepth {
		return e.fail(RuleDepth, "exceeds maximum nesting depth "+strconv.Itoa(e.c.maxDepth))
	}
	return nil
}

// any encodes one Go value at the given depth.
func (e *encoder) any(v any, depth int) error {
	if err := e.checkDepth(depth); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		return e.str(x)
	case bool:
		e.bool(x)
	case float64:
		return e.float(x)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case map[string]any:
		return e.mapStringAny(x, depth)
	case []any:
		if e.c.capped && len(x) > MaxArrayItems {
			return e.fail(RuleArrayItems, "array exceeds "+strconv.Itoa(MaxArrayItems)+" items")
		}
		e.buf = append(e.buf, '[')
		for i, item := range x {
			if i > 0 {
				e.comma()
			}
			e.path = append(e.path, pathSeg{index: i})
			if err := e.any(item, depth+1); err != nil {
				return err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, ']')
	case Number:
		return e.number(string(x))
	case json.Number:
		return e.number(string(x))
	default:
		rv := reflect.ValueOf(v)
		return encoderFor(rv.Type(), e.c.normalize)(e, rv, depth)
	}
	e.maybeFlush()
	return nil
}

func (e *encoder) bool(b bool) {
	if b {
		e.buf = append(e.buf, "true"...)
	} else {
		e.buf = append(e.buf, "false"...)
	}
}

func (e *encoder) str(s string) error {
	s, err := e.c.value(s, false)
	if err != nil {
		err.(*Error).Path = pointer(e.path)
		return err
	}
	e.string(s)
	return nil
}

func (e *encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return e.fail(RuleNonFinite, "NaN and infinities are not allowed")
	}
	e.buf = appendFloat(e.buf, f, e.c.fold)
	return nil
}

// number encodes a JSON number literal held as text.
func (e *encoder) number(lit string) error {
	d := decoder{data: []byte(lit), c: e.c}
	if lit == "" || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
		return e.fail(RuleSyntax, "invalid number literal "+strconv.Quote(lit))
	}
	n, err := d.number()
	if err == nil && d.pos != len(lit) {
		err = d.fail(RuleSyntax, "invalid number literal "+strconv.Quote(lit))
	}
	if err != nil {
		err.(*Error).Path, err.(*Error).Offset = pointer(e.path), -1
		return err
	}
	e.node(&n)
	return nil
}

type keyed struct {
	key string
	val reflect.Value // used by reflected maps
	any any           // used by map[string]any
}

// sortKeys normalizes keys, sorts them and rejects NFC collisions.
func (e *encoder) sortKeys(ks []keyed) error {
	if e.c.capped && len(ks) > MaxObjectEntries {
		return e.fail(RuleObjectEntries, "object exceeds "+strconv.Itoa(MaxObjectEntries)+" members")
	}
	for i := range ks {
		k, err := e.c.key(ks[i].key)
		if err != nil {
			err.(*Error).Path = pointer(append(e.path, pathSeg{key: ks[i].key, index: -1}))
			return err
		}
		ks[i].key = k
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	for i := 1; i < len(ks); i++ {
		if ks[i].key == ks[i-1].key {
			return e.fail(RuleDuplicateKeyNFC, "two keys are equal after Unicode normalization: "+strconv.Quote(ks[i].key))
		}
	}
	return nil
}

func (e *encoder) mapStringAny(m map[string]any, depth int) error {
	ks := make([]keyed, 0, len(m))
	for k, v := range m {
		ks = append(ks, keyed{key: k, any: v})
	}
	if err := e.sortKeys(ks); err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	for i := range ks {
		if i > 0 {
			e.comma()
		}
		e.string(ks[i].key)
		e.colon()
		e.path = append(e.path, pathSeg{key: ks[i].key, index: -1})
		if err := e.any(ks[i].any, depth+1); err != nil {
			return err
		}
		e.path = e.path[:len(e.path)-1]
	}
	e.buf = append(e.buf, '}')
	e.maybeFlush()
	return nil
}

// encFunc encodes v at depth; the depth check has been done for values
// reached through e.any, and is done by container encoders for children.
type encFunc func(e *encoder, v reflect.Value, depth int) error

type cacheKey struct {
	t         reflect.Type
	normalize bool
}

var encoderCache sync.Map // cacheKey → encFunc

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[Number]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
	bigIntType        = reflect.TypeFor[big.Int]()
)

func encoderFor(t reflect.Type, normalize bool) encFunc {
	key := cacheKey{t, normalize}
	if f, ok := encoderCache.Load(key); ok {
		return f.(encFunc)
	}
	// Recursive types: publish an indirection first, then the real encoder.
	// The indirection waits on a mutex, not a WaitGroup: the cache is
	// process-wide, and a WaitGroup first used inside a synctest bubble
	// crashes the runtime when waited on from outside it (a mutex belongs
	// to no bubble).
	var (
		mu sync.Mutex
		f  encFunc
	)
	mu.Lock()
	fi, loaded := encoderCache.LoadOrStore(key, encFunc(func(e *encoder, v reflect.Value, depth int) error {
		mu.Lock()
		g := f
		mu.Unlock()
		return g(e, v, depth)
	}))
	if loaded {
		mu.Unlock()
		return fi.(encFunc)
	}
	f = newEncoder(t, normalize)
	mu.Unlock()
	encoderCache.Store(key, f)
	return f
}

func newEncoder(t reflect.Type, normalize bool) encFunc {
	switch t {
	case rawMessageType:
		return encodeRawMessage
	case numberType, jsonNumberType:
		return func(e *encoder, v reflect.Value, _ int) error { return e.number(v.String()) }
	case bigIntType:
		return func(e *encoder, v reflect.Value, _ int) error {
			if !v.CanAddr() {
				c := reflect.New(t).Elem()
				c.Set(v)
				v = c
			}
			e.buf = v.Addr().Interface().(*big.Int).Append(e.buf, 10)
			return nil
		}
	}
	if t.Kind() != reflect.Pointer && t.Implements(jsonMarshalerType) {
		return encodeJSONMarshaler
	}
	if t.Kind() != reflect.Pointer && t.Implements(textMarshalerType) {
		return encodeTextMarshaler
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(e *encoder, v reflect.Value, _ int) error { e.bool(v.Bool()); return nil }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(e *encoder, v reflect.Value, _ int) error {
			e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(e *encoder, v reflect.Value, _ int) error {
			e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
			return nil
		}
	case reflect.Float32, reflect.Float64:
		return func(e *encoder, v reflect.Value, _ int) error { return e.float(v.Float()) }
	case reflect.String:
		return func(e *encoder, v reflect.Value, _ int) error { return e.str(v.String()) }
	case reflect.Interface:
		return func(e *encoder, v reflect.Value, depth int) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			return e.any(v.Elem().Interface(), depth)
		}
	case reflect.Pointer:
		elem := t.Elem()
		return func(e *encoder, v reflect.Value, depth int) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			return encoderFor(elem, normalize)(e, v.Elem(), depth)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !t.Elem().Implements(jsonMarshalerType) && !t.Elem().Implements(textMarshalerType) {
			return unsupported(t, "byte strings have no canonical JSON form")
		}
		return sequenceEncoder(t, normalize)
	case reflect.Array:
		return sequenceEncoder(t, normalize)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return func(e *encoder, _ reflect.Value, _ int) error {
				return e.fail(RuleNonStringKey, "map key type "+t.Key().String()+" is not a string")
			}
		}
		return mapEncoder(t, normalize)
	case reflect.Struct:
		return structEncoder(t, normalize)
	}
	return unsupported(t, "")
}

func unsupported(t reflect.Type, why string) encFunc {
	detail := "type " + t.String() + " has no JSON form"
	if why != "" {
		detail = "type " + t.String() + ": " + why
	}
	return func(e *encoder, _ reflect.Value, _ int) error { return e.fail(RuleUnsupportedType, detail) }
}

func encodeRawMessage(e *encoder, v reflect.Value, _ int) error {
	if _, err := e.c.decode(v.Bytes(), false, e); err != nil {
		err.(*Error).Path = pointer(e.path) + err.(*Error).Path
		return err
	}
	e.maybeFlush()
	return nil
}

func encodeJSONMarshaler(e *encoder, v reflect.Value, _ int) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	text, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return e.fail(RuleUnsupportedType, "MarshalJSON: "+err.Error())
	}
	return encodeRawMessage(e, reflect.ValueOf(json.RawMessage(text)), 0)
}

func encodeTextMarshaler(e *encoder, v reflect.Value, _ int) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return e.fail(RuleUnsupportedType, "MarshalText: "+err.Error())
	}
	return e.str(string(text))
}

func sequenceEncoder(t reflect.Type, normalize bool) encFunc {
	elem := encoderFor(t.Elem(), normalize)
	return func(e *encoder, v reflect.Value, depth int) error {
		n := v.Len()
		if e.c.capped && n > MaxArrayItems {
			return e.fail(RuleArrayItems, "array exceeds "+strconv.Itoa(MaxArrayItems)+" items")
		}
		if n > 0 {
			if err := e.checkDepth(depth + 1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '[')
		for i := range n {
			if i > 0 {
				e.comma()
			}
			e.path = append(e.path, pathSeg{index: i})
			if err := elem(e, v.Index(i), depth+1); err != nil {
				return err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, ']')
		e.maybeFlush()
		return nil
	}
}

func mapEncoder(t reflect.Type, normalize bool) encFunc {
	elem := encoderFor(t.Elem(), normalize)
	return func(e *encoder, v reflect.Value, depth int) error {
		if v.Len() > 0 {
			if err := e.checkDepth(depth + 1); err != nil {
				return err
			}
		}
		ks := make([]keyed, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			ks = append(ks, keyed{key: it.Key().String(), val: it.Value()})
		}
		if err := e.sortKeys(ks); err != nil {
			return err
		}
		e.buf = append(e.buf, '{')
		for i := range ks {
			if i > 0 {
				e.comma()
			}
			e.string(ks[i].key)
			e.colon()
			e.path = append(e.path, pathSeg{key: ks[i].key, index: -1})
			if err := elem(e, ks[i].val, depth+1); err != nil {
				return err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, '}')
		e.maybeFlush()
		return nil
	}
}

type field struct {
	name      string // as encoded (normalized when the codec normalizes)
	quoted    []byte // "name" followed by ':' (compact form)
	index     int
	omitEmpty bool
	omitZero  bool
	enc       encFunc
}

func structEncoder(t reflect.Type, normalize bool) encFunc {
	var fields []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || !sf.IsExported() && !sf.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			return unsupported(t, "embedded field "+sf.Name+" needs a json name")
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: i, enc: encoderFor(sf.Type, normalize)}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			case "string":
				return unsupported(t, "field "+sf.Name+" uses the ,string option")
			}
		}
		fields = append(fields, f)
	}
	c := V1Uncapped
	if !normalize {
		c = NoFold
	}
	for i := range fields {
		k, err := c.key(fields[i].name)
		if err != nil {
			return func(e *encoder, _ reflect.Value, _ int) error {
				return e.fail(err.(*Error).Rule, "struct "+t.String()+": "+err.(*Error).Detail)
			}
		}
		fields[i].name = k
		e := encoder{c: &NoFold}
		e.string(k)
		fields[i].quoted = append(e.buf, ':')
	}
	slices.SortStableFunc(fields, func(a, b field) int { return cmp.Compare(a.name, b.name) })
	for i := 1; i < len(fields); i++ {
		if fields[i].name == fields[i-1].name {
			return unsupported(t, "two fields encode as "+strconv.Quote(fields[i].name))
		}
	}
	return func(e *encoder, v reflect.Value, depth int) error {
		e.buf = append(e.buf, '{')
		written := 0
		for i := range fields {
			f := &fields[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) || f.omitZero && fv.IsZero() {
				continue
			}
			if written++; written > MaxObjectEntries && e.c.capped {
				return e.fail(RuleObjectEntries, "object exceeds "+strconv.Itoa(MaxObjectEntries)+" members")
			}
			if written == 1 {
				if err := e.checkDepth(depth + 1); err != nil {
					return err
				}
			} else {
				e.comma()
			}
			if e.c.spaced || e.c.ascii {
				e.string(f.name)
				e.colon()
			} else {
				e.buf = append(e.buf, f.quoted...)
			}
			e.path = append(e.path, pathSeg{key: f.name, index: -1})
			if err := f.enc(e, fv, depth+1); err != nil {
				return err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, '}')
		e.maybeFlush()
		return nil
	}
}

// isEmpty follows encoding/json's omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
