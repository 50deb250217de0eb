package chromium_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rayflow/rayflow/serve/internal/chromium"
)

// Path finds either name on PATH, the first name first, and says
// ErrNotFound when there is neither.
func TestPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		install []string // executables put on PATH
		want    string   // the one Path returns; "" for ErrNotFound
	}{
		{"chromium", []string{"chromium"}, "chromium"},
		{"chromium-browser", []string{"chromium-browser"}, "chromium-browser"},
		{"both: chromium first", []string{"chromium-browser", "chromium"}, "chromium"},
		{"neither", nil, ""},
		{"not executable", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range tc.install {
				if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "not executable" {
				if err := os.WriteFile(filepath.Join(dir, "chromium"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			got, err := chromium.Path()
			switch {
			case tc.want == "" && !errors.Is(err, chromium.ErrNotFound):
				t.Fatalf("Path() = %q, %v; want ErrNotFound", got, err)
			case tc.want != "" && (err != nil || got != filepath.Join(dir, tc.want)):
				t.Fatalf("Path() = %q, %v; want %s", got, err, filepath.Join(dir, tc.want))
			}
		})
	}
}
