package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/store"
)

// EnvURL names the variable holding the test cluster's URL.
const EnvURL = "RAYFLOW_TEST_DATABASE_URL"

// ServerURL returns the test cluster's URL, or skips t.
func ServerURL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL test skipped under -short")
	}
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Skipf("PostgreSQL test skipped: %s is not set (run make pg-up)", EnvURL)
	}
	return u
}

// NewDatabase creates a fresh database on the cluster at serverURL and
// returns its URL; cleanup drops it (closing what still uses it).
func NewDatabase(t testing.TB, serverURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", redact(serverURL), err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "rayflow_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			t.Logf("pgtest: dropping %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// URL returns the URL of a fresh database of its own for t (skipping
// without a test cluster).
func URL(t testing.TB) string {
	t.Helper()
	return NewDatabase(t, ServerURL(t))
}

// Pool returns a pool on a fresh database of its own for t.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolAt(t, URL(t))
}

// MigratedPool returns a pool on a fresh database of its own for t, with
// every migration of internal/store applied.
func MigratedPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool := Pool(t)
	if _, err := store.Migrate(t.Context(), pool); err != nil {
		t.Fatalf("pgtest: migrating: %v", err)
	}
	return pool
}

// PoolAt opens a pool on dbURL, closed at cleanup.
func PoolAt(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Cluster is a private PostgreSQL cluster a test owns (to restart it).
type Cluster struct {
	Dir, URL string
	script   string
}

// StartCluster starts a private cluster with scripts/pg.sh (found
// upwards from the working directory) in a fresh directory; cleanup stops
// it and removes the directory. It skips like ServerURL.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	ServerURL(t)
	script, err := findUp("scripts/pg.sh")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Short path (unix socket paths are limited to 107 bytes) readable by
	// the postgres OS user the script runs the server as under root.
	dir, err := os.MkdirTemp("", "rfpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, script: script}
	t.Cleanup(func() {
		_ = exec.Command(script, "down", dir).Run()
		_ = os.RemoveAll(dir)
	})
	if err := c.run("up"); err != nil {
		t.Fatalf("pgtest: starting a private cluster: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "url"))
	if err != nil {
		t.Fatal(err)
	}
	c.URL = strings.TrimSpace(string(b))
	return c
}

// Stop stops the cluster (fast shutdown: sessions are disconnected).
func (c *Cluster) Stop() error { return c.run("down") }

// Start starts it again on the same port.
func (c *Cluster) Start() error { return c.run("up") }

func (c *Cluster) run(cmd string) error {
	out, err := exec.Command(c.script, cmd, c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg.sh %s: %w: %s", cmd, err, out)
	}
	return nil
}

func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory", rel)
		}
		dir = parent
	}
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
