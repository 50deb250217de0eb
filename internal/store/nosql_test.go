package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sqlWord finds a statement of SQL in a Go string literal.
var sqlWord = regexp.MustCompile(`\b(SELECT|INSERT INTO|UPDATE|DELETE FROM|CREATE (TABLE|INDEX|FUNCTION|DATABASE)|ALTER TABLE|DROP (TABLE|DATABASE)|COPY|TRUNCATE)\b|\bLISTEN\s+["a-z]`)

// sqlOwners may hold SQL outside this package: generated code, and the
// test helper that creates and drops each test's database.
var sqlOwners = []string{"gen", "internal/store", "internal/pgtest"}

// The store owns every SQL statement of the project: no production Go file
// elsewhere has a string literal holding SQL (tests may, for fixtures).
func TestNoSQLOutsideStore(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(sqlOwners, rel) || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && sqlWord.MatchString(lit.Value) {
				found = true
			}
			return !found
		})
		if found {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("production files holding SQL outside internal/store (-want +got):\n%s", diff)
	}
}
