package gen

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRuntimeSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"clause only", "package rtsrc\n\nfunc F() {}\n", "package rt\n\nfunc F() {}\n"},
		{"package comment", "// Package rtsrc is the run-time.\n// Not rtsrc here.\npackage rtsrc\n", "// Package rt is the run-time.\n// Not rtsrc here.\npackage rt\n"},
		{"other comment kept", "// Code about rtsrc.\n\n// Package rtsrcx is not a match.\npackage rtsrc\n", "// Code about rtsrc.\n\n// Package rtsrcx is not a match.\npackage rt\n"},
		{"trailing comment and body kept", "package rtsrc // the source\n\nconst S = \"package rtsrc\"\n", "package rt // the source\n\nconst S = \"package rtsrc\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RuntimeSource(RuntimeFile{Name: "f.go", Src: []byte(tt.src)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("RuntimeSource (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRuntimeSourceRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src string }{
		{"already rt", "package rt\n"},
		{"another package", "package rtsrcx\n"},
		{"no package clause", "func F() {}\n"},
		{"empty", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RuntimeSource(RuntimeFile{Name: "f.go", Src: []byte(tt.src)})
			if !errors.Is(err, ErrRuntimeSource) {
				t.Fatalf("RuntimeSource(%q) = %v, want an error wrapping ErrRuntimeSource", tt.src, err)
			}
		})
	}
}
