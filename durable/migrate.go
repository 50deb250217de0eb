package durable

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/store"
)

// The schema and its migrations belong to package internal/store (its
// migrations folder); these are the names an application uses.

// Migration is one embedded, forward-only schema migration.
type Migration = store.Migration

// MigrationStatus is a migration and when it was applied (zero if pending).
type MigrationStatus = store.MigrationStatus

// ErrSchemaAhead is returned when the database records a migration this
// binary does not know (it was migrated by a newer rayflow).
var ErrSchemaAhead = store.ErrSchemaAhead

// Migrations lists the embedded migrations in the order they apply.
func Migrations() ([]Migration, error) { return store.Migrations() }

// Migrate applies every pending migration in order, each in its own
// transaction together with its row in rayflow_schema_migrations. It is
// forward-only and safe to run from several processes at once: a session
// advisory lock serializes them, and the loser finds nothing left to do.
// It returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	return store.Migrate(ctx, pool)
}

// MigrationStatuses lists every embedded migration with its applied time
// (zero when pending). A database never migrated has every one pending.
func MigrationStatuses(ctx context.Context, pool *pgxpool.Pool) ([]MigrationStatus, error) {
	return store.MigrationStatuses(ctx, pool)
}
