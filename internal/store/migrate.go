package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLockKey is the advisory lock that serializes concurrent
// Migrate calls (any value unique to rayflow: "rayflow-m" in ASCII).
const migrationLockKey int64 = 0x7261_7966_6c6f_776d

// Migration is one embedded, forward-only schema migration.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// MigrationStatus is a migration and when it was applied (zero if pending).
type MigrationStatus struct {
	Migration
	AppliedAt time.Time
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// Migrations lists the embedded migrations in the order they apply.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("durable: migration file %q is not NNNN_name.sql", e.Name())
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	// Numbers are reserved per change, so a binary may lack one that
	// another branch of the code holds: versions only have to increase.
	for i, m := range ms {
		if m.Version < 1 || i > 0 && m.Version == ms[i-1].Version {
			return nil, fmt.Errorf("durable: migrations are not numbered 1, 2, …: %04d_%s is number %d", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// knownVersion reports whether v is one of ms's versions.
func knownVersion(ms []Migration, v int64) bool {
	for _, m := range ms {
		if m.Version == v {
			return true
		}
	}
	return false
}

// ErrSchemaAhead is returned when the database records a migration this
// binary does not know (it was migrated by a newer rayflow).
// (durable re-exports it as durable.ErrSchemaAhead.)
var ErrSchemaAhead = errors.New("durable: the database schema is newer than this binary")

// createVersionTable is the table that records the applied migrations.
const createVersionTable = `CREATE TABLE IF NOT EXISTS rayflow_schema_migrations (
    version    bigint PRIMARY KEY CHECK (version >= 1),
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// Migrate applies every pending migration in order, each in its own
// transaction together with its row in rayflow_schema_migrations. It is
// forward-only and safe to run from several processes at once: a session
// advisory lock serializes them, and the loser finds nothing left to do.
// It returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("durable: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return nil, fmt.Errorf("durable: migrate: taking the migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must be released even if ctx ended.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			conn.Conn().Close(uctx) // closing the session releases the lock
		}
	}()
	if _, err := conn.Exec(ctx, createVersionTable); err != nil {
		return nil, fmt.Errorf("durable: migrate: %w", err)
	}
	applied, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	for v := range applied {
		if !knownVersion(ms, v) {
			return nil, fmt.Errorf("%w: version %d is applied, this binary knows %d", ErrSchemaAhead, v, len(ms))
		}
	}
	var done []int64
	for _, m := range ms {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO rayflow_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("durable: migration %04d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int64]time.Time, error) {
	rows, err := conn.Query(ctx, `SELECT version, applied_at FROM rayflow_schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("durable: reading applied migrations: %w", err)
	}
	out := map[int64]time.Time{}
	for rows.Next() {
		var v int64
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out[v] = at
	}
	return out, rows.Err()
}

// MigrationStatuses lists every embedded migration with its applied time
// (zero when pending). A database never migrated has every one pending.
func MigrationStatuses(ctx context.Context, pool *pgxpool.Pool) ([]MigrationStatus, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('rayflow_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, err
	}
	applied := map[int64]time.Time{}
	if exists {
		if applied, err = appliedVersions(ctx, conn.Conn()); err != nil {
			return nil, err
		}
	}
	out := make([]MigrationStatus, len(ms))
	for i, m := range ms {
		out[i] = MigrationStatus{Migration: m, AppliedAt: applied[m.Version]}
	}
	for v := range applied {
		if !knownVersion(ms, v) {
			return out, fmt.Errorf("%w: version %d is applied, this binary knows %d", ErrSchemaAhead, v, len(ms))
		}
	}
	return out, nil
}
