package progressstore

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Cleanup classes (docs/contracts.md#retention-and-cleanup), in the order they are processed.
const (
	ClassExpiredRun      = "expired_run"
	ClassPendingManifest = "pending_manifest"
	ClassOrphanPage      = "orphan_page"
	ClassEmptyRun        = "empty_run"
)

// Classes lists the cleanup classes in processing order.
var Classes = []string{ClassExpiredRun, ClassPendingManifest, ClassOrphanPage, ClassEmptyRun}

// Cleanup defaults and bounds (docs/contracts.md#retention-and-cleanup).
const (
	DefaultCleanupBatch = 100
	MaxCleanupBatch     = 1000
	OrphanAge           = time.Hour
	maxCleanupError     = 2000
)

// CleanupOptions configures Cleanup.
type CleanupOptions struct {
	// BatchSize is the most candidates per class (default 100, 1–1000).
	BatchSize int
	// Delete deletes; otherwise Cleanup is a dry run that only counts.
	Delete bool
	// Now defaults to the database's clock (now()).
	Now *time.Time
}

// CleanupFailure is one candidate that could not be deleted.
type CleanupFailure struct {
	Class string
	ID    string
	Err   string
}

// CleanupResult counts one Cleanup.
type CleanupResult struct {
	Delete                             bool
	Eligible, Deleted, Failed, Skipped int
	ByClass                            map[string]int // eligible per class
	Failures                           []CleanupFailure
}

// Line is the docs/contracts.md#retention-and-cleanup output line.
func (r *CleanupResult) Line() string {
	mode := "dry-run"
	if r.Delete {
		mode = "delete"
	}
	return fmt.Sprintf("Workflow progress cleanup %s: %d eligible, %d deleted, %d failed, %d skipped (%d expired runs, %d pending manifests, %d orphan pages, %d empty runs).",
		mode, r.Eligible, r.Deleted, r.Failed, r.Skipped, r.ByClass[ClassExpiredRun], r.ByClass[ClassPendingManifest],
		r.ByClass[ClassOrphanPage], r.ByClass[ClassEmptyRun])
}

// The active run of a task (RUNNING or CANCELLING with the run's exact
// identity) is never a candidate.
const notActive = `NOT EXISTS (SELECT 1 FROM rayflow_tasks t WHERE t.id = r.task_pk AND t.state IN ('RUNNING', 'CANCELLING')
 AND t.attempt_number = r.attempt_number AND t.execution_generation = r.execution_generation AND t.workflow_run_id = r.run_id)`

// Per class: the candidate query ($1 now, $2 limit; never-failed first),
// the recheck under lock ($1 now, $2 id), the delete ($1 id) and where a
// failure is recorded ($1 id, $2 text; empty: nowhere).
var classSQL = map[string]struct{ candidates, recheck, del, fail string }{
	ClassExpiredRun: {
		candidates: `SELECT r.id::text FROM rayflow_progress_runs r WHERE r.detail_expires_at <= $1 AND ` + notActive + `
 ORDER BY r.cleanup_error IS NOT NULL, r.detail_expires_at, r.id LIMIT $2`,
		recheck: `SELECT r.id FROM rayflow_progress_runs r WHERE r.id = $2::bigint AND r.detail_expires_at <= $1 AND ` + notActive + ` FOR UPDATE OF r`,
		del:     `DELETE FROM rayflow_progress_runs WHERE id = $1::bigint`,
		fail:    `UPDATE rayflow_progress_runs SET cleanup_error = $2 WHERE id = $1::bigint`,
	},
	ClassPendingManifest: {
		candidates: `SELECT manifest_id FROM rayflow_progress_manifests WHERE slot = 'PENDING' AND created_at <= $1::timestamptz - interval '1 hour'
 ORDER BY cleanup_error IS NOT NULL, created_at, manifest_id LIMIT $2`,
		recheck: `SELECT 1 FROM rayflow_progress_manifests WHERE manifest_id = $2 AND slot = 'PENDING' AND created_at <= $1::timestamptz - interval '1 hour' FOR UPDATE`,
		del:     `DELETE FROM rayflow_progress_manifests WHERE manifest_id = $1`,
		fail:    `UPDATE rayflow_progress_manifests SET cleanup_error = $2 WHERE manifest_id = $1`,
	},
	ClassOrphanPage: {
		candidates: `SELECT p.id::text FROM rayflow_progress_pages p WHERE p.created_at <= $1::timestamptz - interval '1 hour'
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifest_pages l WHERE l.page_id = p.id) ORDER BY p.created_at, p.id LIMIT $2`,
		recheck: `SELECT 1 FROM rayflow_progress_pages p WHERE p.id = $2::bigint AND p.created_at <= $1::timestamptz - interval '1 hour'
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifest_pages l WHERE l.page_id = p.id) FOR UPDATE`,
		del: `DELETE FROM rayflow_progress_pages WHERE id = $1::bigint`,
	},
	ClassEmptyRun: {
		candidates: `SELECT r.id::text FROM rayflow_progress_runs r WHERE r.updated_at <= $1::timestamptz - interval '1 hour' AND ` + notActive + `
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifests m WHERE m.run_pk = r.id)
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_pages p WHERE p.run_pk = r.id)
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_nodes n WHERE n.run_pk = r.id)
 ORDER BY r.cleanup_error IS NOT NULL, r.updated_at, r.id LIMIT $2`,
		recheck: `SELECT r.id FROM rayflow_progress_runs r WHERE r.id = $2::bigint AND r.updated_at <= $1::timestamptz - interval '1 hour' AND ` + notActive + `
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifests m WHERE m.run_pk = r.id)
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_pages p WHERE p.run_pk = r.id)
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_nodes n WHERE n.run_pk = r.id) FOR UPDATE OF r`,
		del:  `DELETE FROM rayflow_progress_runs WHERE id = $1::bigint`,
		fail: `UPDATE rayflow_progress_runs SET cleanup_error = $2 WHERE id = $1::bigint`,
	},
}

// ErrCleanupFailed is returned (with the result) when any candidate failed.
var ErrCleanupFailed = errors.New("progressstore: cleanup failed for some candidates")

// Cleanup applies retention (docs/contracts.md#retention-and-cleanup) to at most BatchSize candidates per
// class: expired runs (detail_expires_at passed; deleting a run cascades
// its topology and detail and leaves the task and attempt summaries
// untouched), pending manifests and orphan pages older than an hour, and
// empty runs older than an hour. The active run of a task is never a
// candidate. Each candidate is rechecked under lock in its own
// transaction; a failure is recorded (cleanup_error) and later candidates
// are still processed; the error then wraps ErrCleanupFailed.
func Cleanup(ctx context.Context, pool *pgxpool.Pool, o CleanupOptions) (*CleanupResult, error) {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultCleanupBatch
	}
	if o.BatchSize < 1 || o.BatchSize > MaxCleanupBatch {
		return nil, fmt.Errorf("progressstore: batch size %d outside 1…%d", o.BatchSize, MaxCleanupBatch)
	}
	var now time.Time
	if o.Now != nil {
		now = *o.Now
	} else if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return nil, fmt.Errorf("progressstore: cleanup: %w", err)
	}
	res := &CleanupResult{Delete: o.Delete, ByClass: map[string]int{}}
	for _, class := range Classes {
		q := classSQL[class]
		rows, err := pool.Query(ctx, q.candidates, now, o.BatchSize)
		if err != nil {
			return res, fmt.Errorf("progressstore: cleanup %s candidates: %w", class, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return res, fmt.Errorf("progressstore: cleanup %s candidates: %w", class, err)
		}
		res.ByClass[class] = len(ids)
		res.Eligible += len(ids)
		if !o.Delete {
			continue
		}
		for _, id := range ids {
			gone, err := deleteOne(ctx, pool, now, q.recheck, q.del, id)
			switch {
			case err != nil:
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				msg := truncateRunes(err.Error(), maxCleanupError)
				res.Failed++
				res.Failures = append(res.Failures, CleanupFailure{Class: class, ID: id, Err: msg})
				if q.fail != "" {
					_, _ = pool.Exec(ctx, q.fail, id, msg) // best effort: the failure is also in the result
				}
			case gone:
				res.Deleted++
			default:
				res.Skipped++
			}
		}
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("%w: %d of %d", ErrCleanupFailed, res.Failed, res.Eligible)
	}
	return res, nil
}

// deleteOne rechecks the candidate under lock and deletes it; false when
// it is no longer eligible.
func deleteOne(ctx context.Context, pool *pgxpool.Pool, now time.Time, recheck, del, id string) (bool, error) {
	deleted := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var x any
		if err := tx.QueryRow(ctx, recheck, now, id).Scan(&x); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, del, id)
		deleted = err == nil && tag.RowsAffected() == 1
		return err
	})
	return deleted, err
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
