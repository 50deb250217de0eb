package gen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	cueformat "cuelang.org/go/cue/format"
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
