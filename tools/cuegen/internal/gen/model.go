package gen

import "cuelang.org/go/cue/token"

// Kind is the shape of a Type.
type Kind int

// Type kinds.
const (
	KString Kind = iota
	KInt
	KFloat
	KBool
	KStruct
	KList
	KMap
	KRef // reference to a struct or union definition
	KEnum
	KRaw  // unconstrained JSON (_)
	KNull // the single value null (Go rt.Null, encodes as null)
)

// Bound is a numeric bound kept as its CUE literal text.
type Bound struct {
	Lit       string
	Exclusive bool
}

// Type is one translated CUE type with all its constraints.
type Type struct {
	Kind     Kind
	Nullable bool
	Pos      token.Pos

	// scalars
	ConstStr  *string
	ConstNum  *string
	ConstBool *bool
	Patterns  []string
	NotPats   []string
	MinRunes  int // -1 when absent
	MaxRunes  int // -1 when absent
	MaxBytes  int // -1 when absent
	Min, Max  *Bound

	// enum (inline or definition)
	Enum     []string
	EnumName string // Go type name of the enum
	EnumDef  *Def   // definition declaring the enum, when named
	EnumPkg  string // Go package of the enum type

	// struct
	Struct *Struct

	// list
	Elem     *Type
	MinItems int // -1 when absent
	MaxItems int // -1 when absent
	Unique   bool

	// map
	Key       *Type
	Val       *Type
	MinFields int
	MaxFields int

	// ref
	Ref *Def
}

func newType(k Kind, pos token.Pos) *Type {
	return &Type{Kind: k, Pos: pos, MinRunes: -1, MaxRunes: -1, MaxBytes: -1, MinItems: -1, MaxItems: -1, MinFields: -1, MaxFields: -1}
}

// Struct is a closed record.
type Struct struct {
	GoName string
	GoPkg  string
	Doc    string
	Fields []*Field
	Rules  []string // rule IDs, in declaration order
	Def    *Def     // the definition, if this struct is one
}

// Field is one struct field.
type Field struct {
	JSON     string
	GoName   string
	Optional bool
	Type     *Type
	Doc      string
	Pos      token.Pos

	// RawMaxBytes caps the member's value as it appears in the input
	// (@rayflow(maxBytes=N) on a non-null struct or map field), -1 if none.
	// It is a decode-time wire rule: Validate() on a constructed value cannot
	// know the encoding.
	RawMaxBytes int
}

// DefKind says what a definition declares.
type DefKind int

// Definition kinds.
const (
	DefStruct DefKind = iota
	DefUnion
	DefEnum
	DefScalar // a reusable constrained scalar: inlined where used
	DefConst  // a constant: emitted as a Go const
)

// Def is one top-level definition (#Name).
type Def struct {
	Name     string // without '#'
	GoName   string
	GoPkg    string
	File     string
	Pos      token.Pos
	Doc      string
	Kind     DefKind
	MaxBytes int // record byte cap (@rayflow(maxBytes=N) on the definition), -1 if none

	Type *Type // struct, enum or scalar type

	// union
	Variants []*Def
	Tag      string

	// const
	ConstLit  string // Go literal
	ConstKind Kind

	// ByteCaps are the fields declared directly in this definition that
	// carry @rayflow(maxBytes=N).
	ByteCaps []*Field

	resolving bool
	resolved  bool
	expr      any // ast.Expr
	attrs     any
}

// Value is a concrete top-level value (not a definition) emitted as a Go
// variable of a definition's type, such as a limits profile.
type Value struct {
	Path   string // CUE path, e.g. limits.v1
	GoName string
	GoPkg  string
	Def    *Def
	Doc    string
	Pos    token.Pos
	JSON   []byte // the evaluated value, compact JSON (set by Generate)
}
