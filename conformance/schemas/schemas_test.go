package schemas

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/registry"
	"github.com/rayflow/rayflow/gen/rt"
)

const testdata = "../../schema/testdata"

type fixture struct {
	def, path string
	valid     bool
	want      []string // "CODE PATH"
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	for _, kind := range []string{"valid", "invalid"} {
		defs, err := os.ReadDir(filepath.Join(testdata, kind))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range defs {
			files, _ := filepath.Glob(filepath.Join(testdata, kind, d.Name(), "*.json"))
			sort.Strings(files)
			for _, f := range files {
				fx := fixture{def: d.Name(), path: f, valid: kind == "valid"}
				if b, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".want"); err == nil {
					fx.want = strings.Split(strings.TrimSpace(string(b)), "\n")
				}
				out = append(out, fx)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no schema fixtures")
	}
	return out
}

// TestGenerated runs every fixture through the generated decoder.
func TestGenerated(t *testing.T) {
	for _, f := range fixtures(t) {
		s, ok := registry.Lookup(f.def)
		if !ok {
			t.Errorf("%s: no generated decoder for #%s", f.path, f.def)
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Decode(data)
		if f.valid != (err == nil) {
			t.Errorf("%s: valid=%v, got %v", f.path, f.valid, err)
			continue
		}
		if err == nil {
			continue
		}
		var ve *rt.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: error %T is not *rt.ValidationError", f.path, err)
			continue
		}
		for _, w := range f.want {
			code, path, _ := strings.Cut(w, " ")
			found := false
			for _, e := range ve.Errors {
				found = found || e.Code == code && e.Path == path
			}
			if !found {
				t.Errorf("%s: want %q, got %v", f.path, w, err)
			}
		}
	}
}

// TestCLI runs every fixture through `rayflow validate`, one process per
// definition.
func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rayflow binary")
	}
	bin := filepath.Join(t.TempDir(), "rayflow")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/rayflow/rayflow/tools/rayflow").CombinedOutput(); err != nil {
		t.Fatalf("build rayflow: %v\n%s", err, out)
	}
	byDef := map[string][]fixture{}
	var defs []string
	for _, f := range fixtures(t) {
		if byDef[f.def] == nil {
			defs = append(defs, f.def)
		}
		byDef[f.def] = append(byDef[f.def], f)
	}
	for _, def := range defs {
		fs := byDef[def]
		args := []string{"validate", "--schema", def}
		anyInvalid := false
		for _, f := range fs {
			args = append(args, f.path)
			anyInvalid = anyInvalid || !f.valid
		}
		out, err := exec.Command(bin, args...).Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 3}[anyInvalid]; code != want { // 3: input rejected by a contract rule
			t.Errorf("%s: exit %d, want %d", def, code, want)
		}
		lines := strings.Split(string(out), "\n")
		for _, f := range fs {
			var mine []string
			for _, l := range lines {
				if strings.HasPrefix(l, f.path+": ") {
					mine = append(mine, strings.TrimPrefix(l, f.path+": "))
				}
			}
			okLine := len(mine) == 1 && mine[0] == "ok"
			if f.valid != okLine {
				t.Errorf("%s: valid=%v, rayflow validate printed %q", f.path, f.valid, mine)
				continue
			}
			for _, w := range f.want {
				code, path, _ := strings.Cut(w, " ")
				if path == "" {
					path = "/"
				}
				found := false
				for _, l := range mine {
					found = found || strings.HasPrefix(l, path+": "+code+": ")
				}
				if !found {
					t.Errorf("%s: want %q in %q", f.path, w, mine)
				}
			}
		}
	}
}
