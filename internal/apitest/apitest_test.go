package apitest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExported lists exported declarations of every kind, skips test
// files, methods and unexported names.
func TestExported(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const (
	A = 1
	b = 2
)

var V, w = 1, 2

type T struct{}

type u int

func F() {}

func (T) M() {}

func g() {}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc TestX() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Exported(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"const A", "func F", "type T", "var V"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Exported (-want +got):\n%s", d)
	}
	if _, err := Exported(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Exported of a missing directory did not fail")
	}
}
