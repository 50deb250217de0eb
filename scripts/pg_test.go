package scripts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// As root, pg.sh runs the server as the "postgres" user. A checkout under a
// folder that user cannot traverse (a clone in root's 0700 home) used to stop
// make pg-up with initdb's "could not access directory ... Permission
// denied"; the cluster must start there and keep DIR as the place to look.
func TestUpInFolderThePostgresUserCannotReach(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
		t.Skip("PostgreSQL server binaries not installed (make pg-up installs them)")
	}
	script, err := filepath.Abs("pg.sh")
	if err != nil {
		t.Fatal(err)
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(private, "state")
	run := func(cmd string) string {
		t.Helper()
		out, err := exec.Command(script, cmd, dir).CombinedOutput()
		if err != nil {
			t.Fatalf("pg.sh %s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command(script, "down", dir).Run()
		if target, err := os.Readlink(filepath.Join(dir, "data")); err == nil {
			_ = os.RemoveAll(filepath.Dir(target))
		}
	})

	out := run("up")
	if !strings.Contains(out, "cannot reach") {
		t.Errorf("pg.sh up did not say where the data directory went:\n%s", out)
	}
	query := func() {
		t.Helper()
		url, err := os.ReadFile(filepath.Join(dir, "url"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, strings.TrimSpace(string(url)))
		if err != nil {
			t.Fatalf("connecting to the cluster pg.sh started: %v", err)
		}
		defer conn.Close(ctx)
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1: %d, %v", one, err)
		}
	}
	query()
	// The Makefile looks for DIR/data/postmaster.pid to tell a running cluster.
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err != nil {
		t.Errorf("DIR/data/postmaster.pid: %v", err)
	}
	if out := run("up"); !strings.Contains(out, "already running") {
		t.Errorf("a second pg.sh up: %s", out)
	}
	run("down")
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("after pg.sh down, DIR/data/postmaster.pid: %v", err)
	}
	run("up") // the same data again, on the same port
	query()
	run("down")
}
