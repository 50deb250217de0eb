package schema_test

import (
	"bytes"
	cueerrors "cuelang.org/go/cue/errors"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/rt"
)

// TestFixtures regenerates (-update) or checks the generated fixtures.
func TestFixtures(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range allFixtures(t) {
		path := f.dir() + "/" + f.Name + ".json"
		if seen[path] {
			t.Fatalf("fixture %s declared twice", path)
		}
		seen[path] = true
		b := f.build(t)
		want := strings.Join(f.Want, "\n")
		if want != "" {
			want += "\n"
		}
		wantPath := strings.TrimSuffix(path, ".json") + ".want"
		if *update {
			if err := os.MkdirAll(f.dir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if want != "" {
				if err := os.WriteFile(wantPath, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s is stale or missing; run go test ./schema -run TestFixtures -update", path)
		}
		if want != "" {
			if got, _ := os.ReadFile(wantPath); string(got) != want {
				t.Errorf("%s is stale or missing; run go test ./schema -run TestFixtures -update", wantPath)
			}
		}
	}
}

// TestDifferential gives every fixture on disk to CUE's evaluator and to the
// generated Go: both must agree with each other and with the directory.
func TestDifferential(t *testing.T) {
	ref := reference(t)
	files := fixtureFiles(t)
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		cueErr := ref.Check(f.Def, data)
		goErr := goVerdict(t, f.Def, data)
		if (cueErr == nil) != (goErr == nil) {
			t.Errorf("%s: verdicts differ:\n  cue: %v\n  go:  %v", f.Path, cueErr, goErr)
			continue
		}
		if strings.HasPrefix(filepath.Base(f.Path), "rule_") && (cueErr == nil || !strings.Contains(cueerrors.Details(cueErr, nil), "._r")) {
			t.Errorf("%s: CUE did not reject it through a rule field: %v", f.Path, cueErr)
		}
		if f.Valid && goErr != nil {
			t.Errorf("%s: valid fixture rejected: %v", f.Path, goErr)
		}
		if !f.Valid && goErr == nil {
			t.Errorf("%s: invalid fixture accepted by both", f.Path)
		}
		wantPath := strings.TrimSuffix(f.Path, ".json") + ".want"
		if want, err := os.ReadFile(wantPath); err == nil && goErr != nil {
			var ve *rt.ValidationError
			errors.As(goErr, &ve)
			for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				code, path, _ := strings.Cut(line, " ")
				found := false
				for _, e := range ve.Errors {
					if e.Path == path && e.Code == code {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: want error %q, got %v", f.Path, line, goErr)
				}
			}
		}
	}
}
