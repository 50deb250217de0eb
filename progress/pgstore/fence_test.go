package pgstore_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// TestConcurrentStalePublishers runs a publisher per attempt while the
// task's fence keeps moving: every publication committed by a run must be
// counted by that run (detail_revision = its successes), a superseded run
// only ever gets ErrStaleFence, and the task row ends with the summary of
// the current run.
func TestConcurrentStalePublishers(t *testing.T) {
	if testing.Short() {
		t.Skip("real PostgreSQL")
	}
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	first := newTask(t, pool)
	var (
		mu        sync.Mutex
		successes = map[string]int64{}
		stale     = map[string]int{}
		other     []error
		wg        sync.WaitGroup
	)
	publisher := func(id common.RunIdentity, seed uint64) {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		sink := newSink(t, pool)
		c := pgstoretest.NewChain(id, 40)
		for i := 0; ; i++ {
			k := r.IntN(len(c.States))
			c.States[k] = []detail.NodeState{detail.NodeStatePending, detail.NodeStateRunning, detail.NodeStateSucceeded}[(i+1)%3]
			err := sink.Publish(ctx, c.Pub(i == 0 || r.IntN(8) == 0, false))
			mu.Lock()
			switch {
			case err == nil:
				// detail_revision advances only when detail changed.
				if st := sink.LastStats(); st.Upserted+st.Deleted > 0 {
					successes[id.RunID]++
				}
			case errors.Is(err, progress.ErrStaleFence):
				stale[id.RunID]++
			default:
				other = append(other, err)
			}
			mu.Unlock()
			if err != nil {
				return
			}
			time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
		}
	}
	ids := []common.RunIdentity{first}
	wg.Add(1)
	go publisher(first, 1)
	for g := range 12 {
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
		id := advance(t, pool, first.TaskExecutionPK)
		ids = append(ids, id)
		wg.Add(1)
		go publisher(id, uint64(g+2))
	}
	// The last run is never superseded: once it has published, stop it by
	// superseding it too, then check.
	lastCurrent := ids[len(ids)-1]
	testwait.Until(t, time.Minute, "an accepted publication of the last run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return successes[lastCurrent.RunID] > 0 || len(other) > 0 // an error ends the publisher
	})
	var summaryRaw *string
	var runID string
	// Snapshot the task row as the last run left it, then retire the fence.
	if err := pool.QueryRow(ctx, `UPDATE rayflow_tasks SET state = 'SUCCEEDED', finished_at = now() WHERE id = $1
 RETURNING workflow_progress_summary_json, workflow_run_id::text`, first.TaskExecutionPK).Scan(&summaryRaw, &runID); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("errors other than a stale fence: %v", other)
	}
	for _, id := range ids {
		if stale[id.RunID] != 1 {
			t.Errorf("run %s: %d stale errors, want exactly 1 (the end of its publishing)", id.RunID, stale[id.RunID])
		}
		var rev *int64
		err := pool.QueryRow(ctx, `SELECT detail_revision FROM rayflow_progress_runs WHERE run_id = $1`, id.RunID).Scan(&rev)
		if successes[id.RunID] == 0 {
			continue // superseded before its first publication (its run row may exist from staging)
		}
		if err != nil {
			t.Fatalf("run %s: %v", id.RunID, err)
		}
		if rev == nil || *rev != successes[id.RunID] {
			t.Errorf("run %s: detail_revision %d, %d accepted publications (a stale write was committed or one was lost)", id.RunID, *rev, successes[id.RunID])
		}
	}
	if runID != lastCurrent.RunID || successes[runID] > 0 && summaryRaw == nil {
		t.Fatalf("task row run %s, want %s", runID, lastCurrent.RunID)
	}
	if summaryRaw != nil {
		s, err := summary.DecodeSummary([]byte(*summaryRaw))
		if err != nil {
			t.Fatal(err)
		}
		if s.RunIdentity != lastCurrent {
			t.Fatalf("task summary belongs to %s, want the current run %s", s.RunIdentity.RunID, lastCurrent.RunID)
		}
	}
	t.Logf("%d runs, accepted %v", len(ids), successes)
}
