// Package store owns rayflow's PostgreSQL schema: every table, every
// migration (migrations/NNNN_name.sql, forward-only, embedded) and every
// SQL statement the project runs. The durable queue (durable), the
// progress storage (progress/pgstore), the readers (serve/reader),
// serve and the rayflow CLI call its functions; none of them holds SQL of
// its own.
//
// A function takes a Querier (a pool, a connection or a transaction) or
// queues its statement on a caller's *pgx.Batch, so that the caller
// keeps its transactions, batches and locking: the statements are the
// ones the callers ran before, byte for byte, with the same parameters.
// Functions whose result is a domain record return the pgx.Row or
// pgx.Rows for the caller to scan, with the columns listed in their
// comment.
//
// The package is internal: applications migrate through
// durable.Migrate and `rayflow migrate`, which call Migrate here.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RowReader runs queries of one row: a pool, a connection or a
// transaction.
type RowReader interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Reader runs queries: a pool, a connection or a transaction.
type Reader interface {
	RowReader
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Querier runs statements: a pool, a connection or a transaction.
type Querier interface {
	Reader
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Batcher sends pipelined batches (a pool, a connection, a transaction).
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
