package rayenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPython: $RAYFLOW_PYTHON wins; else the nearest .venv-ray upwards from
// the working directory; else "".
func TestPython(t *testing.T) {
	root := t.TempDir()
	venv := filepath.Join(root, ".venv-ray", "bin")
	deep := filepath.Join(root, "a", "b")
	for _, d := range []string{venv, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	py := filepath.Join(venv, "python")
	if err := os.WriteFile(py, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, env, dir, want string
	}{
		{"environment", "/opt/py", deep, "/opt/py"},
		{"nearest venv upwards", "", deep, py},
		{"none", "", t.TempDir(), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(PythonEnv, c.env)
			t.Chdir(c.dir)
			if got := Python(); got != c.want {
				t.Fatalf("Python() = %q, want %q", got, c.want)
			}
		})
	}
}
