package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueformat "cuelang.org/go/cue/format"
	"cuelang.org/go/cue/load"
)

// RuntimeFile is one source file of the shared run-time package.
type RuntimeFile struct {
	Name string
	Src  []byte
}

// RuntimeSourcePackage is the package name of the run-time sources
// (tools/cuegen/rtsrc) and RuntimePackage the name they are emitted under
// (gen/rt). The names differ so that no two packages of the module share a
// name; the emitted files differ from their sources only in that name.
const (
	RuntimeSourcePackage = "rtsrc"
	RuntimePackage       = "rt"
)

// ErrRuntimeSource is wrapped by the errors of RuntimeSource.
var ErrRuntimeSource = errors.New("run-time source")

// RuntimeSource returns f's source as package RuntimePackage: the package
// clause "package rtsrc" becomes "package rt", and a package comment that
// begins "Package rtsrc " begins "Package rt ". Everything else is copied
// byte for byte. A file that does not parse, or whose package is not
// RuntimeSourcePackage, is refused with an error wrapping ErrRuntimeSource.
func RuntimeSource(f RuntimeFile) ([]byte, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f.Name, f.Src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRuntimeSource, f.Name, err)
	}
	if file.Name.Name != RuntimeSourcePackage {
		return nil, fmt.Errorf("%w %s: package %s, want package %s", ErrRuntimeSource, f.Name, file.Name.Name, RuntimeSourcePackage)
	}
	type edit struct {
		off  int
		old  string
		repl string
	}
	edits := []edit{{fset.Position(file.Name.Pos()).Offset, RuntimeSourcePackage, RuntimePackage}}
	if file.Doc != nil {
		first := file.Doc.List[0]
		prefix := "// Package " + RuntimeSourcePackage + " "
		if strings.HasPrefix(first.Text, prefix) {
			off := fset.Position(first.Pos()).Offset + len("// Package ")
			edits = append([]edit{{off, RuntimeSourcePackage, RuntimePackage}}, edits...)
		}
	}
	out := make([]byte, 0, len(f.Src))
	last := 0
	for _, e := range edits {
		if string(f.Src[e.off:e.off+len(e.old)]) != e.old {
			return nil, fmt.Errorf("%w %s: no %q at offset %d", ErrRuntimeSource, f.Name, e.old, e.off)
		}
		out = append(out, f.Src[last:e.off]...)
		out = append(out, e.repl...)
		last = e.off + len(e.old)
	}
	return append(out, f.Src[last:]...), nil
}

// Generate loads schemaDir and returns every output file, keyed by a path
// relative to the repository root layout: "gen/<pkg>/schema_gen.go",
// "gen/rt/<file>", "gen/registry/registry_gen.go" and
// "schema/zz_generated_bytecaps.cue" (paths use genDir and schemaDir as
// given).
func Generate(schemaDir, genDir string, opt Options, runtime []RuntimeFile) (map[string][]byte, error) {
	s, err := Load(schemaDir)
	if err != nil {
		return nil, err
	}
	if err := evalValues(s); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, p := range s.GoPkgs {
		src, err := EmitPackage(s, p, opt)
		if err != nil {
			return nil, err
		}
		out[filepath.Join(genDir, p, "schema_gen.go")] = src
	}
	reg, err := EmitRegistry(s, opt)
	if err != nil {
		return nil, err
	}
	out[filepath.Join(genDir, "registry", "registry_gen.go")] = reg
	for _, f := range runtime {
		src, err := RuntimeSource(f)
		if err != nil {
			return nil, err
		}
		out[filepath.Join(genDir, RuntimePackage, strings.TrimSuffix(f.Name, ".go")+"_gen.go")] = append([]byte(Header), src...)
	}
	caps, err := cueformat.Source(EmitByteCapsCUE(s))
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", GeneratedCUE, err)
	}
	out[filepath.Join(schemaDir, GeneratedCUE)] = caps
	return out, nil
}

// Write writes files and deletes generated Go files under genDir that are
// no longer produced (hand-written files, which lack the generated header,
// are never touched).
func Write(files map[string][]byte, genDir string) error {
	keep := map[string]bool{}
	var names []string
	for n := range files {
		keep[filepath.Clean(n)] = true
		names = append(names, n)
	}
	sort.Strings(names)
	_ = filepath.WalkDir(genDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || keep[filepath.Clean(path)] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.HasPrefix(b, []byte(Header)) {
			return os.Remove(path)
		}
		return nil
	})
	for _, n := range names {
		if err := os.MkdirAll(filepath.Dir(n), 0o755); err != nil {
			return err
		}
		if old, err := os.ReadFile(n); err == nil && bytes.Equal(old, files[n]) {
			continue
		}
		if err := os.WriteFile(n, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// evalValues evaluates every concrete value with CUE's evaluator (at
// generation time only) and keeps its JSON; the generated Go decodes and
// validates it at init with the definition's own decoder.
func evalValues(s *Schema) error {
	if len(s.Values) == 0 {
		return nil
	}
	insts := load.Instances([]string{"."}, &load.Config{Dir: s.Dir})
	if len(insts) != 1 || insts[0].Err != nil {
		if len(insts) == 1 {
			return insts[0].Err
		}
		return fmt.Errorf("expected one CUE instance in %s", s.Dir)
	}
	root := cuecontext.New().BuildInstance(insts[0])
	if err := root.Err(); err != nil {
		return err
	}
	for _, v := range s.Values {
		d := s.ByName[v.Def.Name]
		if d == nil || d.Kind != DefStruct {
			return fmt.Errorf("value %s: #%s is not a struct definition", v.Path, v.Def.Name)
		}
		v.Def = d
		if d.GoPkg != v.GoPkg {
			return fmt.Errorf("value %s: #%s must be in the same Go package", v.Path, d.Name)
		}
		cv := root.LookupPath(cue.ParsePath(v.Path))
		if err := cv.Validate(cue.Concrete(true)); err != nil {
			return fmt.Errorf("value %s: %w", v.Path, err)
		}
		b, err := cv.MarshalJSON()
		if err != nil {
			return fmt.Errorf("value %s: %w", v.Path, err)
		}
		v.JSON = b
	}
	return nil
}
