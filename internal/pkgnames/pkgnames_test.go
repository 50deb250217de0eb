// Package pkgnames_test holds the rule that every importable package of the
// module has its own name, so that no import needs an alias to tell two
// packages apart. The package has only tests: it is not importable itself.
package pkgnames_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allowed lists the duplicate names that remain for now, each with the exact
// import paths that share it. An entry here is a debt: when the packages are
// renamed, the entry must go (the test fails on a stale entry).
var allowed = map[string][]string{}

// listedPackage is the part of `go list -json` this test reads.
type listedPackage struct {
	ImportPath string
	Name       string
	GoFiles    []string
	CgoFiles   []string
}

// importable reports whether another package can import p: it is not a
// command and it has non-test Go files (a folder of tests only, such as this
// one, cannot be imported).
func (p listedPackage) importable() bool {
	return p.Name != "main" && len(p.GoFiles)+len(p.CgoFiles) > 0
}

// duplicates returns, for every package name that more than one importable
// package uses, the sorted import paths that use it.
func duplicates(pkgs []listedPackage) map[string][]string {
	byName := map[string][]string{}
	for _, p := range pkgs {
		if p.importable() {
			byName[p.Name] = append(byName[p.Name], p.ImportPath)
		}
	}
	dups := map[string][]string{}
	for name, paths := range byName {
		if len(paths) > 1 {
			slices.Sort(paths)
			dups[name] = paths
		}
	}
	return dups
}

// decodePackages reads the stream of JSON objects `go list -json` prints.
func decodePackages(r io.Reader) ([]listedPackage, error) {
	var pkgs []listedPackage
	dec := json.NewDecoder(r)
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

func TestDuplicates(t *testing.T) {
	t.Parallel()
	pkg := func(path, name string, goFiles ...string) listedPackage {
		return listedPackage{ImportPath: path, Name: name, GoFiles: goFiles}
	}
	tests := []struct {
		name string
		pkgs []listedPackage
		want map[string][]string
	}{
		{"none", nil, map[string][]string{}},
		{"unique names", []listedPackage{pkg("m/a", "a", "a.go"), pkg("m/b", "b", "b.go")}, map[string][]string{}},
		{"two packages share a name", []listedPackage{pkg("m/y/rt", "rt", "x.go"), pkg("m/x/rt", "rt", "x.go"), pkg("m/b", "b", "b.go")},
			map[string][]string{"rt": {"m/x/rt", "m/y/rt"}}},
		{"three share a name, sorted", []listedPackage{pkg("m/c/l", "l", "l.go"), pkg("m/a/l", "l", "l.go"), pkg("m/b/l", "l", "l.go")},
			map[string][]string{"l": {"m/a/l", "m/b/l", "m/c/l"}}},
		{"a package name that differs from its folder counts by name", []listedPackage{pkg("m/x/workflow", "xflow", "w.go"), pkg("m/y/workflow", "yflow", "w.go")},
			map[string][]string{}},
		{"commands are not importable", []listedPackage{pkg("m/cmd/a", "main", "a.go"), pkg("m/cmd/b", "main", "b.go")}, map[string][]string{}},
		{"a folder of tests only is not importable", []listedPackage{pkg("m/scripts", "scripts"), pkg("m/lib/scripts", "scripts", "s.go")}, map[string][]string{}},
		{"cgo files make a package importable", []listedPackage{{ImportPath: "m/a/c", Name: "c", CgoFiles: []string{"c.go"}}, pkg("m/b/c", "c", "c.go")},
			map[string][]string{"c": {"m/a/c", "m/b/c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, duplicates(tt.pkgs)); diff != "" {
				t.Errorf("duplicates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodePackagesRefusesBadJSON(t *testing.T) {
	t.Parallel()
	_, err := decodePackages(bytes.NewReader([]byte(`{"ImportPath":"m/a","Name":"a"}{"ImportPath":`)))
	var syn *json.SyntaxError
	if !errors.As(err, &syn) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("decodePackages of truncated JSON: %v, want a JSON syntax error or unexpected EOF", err)
	}
}

// TestImportablePackageNamesAreUnique lists every package of the module and
// fails on a package name that two importable packages share, unless the
// pair is in allowed.
func TestImportablePackageNamesAreUnique(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,GoFiles,CgoFiles", "github.com/rayflow/rayflow/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs, err := decodePackages(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the listing is broken", len(pkgs))
	}
	if diff := cmp.Diff(allowed, duplicates(pkgs)); diff != "" {
		t.Errorf("importable packages sharing a name (-allowed +found); rename the new duplicate, "+
			"or remove a stale entry from allowed:\n%s", diff)
	}
}
