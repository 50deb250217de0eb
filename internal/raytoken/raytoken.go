package raytoken

import (
	"os"
	"path/filepath"
	"strings"
)

// Token returns $RAY_AUTH_TOKEN, else the contents of the file named by
// $RAY_AUTH_TOKEN_PATH, else of ~/.ray/auth_token, trimmed; "" when there
// is none.
func Token() string {
	if t := os.Getenv("RAY_AUTH_TOKEN"); t != "" {
		return strings.TrimSpace(t)
	}
	path := Path()
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Path is the token file Ray reads: $RAY_AUTH_TOKEN_PATH, else
// ~/.ray/auth_token ("" without a home directory).
func Path() string {
	if p := os.Getenv("RAY_AUTH_TOKEN_PATH"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".ray", "auth_token")
}
