package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/rayflow/rayflow/tools/cuegen/internal/gen"
)

// TestNoDrift regenerates from ../../schema in memory and compares with the
// committed gen/ tree (the same check as `go generate ./... && git diff
// --exit-code gen/`).
func TestNoDrift(t *testing.T) {
	t.Parallel()
	rt, err := runtime()
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate("../../schema", "../../gen", gen.Options{GenImport: "github.com/rayflow/rayflow/gen"}, rt)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go generate ./schema", name)
		}
	}
}
