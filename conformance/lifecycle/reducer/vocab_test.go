package reducer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

// The vocabularies are gen/lifecycle's (schema/lifecycle.cue is their one
// source): the reducer declares no string type but EventKind, the union of
// two generated ones, and no exported or typed string constant.
func TestDeclaresNoVocabulary(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var stringTypes, stringConsts []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if id, ok := s.Type.(*ast.Ident); ok && id.Name == "string" {
						stringTypes = append(stringTypes, s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						lit, ok := v.(*ast.BasicLit)
						named := s.Type != nil || s.Names[i].IsExported()
						if g.Tok == token.CONST && ok && lit.Kind == token.STRING && named {
							stringConsts = append(stringConsts, s.Names[i].Name)
						}
					}
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"EventKind"}, stringTypes); diff != "" {
		t.Errorf("string types declared by the reducer (-want +got):\n%s", diff)
	}
	if len(stringConsts) > 0 {
		t.Errorf("string constants declared by the reducer: %v; use gen/lifecycle's", stringConsts)
	}
}

func TestEventKinds(t *testing.T) {
	t.Parallel()
	if got, want := len(reducer.EventKinds), len(lifecycle.CommandValues)+len(lifecycle.CallbackValues); got != want {
		t.Fatalf("%d event kinds, want %d", got, want)
	}
	tests := []struct {
		kind                   reducer.EventKind
		valid, command, answer bool
	}{
		{reducer.EventKind(lifecycle.CommandValidationRequested), true, true, false},
		{reducer.EventKind(lifecycle.CommandOuterDeadlineExpired), true, true, false},
		{reducer.EventKind(lifecycle.CallbackValidated), true, false, true},
		{reducer.EventKind(lifecycle.CallbackDeadlineExpired), true, false, true},
		{"", false, false, false},
		{"LAUNCH_REQUESTED", false, false, false},
		{"validated", false, false, false},
	}
	for _, tt := range tests {
		if got := [3]bool{tt.kind.Valid(), tt.kind.IsCommand(), tt.kind.IsCallback()}; got != [3]bool{tt.valid, tt.command, tt.answer} {
			t.Errorf("%q: Valid, IsCommand, IsCallback = %v, want %v", tt.kind, got, [3]bool{tt.valid, tt.command, tt.answer})
		}
	}
	for _, k := range reducer.EventKinds {
		if k.IsCommand() == k.IsCallback() {
			t.Errorf("%s is both or neither a command and a callback", k)
		}
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	for _, a := range lifecycle.ActionValues {
		if !reducer.Allows(a, reducer.EventKind(lifecycle.CallbackDeadlineExpired)) {
			t.Errorf("%s does not accept DEADLINE_EXPIRED", a)
		}
		for _, c := range lifecycle.CommandValues {
			if reducer.Allows(a, reducer.EventKind(c)) {
				t.Errorf("%s accepts command %s as its answer", a, c)
			}
		}
	}
	if reducer.Allows(lifecycle.ActionValidate, reducer.EventKind(lifecycle.CallbackPrepared)) {
		t.Error("VALIDATE accepts PREPARED")
	}
	if reducer.Allows("LAUNCH", reducer.EventKind(lifecycle.CallbackDeadlineExpired)) {
		t.Error("an unknown action accepts a callback")
	}
}
