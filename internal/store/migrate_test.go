package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// recorded is the migration set as databases record it
// (rayflow_schema_migrations: version and name) with the SHA-256 of each
// file's text: migrations are forward-only, so none of them may change
// once released, and a new one takes the next number.
var recorded = []struct {
	version int64
	name    string
	sha256  string
}{
	{1, "tasks", "091296e4ef8b13652efeef09889b5e9d71e8d44ea7c6dbc7574d80dd2a1fb84e"},
	{2, "progress_storage", "6aba53db331f7ebba61842558b2a55daffd165bc069c71a24c57ab54b0d72a0c"},
	{3, "plans", "1fb9fbb4a8c6083cbaefe5da08d56a83f0b83b68c25ea91fa53ee077696270e1"},
	{4, "fenced_batches", "2906918caf2c4c0ded6c301fed550727ab8e0cecc5f29920e4122ced070c6487"},
	{5, "cheaper_hex_checks", "d703abbe42f0de5463918aea0050ac91339aeb2a4820a13d5d920e60866a7fb3"},
	{6, "task_list_indexes", "d2425d932aecb2d933542c48ec12ff8af1e8ca7eace509167d347e7607c68d06"},
	{7, "item_ledger", "c389c1e9e808f779c23c8d8604a0d5e6aeebf08b4d9bbed972806be1e4d0331e"},
	{8, "worker_sessions", "1bbb2b777402e64730be8bebdfe4a43322992de706fabce03f54522306dabb6d"},
	{9, "published_flows", "b6a3d3f418a13e4d25b5db4aaa481dc25460fc44ec32b3816e85877695903045"},
	{10, "unique_tasks", "c0a86dd5b6c329802cfb3a222502c7729c874b7d320a69a360b04afdf77221cb"},
	{11, "schedules", "43973722fadc3e3d61d948b5f390dccf85e96dd202dee55eb5679f6c7e32dbf9"},
	{12, "fair_admission", "04829ae56fc7f6feb5f11a210d2cb58f39beabd329348536d954bffa7303a017"},
}

func TestMigrationsAsRecorded(t *testing.T) {
	t.Parallel()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < len(recorded) {
		t.Fatalf("%d migrations, %d recorded", len(ms), len(recorded))
	}
	for i, r := range recorded {
		m := ms[i]
		sum := sha256.Sum256([]byte(m.SQL))
		if m.Version != r.version || m.Name != r.name || hex.EncodeToString(sum[:]) != r.sha256 {
			t.Errorf("migration %d is %04d_%s (sha256 %x), recorded %04d_%s (sha256 %s)",
				i+1, m.Version, m.Name, sum, r.version, r.name, r.sha256)
		}
	}
}

// oldMigrate leaves a database as the migrator of an earlier release did
// (durable's Migrate, which recorded the same rows): migrations
// 1..upTo applied, each recorded by version and name.
func oldMigrate(t *testing.T, pool *pgxpool.Pool, upTo int) {
	t.Helper()
	ctx := context.Background()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE rayflow_schema_migrations (
    version    bigint PRIMARY KEY CHECK (version >= 1),
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:upTo] {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO rayflow_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
	}
}

// A database migrated by an earlier release (all of its migrations, or
// all but the last) upgrades: Migrate applies exactly what is missing,
// the recorded versions and names are unchanged, and the queue works.
func TestOpensDatabaseOfEarlierRelease(t *testing.T) {
	t.Parallel()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		upTo int
	}{
		{"all recorded migrations", len(recorded)},
		{"all but the last", len(recorded) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.Pool(t)
			oldMigrate(t, pool, tc.upTo)
			applied, err := store.Migrate(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			var applies []int64
			for _, m := range ms[tc.upTo:] {
				applies = append(applies, m.Version)
			}
			if diff := cmp.Diff(applies, applied); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
			rows, err := pool.Query(ctx, `SELECT version, name FROM rayflow_schema_migrations ORDER BY version`)
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				V int64
				N string
			}
			got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
			if err != nil {
				t.Fatal(err)
			}
			var want []row
			for _, m := range ms {
				want = append(want, row{m.Version, m.Name})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("recorded migrations (-want +got):\n%s", diff)
			}
			st, err := store.MigrationStatuses(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range st {
				if s.AppliedAt.IsZero() {
					t.Errorf("migration %d is pending", s.Version)
				}
			}
			// The queue works on it: enqueue, claim, end.
			f := enqueueAndClaim(t, pool, "old-release")
			tag, err := store.Transition(ctx, pool, f, store.Outcome{State: "SUCCEEDED", Result: ptr(`"ok"`)})
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("transition: %v, %d rows", err, tag.RowsAffected())
			}
		})
	}
}

func TestMigrateFresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	st, err := store.MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if !s.AppliedAt.IsZero() {
			t.Errorf("migration %d applied on a fresh database", s.Version)
		}
	}
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, s := range st {
		want = append(want, s.Version)
	}
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	again, err := store.Migrate(ctx, pool)
	if err != nil || len(again) != 0 {
		t.Errorf("second Migrate applied %v, %v", again, err)
	}
}

// A database that records a migration this binary does not know is
// refused with ErrSchemaAhead.
func TestMigrateSchemaAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := store.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := store.MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_schema_migrations (version, name) VALUES ($1, 'future')`, st[len(st)-1].Version+1); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, pool); !errors.Is(err, store.ErrSchemaAhead) {
		t.Errorf("Migrate: %v, want ErrSchemaAhead", err)
	}
	if _, err := store.MigrationStatuses(ctx, pool); !errors.Is(err, store.ErrSchemaAhead) {
		t.Errorf("MigrationStatuses: %v, want ErrSchemaAhead", err)
	}
}
