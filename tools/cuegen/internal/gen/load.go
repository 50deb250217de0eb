package gen

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// GeneratedCUE is the name of the CUE file the generator writes into the
// schema directory (byte caps translated for CUE's evaluator). The loader
// skips it.
const GeneratedCUE = "zz_generated_bytecaps.cue"

// Schema is a loaded, fully translated schema package.
type Schema struct {
	Dir     string
	Package string // CUE package name
	Files   []string
	Defs    []*Def // declaration order, by file name then position
	ByName  map[string]*Def
	Structs []*Struct // every struct to emit, in a deterministic order
	Enums   []*Type   // every named enum to emit
	Values  []*Value
	GoPkgs  []string // sorted
	// FileGoPkg is each file's Go package (@rayflow(gopkg=...)) and
	// FileDoc the comment that follows that attribute: what the file
	// defines, which becomes part of the package documentation.
	FileGoPkg map[string]string
	FileDoc   map[string]string
}

// ProfileError lists every place where the schema leaves the strict profile.
type ProfileError struct{ Problems []string }

func (e *ProfileError) Error() string {
	return "schema is outside the strict profile:\n  " + strings.Join(e.Problems, "\n  ")
}

type loader struct {
	s        *Schema
	problems []string
	names    map[string]map[string]token.Pos
}

// Load reads every *.cue file in dir (not recursively) and translates it.
func Load(dir string) (*Schema, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	l := &loader{s: &Schema{Dir: dir, ByName: map[string]*Def{}, FileGoPkg: map[string]string{}, FileDoc: map[string]string{}},
		names: map[string]map[string]token.Pos{}}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".cue") || n == GeneratedCUE {
			continue
		}
		path := filepath.Join(dir, n)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(path, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		files = append(files, f)
		l.s.Files = append(l.s.Files, n)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .cue files in %s", dir)
	}
	for _, f := range files {
		l.collect(f)
	}
	for _, d := range l.s.Defs {
		l.resolve(d)
	}
	for _, v := range l.s.Values {
		l.checkName(v.GoPkg, v.GoName, v.Pos)
	}
	if len(l.problems) > 0 {
		return nil, &ProfileError{Problems: l.problems}
	}
	pk := map[string]bool{}
	for _, d := range l.s.Defs {
		pk[d.GoPkg] = true
	}
	for p := range pk {
		l.s.GoPkgs = append(l.s.GoPkgs, p)
	}
	sort.Strings(l.s.GoPkgs)
	return l.s, nil
}

func (l *loader) errf(pos token.Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if pos.IsValid() {
		p := pos.Position()
		msg = fmt.Sprintf("%s:%d:%d: %s", filepath.Base(p.Filename), p.Line, p.Column, msg)
	}
	l.problems = append(l.problems, msg)
}

func (l *loader) checkName(pkg, name string, pos token.Pos) {
	m := l.names[pkg]
	if m == nil {
		m = map[string]token.Pos{}
		l.names[pkg] = m
	}
	if prev, ok := m[name]; ok {
		l.errf(pos, "Go name %s.%s is already used (at %s); rename one of them", pkg, name, prev.Position())
		return
	}
	m[name] = pos
}

// attrs parses @rayflow(k=v, ...) attributes.
func rayflowAttrs(list []*ast.Attribute) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range list {
		name, body := a.Split()
		if name != "rayflow" {
			return nil, fmt.Errorf("unknown attribute @%s (only @rayflow is in the profile)", name)
		}
		for _, kv := range strings.Split(body, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

func docOf(n ast.Node) string {
	var parts []string
	for _, g := range ast.Comments(n) {
		if g.Doc {
			parts = append(parts, strings.TrimSpace(g.Text()))
		}
	}
	return strings.Join(parts, "\n")
}

func (l *loader) collect(f *ast.File) {
	file := filepath.Base(f.Filename)
	gopkg := ""
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.Package:
			if l.s.Package == "" {
				l.s.Package = x.Name.Name
			} else if l.s.Package != x.Name.Name {
				l.errf(x.Pos(), "all files must be in CUE package %s", l.s.Package)
			}
		case *ast.ImportDecl:
			for _, s := range x.Specs {
				p, _ := literal.Unquote(s.Path.Value)
				switch p {
				case "list", "strings", "struct", "time":
				default:
					l.errf(s.Pos(), "import %q is not in the profile (allowed: list, strings, struct; time in rules only)", p)
				}
			}
		case *ast.Attribute:
			m, err := rayflowAttrs([]*ast.Attribute{x})
			if err != nil {
				l.errf(x.Pos(), "%v", err)
				continue
			}
			gopkg = m["gopkg"]
			// The comment after the attribute says what the file defines
			// (the parser attaches it to the attribute).
			for _, g := range ast.Comments(x) {
				if !g.Doc && l.s.FileDoc[file] == "" {
					l.s.FileDoc[file] = strings.TrimSpace(g.Text())
				}
			}
		}
	}
	if gopkg == "" || !isGoIdent(gopkg) {
		l.errf(f.Pos(), "%s: missing or invalid file attribute @rayflow(gopkg=NAME)", file)
		return
	}
	l.s.FileGoPkg[file] = gopkg
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.Package, *ast.ImportDecl, *ast.Attribute, *ast.CommentGroup:
		case *ast.Field:
			name, _, err := ast.LabelName(x.Label)
			if err != nil {
				l.errf(x.Pos(), "unsupported label: %v", err)
				continue
			}
			if x.Constraint != token.ILLEGAL {
				l.errf(x.Pos(), "top-level %s: optional or required markers are not allowed at the top level", name)
				continue
			}
			switch {
			case strings.HasPrefix(name, "#"):
				if _, dup := l.s.ByName[name[1:]]; dup {
					l.errf(x.Pos(), "%s is declared more than once; declare each definition once", name)
					continue
				}
				def := &Def{Name: name[1:], GoPkg: gopkg, File: file, Pos: x.Pos(), Doc: docOf(x), MaxBytes: -1, expr: x.Value, attrs: x.Attrs}
				def.GoName = goDefName(def.Name, gopkg)
				l.s.Defs = append(l.s.Defs, def)
				l.s.ByName[def.Name] = def
			case strings.HasPrefix(name, "_"):
				l.errf(x.Pos(), "hidden top-level field %s is not in the profile", name)
			default:
				l.collectValue(x, name, gopkg)
			}
		default:
			l.errf(d.Pos(), "top-level declaration %T is not in the profile", d)
		}
	}
}

// collectValue records a concrete value: name: #Def & {...} or a struct of
// such values.
func (l *loader) collectValue(f *ast.Field, path string, gopkg string) {
	switch v := f.Value.(type) {
	case *ast.StructLit:
		if len(v.Elts) == 1 {
			if inner, ok := v.Elts[0].(*ast.Field); ok {
				if _, ok := inner.Value.(*ast.StructLit); !ok || isValueExpr(inner.Value) {
					n, _, _ := ast.LabelName(inner.Label)
					l.collectValue(inner, path+"."+n, gopkg)
					return
				}
			}
		}
		for _, e := range v.Elts {
			inner, ok := e.(*ast.Field)
			if !ok {
				l.errf(e.Pos(), "value %s: only fields are allowed here", path)
				continue
			}
			n, _, _ := ast.LabelName(inner.Label)
			l.collectValue(inner, path+"."+n, gopkg)
		}
		return
	case *ast.BinaryExpr:
		if v.Op == token.AND {
			if id, ok := v.X.(*ast.Ident); ok && strings.HasPrefix(id.Name, "#") {
				l.s.Values = append(l.s.Values, &Value{Path: path, GoName: goValueName(path), GoPkg: gopkg, Doc: docOf(f), Pos: f.Pos(), Def: &Def{Name: id.Name[1:]}})
				return
			}
		}
	}
	l.errf(f.Pos(), "value %s: write concrete values as `name: #Definition & {...}`", path)
}

func isValueExpr(e ast.Expr) bool {
	b, ok := e.(*ast.BinaryExpr)
	return ok && b.Op == token.AND
}

func (l *loader) resolve(d *Def) {
	if d.resolved {
		return
	}
	if d.resolving {
		l.errf(d.Pos, "#%s refers to itself; recursive definitions are not in the profile", d.Name)
		return
	}
	d.resolving = true
	defer func() { d.resolving = false; d.resolved = true }()
	attrs, err := rayflowAttrs(d.attrs.([]*ast.Attribute))
	if err != nil {
		l.errf(d.Pos, "%v", err)
	}
	expr := d.expr.(ast.Expr)
	// A self alias (#X: S={...}) only names the struct for its own rules,
	// which may then refer to embedded fields as S.field.
	if a, ok := expr.(*ast.Alias); ok {
		if _, ok := a.Expr.(*ast.StructLit); ok {
			expr = a.Expr
		}
	}
	for k, v := range attrs {
		switch k {
		case "maxBytes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				l.errf(d.Pos, "#%s: maxBytes must be a positive integer", d.Name)
			}
			d.MaxBytes = n
		default:
			l.errf(d.Pos, "#%s: unknown attribute key %q", d.Name, k)
		}
	}
	// Constants.
	if lit, kind, ok := l.constExpr(expr); ok {
		d.Kind, d.ConstLit, d.ConstKind = DefConst, lit, kind
		return
	}
	// Unions of struct definitions and enums.
	if terms := flatten(expr, token.OR); len(terms) > 1 {
		var refs []*Def
		allRefs := true
		for _, t := range terms {
			id, ok := t.(*ast.Ident)
			if !ok || !strings.HasPrefix(id.Name, "#") {
				allRefs = false
				break
			}
			rd := l.s.ByName[id.Name[1:]]
			if rd == nil {
				allRefs = false
				break
			}
			l.resolve(rd)
			if rd.Kind != DefStruct {
				allRefs = false
				break
			}
			refs = append(refs, rd)
		}
		if allRefs {
			l.union(d, refs)
			return
		}
	}
	t := l.typeOf(expr, d.GoName, d.GoPkg, d)
	if t == nil {
		return
	}
	d.Type = t
	switch {
	case t.Kind == KStruct:
		d.Kind = DefStruct
		t.Struct.Def = d
		if d.Doc != "" {
			t.Struct.Doc = d.Doc
		}
	case t.Kind == KEnum && t.EnumDef == d:
		d.Kind = DefEnum
		if t.Nullable {
			l.errf(d.Pos, "#%s: an enum definition cannot include null; write null | #%s where it is used", d.Name, d.Name)
		}
	default:
		if d.MaxBytes >= 0 {
			l.errf(d.Pos, "#%s: maxBytes on a definition is only for records (structs)", d.Name)
		}
		d.Kind = DefScalar
	}
}

func (l *loader) union(d *Def, variants []*Def) {
	d.Kind = DefUnion
	d.Variants = variants
	l.checkName(d.GoPkg, d.GoName, d.Pos)
	// Find the discriminator: a field present in every variant with a
	// distinct constant string.
	var tag string
	for _, f := range variants[0].Type.Struct.Fields {
		if f.Type.ConstStr == nil || f.Optional || f.Type.Nullable {
			continue
		}
		ok := true
		seen := map[string]bool{}
		for _, v := range variants {
			var vf *Field
			for _, g := range v.Type.Struct.Fields {
				if g.JSON == f.JSON {
					vf = g
				}
			}
			if vf == nil || vf.Type.ConstStr == nil || vf.Optional || vf.Type.Nullable || seen[*vf.Type.ConstStr] {
				ok = false
				break
			}
			seen[*vf.Type.ConstStr] = true
		}
		if ok {
			tag = f.JSON
			break
		}
	}
	if tag == "" {
		l.errf(d.Pos, "#%s: union is not discriminated: every variant needs a required field with a distinct string literal (e.g. kind: \"x\")", d.Name)
	}
	for _, v := range variants {
		if v.GoPkg != d.GoPkg {
			l.errf(d.Pos, "#%s: variant #%s must be in the same Go package", d.Name, v.Name)
		}
	}
	d.Tag = tag
}

func flatten(e ast.Expr, op token.Token) []ast.Expr {
	if p, ok := e.(*ast.ParenExpr); ok && op == token.AND {
		// (a & b) & c is fine; a paren around a disjunction stays a term.
		if b, ok := p.X.(*ast.BinaryExpr); ok && b.Op == token.AND {
			return flatten(b, op)
		}
	}
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == op {
		return append(flatten(b.X, op), flatten(b.Y, op)...)
	}
	return []ast.Expr{e}
}

// constExpr evaluates literal constants and integer arithmetic on constants.
func (l *loader) constExpr(e ast.Expr) (string, Kind, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		switch x.Kind {
		case token.STRING:
			s, err := literal.Unquote(x.Value)
			if err != nil {
				return "", 0, false
			}
			return strconv.Quote(s), KString, true
		case token.INT:
			n, ok := l.intLit(x)
			if !ok {
				return "", 0, false
			}
			return n.String(), KInt, true
		case token.FLOAT:
			var ni literal.NumInfo
			if literal.ParseNum(x.Value, &ni) != nil {
				return "", 0, false
			}
			return ni.String(), KFloat, true
		case token.TRUE, token.FALSE:
			return x.Value, KBool, true
		}
	case *ast.Ident:
		if strings.HasPrefix(x.Name, "#") {
			if d := l.s.ByName[x.Name[1:]]; d != nil {
				l.resolve(d)
				if d.Kind == DefConst {
					return d.ConstLit, d.ConstKind, true
				}
			}
		}
	case *ast.ParenExpr:
		return l.constExpr(x.X)
	case *ast.UnaryExpr:
		if x.Op == token.SUB {
			if s, k, ok := l.constExpr(x.X); ok && (k == KInt || k == KFloat) {
				if strings.HasPrefix(s, "-") {
					return s[1:], k, true
				}
				return "-" + s, k, true
			}
		}
	case *ast.BinaryExpr:
		switch x.Op {
		case token.ADD, token.SUB, token.MUL:
			a, ka, ok1 := l.constExpr(x.X)
			b, kb, ok2 := l.constExpr(x.Y)
			if !ok1 || !ok2 || ka != KInt || kb != KInt {
				return "", 0, false
			}
			A, _ := new(big.Int).SetString(a, 10)
			B, _ := new(big.Int).SetString(b, 10)
			switch x.Op {
			case token.ADD:
				A.Add(A, B)
			case token.SUB:
				A.Sub(A, B)
			case token.MUL:
				A.Mul(A, B)
			}
			return A.String(), KInt, true
		}
	}
	return "", 0, false
}

func (l *loader) intLit(x *ast.BasicLit) (*big.Int, bool) {
	var ni literal.NumInfo
	if err := literal.ParseNum(x.Value, &ni); err != nil || !ni.IsInt() {
		return nil, false
	}
	n, ok := new(big.Int).SetString(ni.String(), 10)
	return n, ok
}

func (l *loader) intArg(e ast.Expr, what string) int {
	s, k, ok := l.constExpr(e)
	if !ok || k != KInt {
		l.errf(e.Pos(), "%s: argument must be an integer constant", what)
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		l.errf(e.Pos(), "%s: argument out of range", what)
		return -1
	}
	return n
}

func nodeText(n ast.Node) string {
	b, err := format.Node(n)
	if err != nil {
		return fmt.Sprintf("%T", n)
	}
	return string(b)
}

// typeOf translates one CUE expression. name is the Go name for an inline
// struct or enum; owner is the definition being declared (or nil).
func (l *loader) typeOf(e ast.Expr, name, gopkg string, owner *Def) *Type {
	if p, ok := e.(*ast.ParenExpr); ok {
		return l.typeOf(p.X, name, gopkg, owner)
	}
	// Disjunction.
	if terms := flatten(e, token.OR); len(terms) > 1 {
		return l.disjunction(e, terms, name, gopkg, owner)
	}
	terms := flatten(e, token.AND)
	var shape *Type
	setShape := func(t *Type, at ast.Node) bool {
		if shape == nil {
			shape = t
			return true
		}
		// a base type and a constant of that type combine
		if shape.Kind == t.Kind && (t.Kind == KString || t.Kind == KInt || t.Kind == KFloat || t.Kind == KBool) {
			if t.ConstStr != nil {
				shape.ConstStr = t.ConstStr
			}
			if t.ConstNum != nil {
				shape.ConstNum = t.ConstNum
			}
			if t.ConstBool != nil {
				shape.ConstBool = t.ConstBool
			}
			return true
		}
		if shape.Kind == KInt && t.Kind == KFloat && t.ConstNum == nil {
			return true // int & number
		}
		if shape.Kind == KFloat && t.Kind == KInt && shape.ConstNum == nil && shape.Min == nil {
			shape.Kind = KInt
			return true
		}
		l.errf(at.Pos(), "%s: conflicting types in one conjunction", nodeText(at))
		return false
	}
	type pending struct {
		e  ast.Expr
		fn func(t *Type) bool
	}
	var cons []pending
	for _, term := range terms {
		switch x := term.(type) {
		case *ast.Ident:
			switch x.Name {
			case "string":
				setShape(newType(KString, x.Pos()), x)
			case "int":
				setShape(newType(KInt, x.Pos()), x)
			case "number":
				setShape(newType(KFloat, x.Pos()), x)
			case "bool":
				setShape(newType(KBool, x.Pos()), x)
			case "_":
				setShape(newType(KRaw, x.Pos()), x)
			case "float":
				l.errf(x.Pos(), "float is not in the profile: use number (JSON 1 and 1.0 are both numbers)")
			case "null":
				l.errf(x.Pos(), "null alone is not a type; write null | T")
			default:
				if !strings.HasPrefix(x.Name, "#") {
					l.errf(x.Pos(), "reference %s is not in the profile (only #Definitions and builtin types)", x.Name)
					continue
				}
				d := l.s.ByName[x.Name[1:]]
				if d == nil {
					l.errf(x.Pos(), "unknown definition %s", x.Name)
					continue
				}
				l.resolve(d)
				switch d.Kind {
				case DefConst:
					setShape(constType(d.ConstLit, d.ConstKind, x.Pos()), x)
				case DefStruct, DefUnion:
					t := newType(KRef, x.Pos())
					t.Ref = d
					setShape(t, x)
				case DefEnum, DefScalar:
					if d.Type == nil {
						continue
					}
					c := *d.Type
					if shape == nil {
						shape = &c
					} else if !mergeScalar(shape, &c) {
						l.errf(x.Pos(), "%s: cannot combine with the other terms", x.Name)
					}
				}
			}
		case *ast.BasicLit:
			if x.Kind == token.NULL {
				setShape(newType(KNull, x.Pos()), x)
				continue
			}
			s, k, ok := l.constExpr(x)
			if !ok {
				l.errf(x.Pos(), "unsupported literal %s", x.Value)
				continue
			}
			setShape(constType(s, k, x.Pos()), x)
		case *ast.UnaryExpr:
			switch x.Op {
			case token.GEQ, token.GTR, token.LEQ, token.LSS:
				s, k, ok := l.constExpr(x.X)
				if !ok || (k != KInt && k != KFloat) {
					l.errf(x.Pos(), "bound %s must be a numeric constant", nodeText(x))
					continue
				}
				b := &Bound{Lit: s, Exclusive: x.Op == token.GTR || x.Op == token.LSS}
				isMin := x.Op == token.GEQ || x.Op == token.GTR
				cons = append(cons, pending{x, func(t *Type) bool {
					if t.Kind != KInt && t.Kind != KFloat {
						return false
					}
					if isMin {
						t.Min = b
					} else {
						t.Max = b
					}
					return true
				}})
			case token.MAT, token.NMAT:
				lit, ok := x.X.(*ast.BasicLit)
				var re string
				var err error
				if ok {
					re, err = literal.Unquote(lit.Value)
				}
				if !ok || err != nil {
					l.errf(x.Pos(), "pattern must be a string literal")
					continue
				}
				not := x.Op == token.NMAT
				cons = append(cons, pending{x, func(t *Type) bool {
					if t.Kind != KString {
						return false
					}
					if not {
						t.NotPats = append(t.NotPats, re)
					} else {
						t.Patterns = append(t.Patterns, re)
					}
					return true
				}})
			case token.MUL:
				l.errf(x.Pos(), "defaults (*value) are not in the profile: write every value explicitly")
			default:
				l.errf(x.Pos(), "operator %s is not in the profile", x.Op)
			}
		case *ast.CallExpr:
			fn := nodeText(x.Fun)
			switch fn {
			case "strings.MaxRunes", "strings.MinRunes", "list.MaxItems", "list.MinItems", "struct.MaxFields", "struct.MinFields":
				if len(x.Args) != 1 {
					l.errf(x.Pos(), "%s takes one argument", fn)
					continue
				}
				n := l.intArg(x.Args[0], fn)
				cons = append(cons, pending{x, func(t *Type) bool {
					switch fn {
					case "strings.MaxRunes":
						t.MaxRunes = n
						return t.Kind == KString
					case "strings.MinRunes":
						t.MinRunes = n
						return t.Kind == KString
					case "list.MaxItems":
						t.MaxItems = n
						return t.Kind == KList
					case "list.MinItems":
						t.MinItems = max(t.MinItems, n)
						return t.Kind == KList
					case "struct.MaxFields":
						t.MaxFields = n
						return t.Kind == KMap
					case "struct.MinFields":
						t.MinFields = n
						return t.Kind == KMap
					}
					return false
				}})
			case "list.UniqueItems":
				cons = append(cons, pending{x, func(t *Type) bool {
					t.Unique = true
					return t.Kind == KList && t.Elem != nil && (t.Elem.Kind == KString || t.Elem.Kind == KInt || t.Elem.Kind == KEnum || t.Elem.Kind == KBool)
				}})
			default:
				l.errf(x.Pos(), "function %s is not in the profile", fn)
			}
		case *ast.StructLit:
			if t := l.structType(x, name, gopkg, owner); t != nil {
				setShape(t, x)
			}
		case *ast.ListLit:
			if t := l.listType(x, name, gopkg); t != nil {
				setShape(t, x)
			}
		case *ast.ParenExpr, *ast.BinaryExpr:
			if t := l.typeOf(x, name, gopkg, owner); t != nil {
				setShape(t, x)
			}
		default:
			l.errf(term.Pos(), "expression %s is not in the profile", nodeText(term))
		}
	}
	if shape == nil {
		l.errf(e.Pos(), "%s: no base type (write string, int, number, bool, a definition, a struct or a list)", nodeText(e))
		return nil
	}
	for _, c := range cons {
		if !c.fn(shape) {
			l.errf(c.e.Pos(), "constraint %s does not apply to this type", nodeText(c.e))
		}
	}
	// Bounds are required.
	switch shape.Kind {
	case KInt:
		if shape.ConstNum == nil && (shape.Min == nil || shape.Max == nil) {
			l.errf(e.Pos(), "%s: integers need both bounds (e.g. int & >=0 & <=#MaxInt64)", nodeText(e))
		}
		for _, b := range []*Bound{shape.Min, shape.Max} {
			if b != nil {
				if _, err := strconv.ParseInt(b.Lit, 10, 64); err != nil {
					l.errf(e.Pos(), "%s: integer bound %s is not an int64", nodeText(e), b.Lit)
				}
			}
		}
	case KFloat:
		if shape.ConstNum == nil && (shape.Min == nil || shape.Max == nil) {
			l.errf(e.Pos(), "%s: numbers need both bounds (finite), e.g. number & >=0 & <=#MaxFloat64", nodeText(e))
		}
	}
	return shape
}

func constType(lit string, k Kind, pos token.Pos) *Type {
	t := newType(k, pos)
	switch k {
	case KString:
		s, _ := strconv.Unquote(lit)
		t.ConstStr = &s
	case KInt, KFloat:
		t.ConstNum = &lit
	case KBool:
		b := lit == "true"
		t.ConstBool = &b
	}
	return t
}

// mergeScalar adds the constraints of c (a referenced scalar definition) to t.
func mergeScalar(t, c *Type) bool {
	if t.Kind != c.Kind {
		if t.Kind == KFloat && c.Kind == KInt {
			t.Kind = KInt
		} else if !(t.Kind == KInt && c.Kind == KFloat) {
			return false
		}
	}
	t.Patterns = append(t.Patterns, c.Patterns...)
	t.NotPats = append(t.NotPats, c.NotPats...)
	if c.MinRunes >= 0 {
		t.MinRunes = max(t.MinRunes, c.MinRunes)
	}
	if c.MaxRunes >= 0 && (t.MaxRunes < 0 || c.MaxRunes < t.MaxRunes) {
		t.MaxRunes = c.MaxRunes
	}
	if c.MaxBytes >= 0 && (t.MaxBytes < 0 || c.MaxBytes < t.MaxBytes) {
		t.MaxBytes = c.MaxBytes
	}
	if c.Min != nil && t.Min == nil {
		t.Min = c.Min
	}
	if c.Max != nil && t.Max == nil {
		t.Max = c.Max
	}
	return true
}

func (l *loader) disjunction(e ast.Expr, terms []ast.Expr, name, gopkg string, owner *Def) *Type {
	nullable := false
	var rest []ast.Expr
	for _, t := range terms {
		if id, ok := t.(*ast.Ident); ok && id.Name == "null" {
			nullable = true
			continue
		}
		if b, ok := t.(*ast.BasicLit); ok && b.Kind == token.NULL {
			nullable = true
			continue
		}
		if u, ok := t.(*ast.UnaryExpr); ok && u.Op == token.MUL {
			l.errf(u.Pos(), "defaults (*value) are not in the profile: write every value explicitly")
			return nil
		}
		rest = append(rest, t)
	}
	if len(rest) == 0 {
		l.errf(e.Pos(), "null alone is not a type")
		return nil
	}
	if len(rest) == 1 {
		t := l.typeOf(rest[0], name, gopkg, owner)
		if t == nil {
			return nil
		}
		if t.Nullable && nullable {
			l.errf(e.Pos(), "null appears twice")
		}
		t.Nullable = t.Nullable || nullable
		return t
	}
	// Enum of string literals.
	var vals []string
	seen := map[string]bool{}
	for _, t := range rest {
		b, ok := t.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			l.errf(e.Pos(), "%s: disjunctions are only null | T, string enums, or a definition that is a union of discriminated struct definitions", nodeText(e))
			return nil
		}
		s, err := literal.Unquote(b.Value)
		if err != nil || seen[s] {
			l.errf(b.Pos(), "enum value %s is invalid or repeated", b.Value)
			return nil
		}
		seen[s] = true
		vals = append(vals, s)
	}
	t := newType(KEnum, e.Pos())
	t.Enum = vals
	t.EnumName = name
	t.Nullable = nullable
	if owner != nil && owner.GoName == name {
		t.EnumDef = owner
	}
	l.checkName(gopkg, name, e.Pos())
	for _, v := range vals {
		l.checkName(gopkg, name+goConstSuffix(v), e.Pos())
	}
	l.s.Enums = append(l.s.Enums, t)
	t.EnumPkg = gopkg
	return t
}

func (l *loader) listType(x *ast.ListLit, name, gopkg string) *Type {
	t := newType(KList, x.Pos())
	switch len(x.Elts) {
	case 1:
		el, ok := x.Elts[0].(*ast.Ellipsis)
		if !ok {
			break
		}
		if el.Type == nil {
			t.Elem = newType(KRaw, x.Pos())
		} else {
			t.Elem = l.typeOf(el.Type, name+"Item", gopkg, nil)
		}
		if t.Elem == nil {
			return nil
		}
		return t
	case 2:
		el, ok := x.Elts[1].(*ast.Ellipsis)
		if !ok || el.Type == nil || nodeText(x.Elts[0]) != nodeText(el.Type) {
			break
		}
		t.Elem = l.typeOf(el.Type, name+"Item", gopkg, nil)
		if t.Elem == nil {
			return nil
		}
		t.MinItems = 1
		return t
	}
	l.errf(x.Pos(), "list %s is not in the profile: write [...T] or the non-empty [T, ...T]", nodeText(x))
	return nil
}

func (l *loader) structType(x *ast.StructLit, name, gopkg string, owner *Def) *Type {
	// Map form: {[K]: V}
	for _, el := range x.Elts {
		if f, ok := el.(*ast.Field); ok {
			if lab, ok := f.Label.(*ast.ListLit); ok {
				if len(x.Elts) != 1 || len(lab.Elts) != 1 {
					l.errf(f.Pos(), "a pattern constraint [K]: V must be the only element of its struct")
					return nil
				}
				t := newType(KMap, x.Pos())
				t.Key = l.typeOf(lab.Elts[0], name+"Key", gopkg, nil)
				t.Val = l.typeOf(f.Value, name+"Value", gopkg, nil)
				if t.Key == nil || t.Val == nil {
					return nil
				}
				if t.Key.Kind != KString || t.Key.Nullable {
					l.errf(lab.Pos(), "map keys must be string constraints")
				}
				return t
			}
		}
	}
	st := &Struct{GoName: name, GoPkg: gopkg}
	l.checkName(gopkg, name, x.Pos())
	t := newType(KStruct, x.Pos())
	t.Struct = st
	fields := map[string]bool{}
	addField := func(f *ast.Field) {
		lname, _, err := ast.LabelName(f.Label)
		if err != nil {
			l.errf(f.Pos(), "unsupported label: %v", err)
			return
		}
		if strings.HasPrefix(lname, "_") {
			l.rule(f, st)
			return
		}
		if strings.HasPrefix(lname, "#") {
			l.errf(f.Pos(), "nested definition %s is not in the profile: declare it at the top level", lname)
			return
		}
		if fields[lname] {
			l.errf(f.Pos(), "field %s is declared twice in %s", lname, name)
			return
		}
		fields[lname] = true
		goName := goFieldName(lname)
		fld := &Field{JSON: lname, GoName: goName, Optional: f.Constraint == token.OPTION, Doc: docOf(f), Pos: f.Pos(), RawMaxBytes: -1}
		fld.Type = l.typeOf(f.Value, name+goName, gopkg, nil)
		if fld.Type == nil {
			return
		}
		attrs, err := rayflowAttrs(f.Attrs)
		if err != nil {
			l.errf(f.Pos(), "%v", err)
		}
		for k, v := range attrs {
			switch k {
			case "maxBytes":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					l.errf(f.Pos(), "maxBytes must be a positive integer")
					continue
				}
				switch {
				case fld.Type.Kind == KString:
					fld.Type.MaxBytes = n
				case fld.Type.Kind == KList && fld.Type.Elem.Kind == KString && !fld.Type.Elem.Nullable:
					fld.Type.Elem.MaxBytes = n
				case (fld.Type.Kind == KRef && fld.Type.Ref.Kind == DefStruct || fld.Type.Kind == KStruct || fld.Type.Kind == KMap) && !fld.Type.Nullable:
					// A member's encoded size: checked by the decoder on the
					// input bytes (and by schema/internal/cueref for CUE).
					if owner == nil {
						l.errf(f.Pos(), "maxBytes on a record member is only supported on fields declared directly in a definition")
					}
					fld.RawMaxBytes = n
					continue
				default:
					l.errf(f.Pos(), "maxBytes applies to string fields, lists of strings and non-null struct or map members")
				}
				if owner != nil {
					owner.ByteCaps = append(owner.ByteCaps, fld)
				} else {
					l.errf(f.Pos(), "maxBytes is only supported on fields declared directly in a definition (CUE's evaluator checks it through %s)", GeneratedCUE)
				}
			default:
				l.errf(f.Pos(), "unknown attribute key %q", k)
			}
		}
		if fld.Optional && fld.Type.Nullable {
			l.errf(f.Pos(), "field %s is both optional and nullable; choose one", lname)
		}
		st.Fields = append(st.Fields, fld)
	}
	for _, el := range x.Elts {
		switch y := el.(type) {
		case *ast.Field:
			addField(y)
		case *ast.EmbedDecl:
			id, ok := y.Expr.(*ast.Ident)
			if !ok || !strings.HasPrefix(id.Name, "#") || l.s.ByName[id.Name[1:]] == nil {
				l.errf(y.Pos(), "only struct definitions can be embedded")
				continue
			}
			d := l.s.ByName[id.Name[1:]]
			l.resolve(d)
			if d.Kind != DefStruct {
				l.errf(y.Pos(), "only struct definitions can be embedded (#%s is not one)", d.Name)
				continue
			}
			for _, f := range d.Type.Struct.Fields {
				if fields[f.JSON] {
					l.errf(y.Pos(), "embedded field %s conflicts with a field of %s", f.JSON, name)
					continue
				}
				fields[f.JSON] = true
				st.Fields = append(st.Fields, f)
			}
			st.Rules = append(st.Rules, d.Type.Struct.Rules...)
		case *ast.Comprehension:
			l.comprehension(y, st)
		case *ast.LetClause, *ast.CommentGroup:
		case *ast.Ellipsis:
			l.errf(y.Pos(), "open structs (...) are not in the profile: definitions are closed")
		default:
			l.errf(el.Pos(), "%T inside a struct is not in the profile", el)
		}
	}
	l.s.Structs = append(l.s.Structs, st)
	return t
}

// rule records a hidden field marked @rayflow(rule=ID).
func (l *loader) rule(f *ast.Field, st *Struct) {
	attrs, err := rayflowAttrs(f.Attrs)
	if err != nil {
		l.errf(f.Pos(), "%v", err)
		return
	}
	id := attrs["rule"]
	if id == "" || !isRuleID(id) {
		name, _, _ := ast.LabelName(f.Label)
		l.errf(f.Pos(), "hidden field %s: a constraint the generator cannot translate must be marked @rayflow(rule=snake_case_id) and implemented by hand in Go", name)
		return
	}
	for _, r := range st.Rules {
		if r == id {
			return // the same rule may guard several branches
		}
	}
	st.Rules = append(st.Rules, id)
}

func (l *loader) comprehension(c *ast.Comprehension, st *Struct) {
	body, ok := c.Value.(*ast.StructLit)
	if !ok {
		l.errf(c.Pos(), "comprehension body must be a struct")
		return
	}
	for _, el := range body.Elts {
		switch y := el.(type) {
		case *ast.Field:
			name, _, _ := ast.LabelName(y.Label)
			if !strings.HasPrefix(name, "_") {
				l.errf(y.Pos(), "comprehensions may only add hidden rule fields (found %s); conditional fields are not in the profile", name)
				continue
			}
			l.rule(y, st)
		case *ast.Comprehension:
			l.comprehension(y, st)
		case *ast.LetClause, *ast.CommentGroup:
		default:
			l.errf(el.Pos(), "%T inside a comprehension is not in the profile", el)
		}
	}
}

func isRuleID(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return s != ""
}
