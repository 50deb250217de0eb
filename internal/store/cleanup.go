package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Progress storage retention (progress/pgstore's Cleanup): per class
// of candidates, the candidate query, the recheck under lock, the delete
// and where a failure is recorded.

// The cleanup classes.
const (
	CleanupExpiredRun      = "expired_run"
	CleanupPendingManifest = "pending_manifest"
	CleanupOrphanPage      = "orphan_page"
	CleanupEmptyRun        = "empty_run"
)

// ErrUnknownCleanupClass is returned for a class that is none of the
// Cleanup* constants.
var ErrUnknownCleanupClass = errors.New("store: unknown cleanup class")

// The active run of a task (RUNNING or CANCELLING with the run's exact
// identity) is never a candidate.
const notActive = `NOT EXISTS (SELECT 1 FROM rayflow_tasks t WHERE t.id = r.task_pk AND t.state IN ('RUNNING', 'CANCELLING')
 AND t.attempt_number = r.attempt_number AND t.execution_generation = r.execution_generation AND t.workflow_run_id = r.run_id)`

// expiredRunLedgerSQL deletes, with the expired run $1, the item ledger
// of its task when the run is the task's last attempt and the task has
// ended: the ledger follows the progress retention of the task's last
// run (a task still to be retried or repaired later keeps it until then).
const expiredRunLedgerSQL = `DELETE FROM rayflow_item_ledger l USING rayflow_progress_runs r, rayflow_tasks t
 WHERE r.id = $1::bigint AND t.id = r.task_pk AND l.task_pk = t.id AND t.attempt_number = r.attempt_number
   AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'LOST', 'EXPIRED')`

// Per class: the candidate query ($1 now, $2 limit; never-failed first),
// the recheck under lock ($1 now, $2 id), what is deleted with the
// candidate ($1 id; empty: nothing), the delete ($1 id) and where a
// failure is recorded ($1 id, $2 text; empty: nowhere).
var cleanupSQL = map[string]struct{ candidates, recheck, with, del, fail string }{
	CleanupExpiredRun: {
		candidates: `SELECT r.id::text FROM rayflow_progress_runs r WHERE r.detail_expires_at <= $1 AND ` + notActive + `
 ORDER BY r.cleanup_error IS NOT NULL, r.detail_expires_at, r.id LIMIT $2`,
		recheck: `SELECT r.id FROM rayflow_progress_runs r WHERE r.id = $2::bigint AND r.detail_expires_at <= $1 AND ` + notActive + ` FOR UPDATE OF r`,
		with:    expiredRunLedgerSQL,
		del:     `DELETE FROM rayflow_progress_runs WHERE id = $1::bigint`,
		fail:    `UPDATE rayflow_progress_runs SET cleanup_error = $2 WHERE id = $1::bigint`,
	},
	CleanupPendingManifest: {
		candidates: `SELECT manifest_id FROM rayflow_progress_manifests WHERE slot = 'PENDING' AND created_at <= $1::timestamptz - interval '1 hour'
 ORDER BY cleanup_error IS NOT NULL, created_at, manifest_id LIMIT $2`,
		recheck: `SELECT 1 FROM rayflow_progress_manifests WHERE manifest_id = $2 AND slot = 'PENDING' AND created_at <= $1::timestamptz - interval '1 hour' FOR UPDATE`,
		del:     `DELETE FROM rayflow_progress_manifests WHERE manifest_id = $1`,
		fail:    `UPDATE rayflow_progress_manifests SET cleanup_error = $2 WHERE manifest_id = $1`,
	},
	CleanupOrphanPage: {
		candidates: `SELECT p.id::text FROM rayflow_progress_pages p WHERE p.created_at <= $1::timestamptz - interval '1 hour'
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifest_pages l WHERE l.page_id = p.id) ORDER BY p.created_at, p.id LIMIT $2`,
		recheck: `SELECT 1 FROM rayflow_progress_pages p WHERE p.id = $2::bigint AND p.created_at <= $1::timestamptz - interval '1 hour'
 AND NOT EXISTS (SELECT 1 FROM rayflow_progress_manifest_pages l WHERE l.page_id = p.id) FOR UPDATE`,
		del: `DELETE FROM rayflow_progress_pages WHERE id = $1::bigint`,
	},
	CleanupEmptyRun: {
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

func cleanupClass(class string) (struct{ candidates, recheck, with, del, fail string }, error) {
	q, ok := cleanupSQL[class]
	if !ok {
		return q, fmt.Errorf("%w: %q", ErrUnknownCleanupClass, class)
	}
	return q, nil
}

// Now reads the database's clock.
func Now(ctx context.Context, q Reader) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

// CleanupCandidates lists at most limit ids of class's candidates at now
// (never-failed first).
func CleanupCandidates(ctx context.Context, q Reader, class string, now time.Time, limit int) ([]string, error) {
	c, err := cleanupClass(class)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, c.candidates, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// CleanupDelete rechecks candidate id of class under lock in tx and
// deletes it (an expired run with its task's item ledger when the run is
// the ended task's last attempt); false when it is no longer eligible.
func CleanupDelete(ctx context.Context, tx pgx.Tx, class string, now time.Time, id string) (bool, error) {
	c, err := cleanupClass(class)
	if err != nil {
		return false, err
	}
	var x any
	if err := tx.QueryRow(ctx, c.recheck, now, id).Scan(&x); errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if c.with != "" {
		if _, err := tx.Exec(ctx, c.with, id); err != nil {
			return false, err
		}
	}
	tag, err := tx.Exec(ctx, c.del, id)
	return err == nil && tag.RowsAffected() == 1, err
}

// CleanupRecordFailure records msg as candidate id's cleanup_error, for
// the classes that record one (a no-op for orphan pages).
func CleanupRecordFailure(ctx context.Context, q Querier, class, id, msg string) error {
	c, err := cleanupClass(class)
	if err != nil || c.fail == "" {
		return err
	}
	_, err = q.Exec(ctx, c.fail, id, msg)
	return err
}
