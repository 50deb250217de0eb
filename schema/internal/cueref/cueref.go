package cueref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
	cuejson "cuelang.org/go/encoding/json"
)

// Ref holds the compiled schema.
type Ref struct {
	ctx  *cue.Context
	root cue.Value
	defs map[string]def
}

type def struct {
	v        cue.Value
	maxBytes int
}

// New loads the CUE package in dir.
func New(dir string) (*Ref, error) {
	insts := load.Instances([]string{"."}, &load.Config{Dir: dir})
	if len(insts) != 1 || insts[0].Err != nil {
		if len(insts) == 1 {
			return nil, insts[0].Err
		}
		return nil, fmt.Errorf("expected one CUE instance in %s", dir)
	}
	ctx := cuecontext.New()
	root := ctx.BuildInstance(insts[0])
	if err := root.Err(); err != nil {
		return nil, err
	}
	return &Ref{ctx: ctx, root: root, defs: map[string]def{}}, nil
}

// Def returns the definition's value and its record byte cap (0 if none).
func (r *Ref) def(name string) (def, error) {
	if d, ok := r.defs[name]; ok {
		return d, nil
	}
	v := r.root.LookupPath(cue.MakePath(cue.Def(name)))
	if !v.Exists() {
		return def{}, fmt.Errorf("no definition #%s", name)
	}
	d := def{v: v}
	a := v.Attribute("rayflow")
	if a.Err() == nil {
		if s, ok, _ := a.Lookup(0, "maxBytes"); ok {
			d.maxBytes, _ = strconv.Atoi(s)
		}
	}
	r.defs[name] = d
	return d, nil
}

// Check returns nil if data is a valid #name record.
func (r *Ref) Check(name string, data []byte) error {
	d, err := r.def(name)
	if err != nil {
		return err
	}
	if d.maxBytes > 0 && len(data) > d.maxBytes {
		return fmt.Errorf("wire: %d bytes over the %d-byte cap", len(data), d.maxBytes)
	}
	if err := Wire(data); err != nil {
		return err
	}
	if err := r.memberCaps(d.v, data); err != nil {
		return err
	}
	expr, err := cuejson.Extract(name+".json", data)
	if err != nil {
		return fmt.Errorf("cue json: %w", err)
	}
	v := r.ctx.BuildExpr(expr)
	if err := v.Err(); err != nil {
		return err
	}
	return d.v.Unify(v).Validate(cue.Concrete(true))
}

// memberCaps checks @rayflow(maxBytes=N) on record members that are
// objects (a struct or map field, such as an event payload): the
// member's bytes as they appear in data. For a union, the variant is the
// one whose literal string fields (the discriminator) match data.
func (r *Ref) memberCaps(v cue.Value, data []byte) error {
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return nil // not an object: CUE rejects it
	}
	if op, args := v.Expr(); op == cue.OrOp {
		for _, a := range args {
			if variantMatches(a, members) {
				return r.memberCaps(a, data)
			}
		}
		return nil
	}
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	for it.Next() {
		f := it.Value()
		a := f.Attribute("rayflow")
		if a.Err() != nil {
			continue
		}
		s, ok, _ := a.Lookup(0, "maxBytes")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(s)
		name := it.Selector().Unquoted()
		// Only object members: string caps (on strings and lists of
		// strings) are checked by the generated CUE, and a member cap is
		// only allowed on struct and map fields, which CUE rejects when
		// the member is not an object.
		if raw, ok := members[name]; ok && len(raw) > 0 && raw[0] == '{' && len(raw) > n {
			return fmt.Errorf("wire: member %s is %d bytes, over its %d-byte cap", name, len(raw), n)
		}
	}
	return nil
}

// variantMatches: every concrete string field of the variant has the same
// value in members.
func variantMatches(v cue.Value, members map[string]json.RawMessage) bool {
	it, err := v.Fields()
	if err != nil {
		return false
	}
	for it.Next() {
		s, err := it.Value().String()
		if err != nil {
			continue
		}
		var got string
		if json.Unmarshal(members[it.Selector().Unquoted()], &got) != nil || got != s {
			return false
		}
	}
	return true
}

// Wire checks the rules that CUE's JSON reading does not enforce: valid
// UTF-8, JSON syntax (which has no NaN/Infinity), no duplicate object keys,
// no lone surrogate escapes, bounded nesting.
func Wire(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("wire: invalid UTF-8")
	}
	if !json.Valid(data) {
		return errors.New("wire: not JSON")
	}
	if err := surrogates(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dupKeys(dec, 0)
}

// finite rejects number literals beyond float64 (they would be Infinity).
// CUE reads them as huge decimals; it even accepts 1e999999 against <=100
// and can spend minutes on arithmetic with them.
func finite(n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && math.IsInf(f, 0) {
		return fmt.Errorf("wire: number %s overflows float64", n)
	}
	return nil
}

func dupKeys(dec *json.Decoder, depth int) error {
	if depth > 64 {
		return errors.New("wire: nesting too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			ks := k.(string)
			if seen[ks] {
				return fmt.Errorf("wire: duplicate key %q", ks)
			}
			seen[ks] = true
			if err := dupKeys(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := dupKeys(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	if n, ok := tok.(json.Number); ok {
		return finite(n)
	}
	return nil
}

// surrogates finds \uD800-\uDFFF escapes that are not a high+low pair.
func surrogates(data []byte) error {
	s := string(data)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 < len(s) && s[i+1] != 'u' {
			i++ // skip the escaped character (handles \\)
			continue
		}
		if i+6 > len(s) {
			return nil
		}
		r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
		if err != nil {
			return nil
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if r2, err := strconv.ParseUint(s[i+8:i+12], 16, 32); err == nil && r2 >= 0xDC00 && r2 <= 0xDFFF {
					i += 11
					continue
				}
			}
			return errors.New("wire: lone surrogate")
		case r >= 0xDC00 && r <= 0xDFFF:
			return errors.New("wire: lone surrogate")
		}
		i += 5
	}
	return nil
}

// Names lists the definitions that are records (structs or unions).
func (r *Ref) Names() []string {
	var out []string
	it, _ := r.root.Fields(cue.Definitions(true))
	for it.Next() {
		if it.Selector().IsDefinition() && it.Value().IncompleteKind() == cue.StructKind {
			out = append(out, strings.TrimPrefix(it.Selector().String(), "#"))
		}
	}
	return out
}
