package gen

import (
	"bytes"
	"fmt"
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
		out[filepath.Join(genDir, "rt", strings.TrimSuffix(f.Name, ".go")+"_gen.go")] = append([]byte(Header), f.Src...)
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
