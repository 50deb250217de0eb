package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
)

func init() {
	register("migrate", "apply or show the durable task schema migrations (PostgreSQL)", cmdMigrate)
}

// databaseFlag adds --database-url (default $RAYFLOW_DATABASE_URL).
func databaseFlag(fs *flag.FlagSet) *string {
	return fs.String("database-url", os.Getenv("RAYFLOW_DATABASE_URL"), "PostgreSQL URL (default $RAYFLOW_DATABASE_URL)")
}

// openPool connects to url; maxConns 0 keeps pgxpool's default.
func openPool(ctx context.Context, e env, url string, maxConns int) (*pgxpool.Pool, int) {
	if url == "" {
		fmt.Fprintln(e.stderr, "rayflow: no database: pass --database-url or set RAYFLOW_DATABASE_URL")
		return nil, exitUsage
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: --database-url: %v\n", err)
		return nil, exitUsage
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: connecting to PostgreSQL: %v\n", err)
		return nil, exitError
	}
	return pool, -1
}

func cmdMigrate(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "migrate", "migrate up|status [--database-url URL]\n\n"+
		"up applies every pending migration of the durable task schema in order (forward-only,\n"+
		"recorded in rayflow_schema_migrations, safe to run concurrently); status lists them.",
		`rayflow migrate up --database-url postgres://postgres@127.0.0.1:5432/rayflow
RAYFLOW_DATABASE_URL=$(cat .pg-local/url) rayflow migrate status
`)
	dbURL := databaseFlag(fs)
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(words) != 1 || (words[0] != "up" && words[0] != "status") {
		fs.Usage()
		return exitUsage
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	if words[0] == "up" {
		applied, err := durable.Migrate(ctx, pool)
		for _, v := range applied {
			fmt.Fprintf(e.stdout, "applied %04d\n", v)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitError
		}
		if len(applied) == 0 {
			fmt.Fprintln(e.stdout, "up to date")
		}
		return exitOK
	}
	st, err := durable.MigrationStatuses(ctx, pool)
	for _, s := range st {
		at := "pending"
		if !s.AppliedAt.IsZero() {
			at = "applied " + s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(e.stdout, "%04d_%s\t%s\n", s.Version, s.Name, at)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	return exitOK
}
