package main

import (
	"context"
	"fmt"

	"github.com/rayflow/rayflow/progress/pgstore"
)

func init() {
	register("cleanup", "apply progress retention: rayflow cleanup progress [--batch-size N] [--delete]", cmdCleanup)
}

func cmdCleanup(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "cleanup", "cleanup progress [--batch-size N] [--delete] [--database-url URL]\n\n"+
		"Applies the progress retention of docs/contracts.md#retention-and-cleanup. Dry run by default: it counts the\n"+
		"candidates of each class (expired_run: detail past its expiry; pending_manifest and\n"+
		"orphan_page: older than one hour; empty_run) without deleting. --delete rechecks each\n"+
		"candidate under lock and deletes it; the active run is never touched and the summaries\n"+
		"on task and attempt rows stay byte-identical. The exit status is 1 when any candidate\n"+
		"failed (its cleanup_error is recorded; later candidates are still processed).",
		`rayflow cleanup progress
rayflow cleanup progress --delete --batch-size 500
`)
	dbURL := databaseFlag(fs)
	batch := fs.Int("batch-size", pgstore.DefaultCleanupBatch, fmt.Sprintf("candidates per class (1–%d)", pgstore.MaxCleanupBatch))
	del := fs.Bool("delete", false, "delete (default: dry run)")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(words) != 1 || words[0] != "progress" {
		fs.Usage()
		return exitUsage
	}
	if *batch < 1 || *batch > pgstore.MaxCleanupBatch {
		fmt.Fprintf(e.stderr, "rayflow: --batch-size %d outside 1–%d\n", *batch, pgstore.MaxCleanupBatch)
		return exitUsage
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	res, err := pgstore.Cleanup(ctx, pool, pgstore.CleanupOptions{BatchSize: *batch, Delete: *del})
	if res != nil {
		fmt.Fprintln(e.stdout, res.Line())
		for _, f := range res.Failures {
			fmt.Fprintf(e.stderr, "rayflow: cleanup %s %s: %s\n", f.Class, f.ID, f.Err)
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	return exitOK
}
