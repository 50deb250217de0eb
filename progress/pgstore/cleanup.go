package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/store"
)

// Cleanup classes (docs/contracts.md#retention-and-cleanup), in the order they are processed.
const (
	ClassExpiredRun      = store.CleanupExpiredRun
	ClassPendingManifest = store.CleanupPendingManifest
	ClassOrphanPage      = store.CleanupOrphanPage
	ClassEmptyRun        = store.CleanupEmptyRun
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
	var err error
	if o.Now != nil {
		now = *o.Now
	} else if now, err = store.Now(ctx, pool); err != nil {
		return nil, fmt.Errorf("progressstore: cleanup: %w", err)
	}
	res := &CleanupResult{Delete: o.Delete, ByClass: map[string]int{}}
	for _, class := range Classes {
		ids, err := store.CleanupCandidates(ctx, pool, class, now, o.BatchSize)
		if err != nil {
			return res, fmt.Errorf("progressstore: cleanup %s candidates: %w", class, err)
		}
		res.ByClass[class] = len(ids)
		res.Eligible += len(ids)
		if !o.Delete {
			continue
		}
		for _, id := range ids {
			gone, err := deleteOne(ctx, pool, now, class, id)
			switch {
			case err != nil:
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				msg := truncateRunes(err.Error(), maxCleanupError)
				res.Failed++
				res.Failures = append(res.Failures, CleanupFailure{Class: class, ID: id, Err: msg})
				_ = store.CleanupRecordFailure(ctx, pool, class, id, msg) // best effort: the failure is also in the result
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
func deleteOne(ctx context.Context, pool *pgxpool.Pool, now time.Time, class, id string) (bool, error) {
	deleted := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		deleted, err = store.CleanupDelete(ctx, tx, class, now, id)
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
