package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress/pgstore"
)

func init() {
	register("progress", "verify stored progress: rayflow progress verify [--all | TASK_ID...]", cmdProgress)
}

// progressTarget is one stored summary to verify: a task row's (attempt
// 0) or an attempt row's.
type progressTarget struct {
	pk      int64
	taskID  string
	attempt int
}

func cmdProgress(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "progress", "progress verify [--all] [TASK_ID...] [--database-url URL]\n\n"+
		"Checks the progress stored for each task, as the readers do (docs/contracts.md#progress-storage): the summary on\n"+
		"the task row and on every attempt row (16 KiB cap, schema), and for a run with detail its\n"+
		"storage row, manifest, every topology page (link, digest, size, count, schema) and node\n"+
		"detail row (digest, schema, counts against the summary). Prints one line per summary that\n"+
		"does not check, then a count. The exit status is 1 when any is MISSING or CORRUPT.",
		`rayflow progress verify --all
rayflow progress verify 5da5c564-2b1e-4b8e-9c1c-3f0e6f0f2a11
`)
	dbURL := databaseFlag(fs)
	all := fs.Bool("all", false, "verify every task in the database")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(words) == 0 || words[0] != "verify" || (*all == (len(words) > 1)) {
		fs.Usage()
		return exitUsage
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	var rows pgx.Rows
	var err error
	if *all {
		rows, err = store.ProgressSummaries(ctx, pool, nil)
	} else {
		ids := words[1:]
		for _, id := range ids {
			if !durable.ValidTaskID(id) {
				fmt.Fprintf(e.stderr, "rayflow: %q is not a task id\n", id)
				return exitUsage
			}
		}
		rows, err = store.ProgressSummaries(ctx, pool, ids)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	targets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (progressTarget, error) {
		var t progressTarget
		return t, r.Scan(&t.pk, &t.taskID, &t.attempt)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	bad := 0
	for _, t := range targets {
		rep, err := pgstore.Verify(ctx, pool, t.pk, t.attempt)
		if err != nil {
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitError
		}
		if a := rep.Availability; a == summary.DetailAvailabilityMissing || a == summary.DetailAvailabilityCorrupt {
			bad++
			where := "task row"
			if t.attempt > 0 {
				where = fmt.Sprintf("attempt %d", t.attempt)
			}
			fmt.Fprintf(e.stdout, "%s %s: %s: %s\n", t.taskID, where, a, strings.Join(rep.Problems, "; "))
		}
	}
	fmt.Fprintf(e.stdout, "verified %d summaries: %d ok, %d MISSING or CORRUPT\n", len(targets), len(targets)-bad, bad)
	if bad > 0 {
		return exitError
	}
	return exitOK
}
