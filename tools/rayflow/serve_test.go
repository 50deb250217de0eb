package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/internal/testwait"
)

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("tokens", "ops secret-token-0123456789 *\n")
	t.Setenv("RAYFLOW_SERVE_TOKENS", "")
	t.Setenv("RAYFLOW_SERVE_CURSOR_KEYS", "")
	for name, args := range map[string][]string{
		"no tokens":        {"serve"},
		"missing file":     {"serve", "--tokens-file", filepath.Join(dir, "absent")},
		"short token":      {"serve", "--tokens-file", write("short", "ops short *\n")},
		"short cursor key": {"serve", "--tokens-file", good, "--cursor-keys-file", write("keys", strings.Repeat("k", 31)+"\n")},
		"extra argument":   {"serve", "--tokens-file", good, "x"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}); code != exitUsage {
			t.Errorf("%s: exit %d, want %d (%s)", name, code, exitUsage, errb.String())
		}
		if strings.Contains(errb.String(), "secret-token") {
			t.Errorf("%s: a token was printed: %s", name, errb.String())
		}
	}
}

// TestServeRuns starts rayflow serve on a free port against PostgreSQL,
// checks the probes and a refused request, and stops it by cancelling.
func TestServeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	url := pgtest.URL(t)
	if _, err := durable.Migrate(context.Background(), pgtest.PoolAt(t, url)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("RAYFLOW_SERVE_TOKENS", "ops secret-token-0123456789 *")
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--database-url", url}, env{stdin: strings.NewReader(""), stdout: &errb, stderr: &errb})
	}()
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer wcancel()
	if err := testwait.Poll(wctx, 50*time.Millisecond, "/livez 200", func(context.Context) (bool, error) { return get("/livez", "") == 200, nil }); err != nil {
		cancel()
		t.Fatalf("serve did not come up: %v: %s", err, errb.String())
	}
	if c := get("/readyz", ""); c != 200 {
		t.Errorf("readyz = %d", c)
	}
	if c := get("/api/tasks", ""); c != 401 {
		t.Errorf("no token = %d", c)
	}
	if c := get("/api/tasks", "secret-token-0123456789"); c != 200 {
		t.Errorf("with token = %d", c)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(errb.String(), "secret-token") {
		t.Error("the token was logged")
	}
}
