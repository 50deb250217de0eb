package gen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func render(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		b.WriteString("-- " + filepath.ToSlash(n) + " --\n")
		b.Write(files[n])
	}
	return b.Bytes()
}

// TestGolden generates small schemas and compares the output with golden
// files (refresh with -update).
func TestGolden(t *testing.T) {
	t.Parallel()
	dirs, _ := filepath.Glob("testdata/golden/*")
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			files, err := Generate(dir, "gen", Options{GenImport: "example.com/demo/gen"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// the CUE companion is written next to the schema; name it stably
			for n, b := range files {
				if strings.HasPrefix(n, dir) {
					delete(files, n)
					files["schema/"+filepath.Base(n)] = b
				}
			}
			got := render(t, files)
			golden := dir + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s mismatch (-want +got); run go test -update:\n%s", golden, d)
			}
		})
	}
}

// TestRefuse checks that out-of-profile schemas are refused with a readable
// message naming the place.
func TestRefuse(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/refuse/*.cue")
	if len(files) == 0 {
		t.Fatal("no cases")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".cue"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(src), "\n")
			want := strings.TrimSpace(strings.TrimPrefix(first, "// want:"))
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.cue"), src, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Load(dir)
			if err == nil {
				t.Fatalf("schema accepted; want an error containing %q", want)
			}
			if _, ok := err.(*ProfileError); !ok {
				t.Fatalf("error %T, want *ProfileError: %v", err, err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
			if !strings.Contains(err.Error(), "a.cue:") {
				t.Fatalf("error %q does not name the file and line", err)
			}
		})
	}
}

func TestCamel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"task_execution_pk":  "TaskExecutionPK",
		"run_id":             "RunID",
		"cpu-shared-memory":  "CPUSharedMemory",
		"DRAIN_FAILED":       "DrainFailed",
		"maxBytes":           "MaxBytes",
		"v1":                 "V1",
		"limits.terminal-v1": "LimitsTerminalV1",
	} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}
