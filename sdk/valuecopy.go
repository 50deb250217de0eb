package sdk

import (
	"cmp"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The default codec's round trip (encode to JSON, decode into a fresh
// value of the static type) gives back, for most plain Go types, a copy
// of the value: the fields JSON carries are copied, the ones it does not
// carry come back zero, slices, maps and pointers come back freshly
// allocated. A copyPlan is that copy worked out once per type, following
// encoding/json's own rules (which struct fields it encodes and under
// which name, omitempty, omitzero, the string option, embedded structs,
// base64 byte slices, null for nil slices, maps and pointers).
//
// A plan only copies values the codec keeps as they are. When it meets a
// value the codec would refuse or change (a NaN or infinite float, a
// string or map key that is not valid UTF-8) or nesting deeper than
// maxCopyDepth (where the codec's own depth and cycle limits may apply),
// it gives up and the caller runs the real codec round trip, so that
// every error and every changed value is the codec's own. Types the plan
// cannot vouch for (their own JSON or text methods, interfaces,
// json.Number, embedded pointers, ...) have no plan at all.

// maxCopyDepth is how deeply nested a value a plan copies; deeper values
// go through the codec.
const maxCopyDepth = 500

type copyOp uint8

const (
	opPlain   copyOp = iota // bool and integer kinds: always kept
	opFloat                 // kept when finite
	opString                // kept when valid UTF-8
	opBytes                 // []byte: base64 in JSON
	opArray                 // fixed length
	opSlice                 // nil stays nil, empty stays empty
	opMap                   // nil stays nil, keys checked
	opPointer               // nil stays nil, else a fresh value
	opStruct                // the fields the codec encodes
)

type copyPlan struct {
	op   copyOp
	t    reflect.Type
	elem *copyPlan // opArray, opSlice, opMap (values), opPointer
	// flat is true when the type holds no slice, map or pointer that
	// JSON carries: a value keeps itself when keeps says so.
	flat bool
	// stringKeys: an opMap with string keys, kept when valid UTF-8
	// (integer keys are always kept).
	stringKeys bool
	// nullElem: an opPointer to a slice or map; a nil one is encoded
	// as null, which decodes into a nil pointer.
	nullElem bool
	fields   []copyField // opStruct: encoded fields, in index order
	drops    [][]int     // opStruct: parts JSON does not carry
}

type copyField struct {
	index               []int
	omitEmpty, omitZero bool
	plan                *copyPlan
}

var copyPlans sync.Map // reflect.Type → *copyPlan (nil: none)

// copyPlanOf returns t's plan, or nil when only the codec can round-trip
// t's values.
func copyPlanOf(t reflect.Type) *copyPlan {
	if jsonV2 {
		return nil
	}
	if p, ok := copyPlans.Load(t); ok {
		return p.(*copyPlan)
	}
	p := buildCopyPlan(t, map[reflect.Type]*copyPlan{})
	got, _ := copyPlans.LoadOrStore(t, p)
	return got.(*copyPlan)
}

var (
	jsonNumber = reflect.TypeFor[json.Number]()
	byteType   = reflect.TypeFor[byte]()
	isZeroer   = reflect.TypeFor[interface{ IsZero() bool }]()
)

// buildCopyPlan works out t's plan; building holds the plans under
// construction (a recursive type refers to itself through a pointer,
// slice or map). A part without a plan leaves the whole type without one.
func buildCopyPlan(t reflect.Type, building map[reflect.Type]*copyPlan) *copyPlan {
	if p, ok := building[t]; ok {
		return p
	}
	if hasCodecMethods(t) || t == jsonNumber {
		return nil
	}
	p := &copyPlan{t: t}
	building[t] = p
	ok := true
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.op, p.flat = opPlain, true
	case reflect.Float32, reflect.Float64:
		p.op, p.flat = opFloat, true
	case reflect.String:
		p.op, p.flat = opString, true
	case reflect.Array:
		p.op, p.elem = opArray, buildCopyPlan(t.Elem(), building)
		ok = p.elem != nil
		p.flat = ok && p.elem.flat
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes a []byte as base64; another byte
			// type may go either way: leave it to the codec.
			p.op, ok = opBytes, t.Elem() == byteType
			break
		}
		p.op, p.elem = opSlice, buildCopyPlan(t.Elem(), building)
		ok = p.elem != nil
	case reflect.Map:
		p.op, p.elem = opMap, buildCopyPlan(t.Elem(), building)
		k := t.Key()
		switch k.Kind() {
		case reflect.String:
			p.stringKeys = true
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			ok = false
		}
		ok = ok && p.elem != nil && !hasCodecMethods(k)
	case reflect.Pointer:
		switch t.Elem().Kind() {
		case reflect.Pointer, reflect.Interface:
			ok = false // null decodes into the outer pointer
		case reflect.Slice, reflect.Map:
			p.nullElem = true
		}
		p.op, p.elem = opPointer, buildCopyPlan(t.Elem(), building)
		ok = ok && p.elem != nil
	case reflect.Struct:
		p.op = opStruct
		ok = p.structFields(building)
	default: // interfaces, funcs, channels, complex numbers
		ok = false
	}
	if !ok {
		return nil
	}
	return p
}

// structFields fills a struct plan with the fields encoding/json
// encodes, chosen by its rules: exported fields (and the exported fields
// of embedded structs, promoted), named by their json tag when it is a
// valid name, the shallowest field winning a name, and two at the same
// depth (both tagged, or both untagged) hiding each other.
func (p *copyPlan) structFields(building map[reflect.Type]*copyPlan) bool {
	type found struct {
		name                        string
		tagged, omitEmpty, omitZero bool
		index                       []int
	}
	type embedded struct {
		t     reflect.Type
		index []int
	}
	var fields []found
	next := []embedded{{t: p.t}}
	visited := map[reflect.Type]bool{}
	// How often each struct to explore appeared at the level below.
	var count, nextCount map[reflect.Type]int
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.t] {
				continue
			}
			visited[e.t] = true
			for i := range e.t.NumField() {
				sf := e.t.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := found{name: name, tagged: name != "", index: index,
						omitEmpty: hasTagOption(opts, "omitempty"), omitZero: hasTagOption(opts, "omitzero")}
					if f.name == "" {
						f.name = sf.Name
					}
					fields = append(fields, f)
					if count[e.t] > 1 { // the same struct twice at this depth
						fields = append(fields, f)
					}
					continue
				}
				if sf.Type.Kind() == reflect.Pointer || hasCodecMethods(ft) {
					// Through an embedded pointer the codec allocates
					// (or refuses to); leave such types to it.
					return false
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, embedded{t: ft, index: index})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b found) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var kept []found
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			kept = append(kept, fields[i])
		}
		i = j
	}
	slices.SortFunc(kept, func(a, b found) int { return slices.Compare(a.index, b.index) })
	p.flat = true
	for _, f := range kept {
		ft := p.t.FieldByIndex(f.index).Type
		if f.omitZero && (ft.Implements(isZeroer) || reflect.PointerTo(ft).Implements(isZeroer)) {
			return false // the codec asks the value's own IsZero
		}
		fp := buildCopyPlan(ft, building)
		if fp == nil {
			return false
		}
		p.fields = append(p.fields, copyField{index: f.index, omitEmpty: f.omitEmpty, omitZero: f.omitZero, plan: fp})
		p.flat = p.flat && fp.flat
	}
	p.drops = dropped(p.t, nil, p.fields)
	return true
}

// dropped lists the parts of struct t (at index prefix) that no encoded
// field covers: JSON does not carry them, so they come back zero.
func dropped(t reflect.Type, prefix []int, fields []copyField) [][]int {
	var drops [][]int
	for i := range t.NumField() {
		index := append(slices.Clip(prefix), i)
		covered, within := false, false
		for _, f := range fields {
			if slices.Equal(f.index, index) {
				covered = true
			} else if len(f.index) > len(index) && slices.Equal(f.index[:len(index)], index) {
				within = true
			}
		}
		switch {
		case covered:
		case within:
			drops = append(drops, dropped(t.Field(i).Type, index, fields)...)
		default:
			drops = append(drops, index)
		}
	}
	return drops
}

// validTagName is encoding/json's test for a usable json tag name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

func hasTagOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

func fieldAt(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		v = v.Field(i)
	}
	return v
}

// keeps reports whether v, a value of a flat plan's type, comes back
// from the codec unchanged.
func (p *copyPlan) keeps(v reflect.Value) bool {
	switch p.op {
	case opPlain:
		return true
	case opFloat:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	case opString:
		return utf8.ValidString(v.String())
	case opArray:
		if p.elem.op == opPlain {
			return true
		}
		for i := range v.Len() {
			if !p.elem.keeps(v.Index(i)) {
				return false
			}
		}
		return true
	case opStruct:
		for _, d := range p.drops {
			if !zeroBits(fieldAt(v, d)) {
				return false
			}
		}
		for _, f := range p.fields {
			s := fieldAt(v, f.index)
			if f.omitEmpty && emptyValue(s) || f.omitZero && s.IsZero() {
				// Omitted, it comes back zero, and reflect's IsZero
				// (which encoding/json asks) calls -0 zero, alone or in
				// a struct or array.
				if !zeroBits(s) {
					return false
				}
			} else if f.plan.op != opPlain && !f.plan.keeps(s) {
				return false
			}
		}
		return true
	}
	return false
}

// zeroBits reports whether v is the zero value bit for bit: unlike
// reflect's IsZero, a float -0 (alone or in a struct or array) is not.
func zeroBits(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(v.Float()) == 0
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return math.Float64bits(real(c)) == 0 && math.Float64bits(imag(c)) == 0
	case reflect.Struct:
		for i := range v.NumField() {
			if !zeroBits(v.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range v.Len() {
			if !zeroBits(v.Index(i)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}

// copy sets dst, a settable zero value of p's type, to what the codec's
// round trip makes of src. It returns false, leaving dst partly set, when
// the codec refuses or changes src, or src is nested too deeply: only the
// codec can say what then comes back.
func (p *copyPlan) copyInto(dst, src reflect.Value, depth int) bool {
	if depth > maxCopyDepth {
		return false
	}
	if p.flat && dst.CanSet() && p.keeps(src) {
		dst.Set(src)
		return true
	}
	switch p.op {
	case opPlain:
		dst.Set(src)
	case opFloat, opString:
		if !p.keeps(src) {
			return false
		}
		dst.Set(src)
	case opBytes:
		if !src.IsNil() {
			b := make([]byte, src.Len())
			copy(b, src.Bytes())
			dst.SetBytes(b)
		}
	case opArray:
		for i := range src.Len() {
			if !p.elem.copyInto(dst.Index(i), src.Index(i), depth+1) {
				return false
			}
		}
	case opSlice:
		if src.IsNil() {
			return true
		}
		n := src.Len()
		s := reflect.MakeSlice(p.t, n, n)
		if p.elem.flat {
			// Copy all, then redo the elements the codec changes.
			reflect.Copy(s, src)
			for i := range n {
				if e := s.Index(i); !p.elem.keeps(e) {
					e.SetZero()
					if !p.elem.copyInto(e, src.Index(i), depth+1) {
						return false
					}
				}
			}
		} else {
			for i := range n {
				if !p.elem.copyInto(s.Index(i), src.Index(i), depth+1) {
					return false
				}
			}
		}
		dst.Set(s)
	case opMap:
		if src.IsNil() {
			return true
		}
		m := reflect.MakeMapWithSize(p.t, src.Len())
		v := reflect.New(p.t.Elem()).Elem()
		for it := src.MapRange(); it.Next(); {
			k := it.Key()
			if p.stringKeys && !utf8.ValidString(k.String()) {
				return false
			}
			v.SetZero()
			if !p.elem.copyInto(v, it.Value(), depth+1) {
				return false
			}
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case opPointer:
		if src.IsNil() || p.nullElem && src.Elem().IsNil() {
			return true
		}
		e := reflect.New(p.t.Elem())
		if !p.elem.copyInto(e.Elem(), src.Elem(), depth+1) {
			return false
		}
		dst.Set(e)
	case opStruct:
		for _, f := range p.fields {
			s := fieldAt(src, f.index)
			if f.omitEmpty && emptyValue(s) || f.omitZero && s.IsZero() {
				continue // omitted: decodes to nothing
			}
			if !f.plan.copyInto(fieldAt(dst, f.index), s, depth+1) {
				return false
			}
		}
	}
	return true
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}
