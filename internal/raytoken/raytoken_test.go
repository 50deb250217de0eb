package raytoken

import (
	"os"
	"path/filepath"
	"testing"
)

func TestToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte(" from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir) // no ~/.ray/auth_token there
	for _, tc := range []struct{ env, path, want string }{
		{"", "", ""},
		{"", file, "from-file"},
		{" from-env ", file, "from-env"},
		{"", filepath.Join(dir, "missing"), ""},
	} {
		t.Setenv("RAY_AUTH_TOKEN", tc.env)
		t.Setenv("RAY_AUTH_TOKEN_PATH", tc.path)
		if got := Token(); got != tc.want {
			t.Errorf("env %q path %q: Token() = %q, want %q", tc.env, tc.path, got, tc.want)
		}
	}
}
