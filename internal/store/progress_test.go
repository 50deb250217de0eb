package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

func hexOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// runningRun inserts a RUNNING task of flow and returns its run identity
// and task id.
func runningRun(t *testing.T, pool *pgxpool.Pool, flow string) (store.Run, string) {
	t.Helper()
	var r store.Run
	var taskID string
	r.Attempt = 1
	if err := store.InsertRunningTask(context.Background(), pool, flow, "test").Scan(&taskID, &r.TaskPK, &r.RunID); err != nil {
		t.Fatal(err)
	}
	return r, taskID
}

func send(t *testing.T, pool *pgxpool.Pool, b *pgx.Batch) error {
	t.Helper()
	return store.SendBatch(context.Background(), pool, b)
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func detailRows(n int, state string, version, rev int64) []store.DetailRow {
	rows := make([]store.DetailRow, n)
	for i := range rows {
		id := fmt.Sprintf("n%03d", i)
		payload := fmt.Sprintf(`{"node_id":%q}`, id)
		rows[i] = store.DetailRow{Key: hexOf(id), ID: id, State: state, Payload: payload, Digest: hexOf(payload),
			TopologyVersion: version, Revision: rev}
	}
	return rows
}

func manifest(id string, version int64) (store.Manifest, []store.Page) {
	pages := []store.Page{
		{Digest: hexOf("nodes" + id), Collection: "NODE", Payload: `{"nodes":` + id + `}`, Items: 2, Index: 0},
		{Digest: hexOf("edges" + id), Collection: "EDGE", Payload: `{"edges":` + id + `}`, Items: 1, Index: 0},
	}
	return store.Manifest{ID: id, Version: version, Digest: hexOf("manifest" + id), Payload: `{"m":1}`, Nodes: 2, Edges: 1,
		NodePages: 1, EdgePages: 1, EncodedBytes: 100}, pages
}

// A run's publications through the store's writes, read back by the
// verifier's and the readers' statements.
func TestProgressWritesAndReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	run, taskID := runningRun(t, pool, "flow")

	// The run row and a staged topology, then the publication promoting it.
	b := &pgx.Batch{}
	store.QueueRunInsert(b, run, 7)
	m, pages := manifest("m1", 1)
	store.QueueStage(b, run, m, pages)
	br := pool.SendBatch(ctx, b)
	var runPK int64
	var inserted bool
	var one int64
	if err := br.QueryRow().Scan(&runPK, &inserted, &one); err != nil || !inserted {
		t.Fatalf("run insert: %v (inserted %v)", err, inserted)
	}
	for range 4 {
		if _, err := br.Exec(); err != nil {
			t.Fatal(err)
		}
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	sum := `{"timestamps":{"updated_at":"2026-01-01T00:00:00Z"}}`
	rows := detailRows(3, "RUNNING", 1, 1)
	b = &pgx.Batch{}
	store.QueueFencedSummary(b, run, sum, 1)
	store.QueueRunDetail(b, store.RunDetail{RunPK: runPK, Revision: 1, Running: 3, Events: 0, Bytes: 30, RetentionDays: 7})
	store.QueuePromote(b, runPK, m)
	store.QueueUpsertDetail(b, runPK, 1, 1, rows)
	if err := send(t, pool, b); err != nil {
		t.Fatalf("publication: %v", err)
	}
	// The same revision again does not advance: RF001 aborts the batch.
	b = &pgx.Batch{}
	store.QueueFencedSummary(b, run, sum, 1)
	if err := send(t, pool, b); sqlState(err) != "RF001" {
		t.Errorf("stale revision: %v, want RF001", err)
	}
	if tag, err := store.UpdateSummary(ctx, pool, run, sum, 1); err != nil || tag.RowsAffected() != 0 {
		t.Errorf("UpdateSummary of a stale revision: %d rows, %v", tag.RowsAffected(), err)
	}
	b = &pgx.Batch{}
	store.QueueFencedLock(b, run, 2)
	if err := send(t, pool, b); err != nil {
		t.Errorf("fenced lock: %v", err)
	}
	if state, rev, err := store.RunTaskState(ctx, pool, run); err != nil || state != "RUNNING" || rev == nil || *rev != 1 {
		t.Errorf("RunTaskState: %s %v, %v", state, rev, err)
	}

	// The verifier's reads.
	var size *int32
	var raw *string
	if err := store.TaskSummarySize(ctx, pool, run.TaskPK).Scan(&size, &raw); err != nil || raw == nil || *raw != sum {
		t.Errorf("TaskSummarySize: %v %v, %v", size, raw, err)
	}
	var pk int64
	var detailRev *int64
	var cnt [6]int32
	if err := store.RunCounters(ctx, pool, run).Scan(&pk, &detailRev, &cnt[0], &cnt[1], &cnt[2], &cnt[3], &cnt[4], &cnt[5]); err != nil ||
		pk != runPK || cnt != [6]int32{3, 0, 3, 0, 0, 0} {
		t.Errorf("RunCounters: %d %v, %v", pk, cnt, err)
	}
	var payload, digest, slot string
	var version, encoded int64
	var nodes, edges int32
	if err := store.ManifestRow(ctx, pool, "m1", runPK).Scan(&payload, &digest, &slot, &version, &encoded, &nodes, &edges); err != nil || slot != "CURRENT" {
		t.Errorf("ManifestRow: %s, %v", slot, err)
	}
	prows, err := store.ManifestPages(ctx, pool, "m1")
	if err != nil {
		t.Fatal(err)
	}
	type linked struct {
		Coll         string
		Index        int32
		Digest, Body string
		Items        int32
		PageColl     string
	}
	got, err := pgx.CollectRows(prows, pgx.RowToStructByPos[linked])
	if err != nil {
		t.Fatal(err)
	}
	want := []linked{{"NODE", 0, pages[0].Digest, pages[0].Payload, 2, "NODE"}, {"EDGE", 0, pages[1].Digest, pages[1].Payload, 1, "EDGE"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ManifestPages (-want +got):\n%s", diff)
	}
	drows, err := store.RunDetailRows(ctx, pool, runPK)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustCollect(t, drows)); n != 3 {
		t.Errorf("RunDetailRows: %d rows", n)
	}
	if detailRev, err = store.RunDetailRevision(ctx, pool, runPK); err != nil || detailRev == nil || *detailRev != 1 {
		t.Errorf("RunDetailRevision: %v, %v", detailRev, err)
	}
	dd, err := store.RunDetailDigests(ctx, pool, runPK)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustCollect(t, dd)); n != 3 {
		t.Errorf("RunDetailDigests: %d rows", n)
	}

	// The readers' reads.
	var flow string
	if pk, flow, err = store.TaskFlow(ctx, pool, taskID); err != nil || pk != run.TaskPK || flow != "flow" {
		t.Errorf("TaskFlow: %d %s, %v", pk, flow, err)
	}
	var tAttempt, tGen int64
	var tRun *string
	var aAttempt, aGen *int64
	var aRun, aRaw *string
	var aSize *int32
	if err := store.TaskProgress(ctx, pool, taskID, 1).Scan(&pk, &flow, &tAttempt, &tGen, &tRun, &size, &raw,
		&aAttempt, &aGen, &aRun, &aSize, &aRaw); err != nil || raw == nil || aAttempt != nil {
		t.Errorf("TaskProgress: %v %v, %v", raw, aAttempt, err)
	}
	var mid *string
	var np, ep *int64
	for _, tc := range []struct {
		version int64
		want    bool
	}{{1, true}, {2, false}} {
		if err := store.CurrentManifest(ctx, pool, run, tc.version).Scan(&mid, &np, &ep); err != nil || (mid != nil) != tc.want {
			t.Errorf("CurrentManifest of version %d: %v, %v", tc.version, mid, err)
		}
	}
	var psize int32
	var ppay *string
	for _, tc := range []struct {
		max  int
		want bool
	}{{len(pages[0].Payload), true}, {len(pages[0].Payload) - 1, false}} {
		if err := store.LinkedPage(ctx, pool, "m1", "NODE", 0, tc.max).Scan(&psize, &ppay, &digest); err != nil || (ppay != nil) != tc.want {
			t.Errorf("LinkedPage with bound %d: %v, %v", tc.max, ppay, err)
		}
	}
	var counts [5]int64
	if err := store.RunDetailCounts(ctx, pool, run).Scan(&pk, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil || counts[0] != 3 {
		t.Errorf("RunDetailCounts: %v, %v", counts, err)
	}
	for _, tc := range []struct {
		after, state string
		limit, want  int
	}{{"", "", 2, 2}, {minKey(rows), "", 10, 2}, {"", "RUNNING", 10, 3}, {"", "FAILED", 10, 0}} {
		dp, err := store.DetailPage(ctx, pool, runPK, tc.after, tc.limit, 1<<20, tc.state)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(mustCollect(t, dp)); n != tc.want {
			t.Errorf("DetailPage after %q state %q limit %d: %d rows, want %d", tc.after, tc.state, tc.limit, n, tc.want)
		}
	}
	var nsize *int32
	var npay []byte
	var ndig *string
	if err := store.NodeDetail(ctx, pool, run, rows[1].Key, 1<<20).Scan(&nsize, &npay, &ndig); err != nil || string(npay) != rows[1].Payload {
		t.Errorf("NodeDetail: %q, %v", npay, err)
	}

	// Deleting detail rows.
	b = &pgx.Batch{}
	store.QueueDeleteDetail(b, runPK, []string{rows[0].Key})
	if err := send(t, pool, b); err != nil {
		t.Fatal(err)
	}
	drows, err = store.RunDetailRows(ctx, pool, runPK)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustCollect(t, drows)); n != 2 {
		t.Errorf("after QueueDeleteDetail: %d rows", n)
	}

	// The CLI's list of stored summaries.
	for _, ids := range [][]string{nil, {taskID}} {
		ps, err := store.ProgressSummaries(ctx, pool, ids)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(mustCollect(t, ps)); n != 1 {
			t.Errorf("ProgressSummaries(%v): %d rows", ids, n)
		}
	}
}

func minKey(rows []store.DetailRow) string {
	k := rows[0].Key
	for _, r := range rows {
		k = min(k, r.Key)
	}
	return k
}

func mustCollect(t *testing.T, rows pgx.Rows) [][]any {
	t.Helper()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A first publication in one statement (RF003 the second time), and by
// COPY.
func TestFirstPublication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	run, _ := runningRun(t, pool, "flow")
	m, pages := manifest("first", 1)
	first := store.FirstRun{TaskPK: run.TaskPK, Attempt: run.Attempt, Gen: run.Gen, RunID: run.RunID, RetentionDays: 7,
		DetailRevision: 1, Pending: 2, Bytes: 20, Manifest: m, Pages: pages, Nodes: detailRows(2, "PENDING", 1, 1)}
	b := &pgx.Batch{}
	store.QueueFirstPublication(b, first)
	if err := send(t, pool, b); err != nil {
		t.Fatalf("first publication: %v", err)
	}
	b = &pgx.Batch{}
	store.QueueFirstPublication(b, first)
	if err := send(t, pool, b); sqlState(err) != "RF003" {
		t.Errorf("second first publication: %v, want RF003", err)
	}

	run2, _ := runningRun(t, pool, "flow")
	b = &pgx.Batch{}
	store.QueueRunInsert(b, run2, 7)
	br := pool.SendBatch(ctx, b)
	var runPK int64
	var inserted bool
	var one int64
	if err := br.QueryRow().Scan(&runPK, &inserted, &one); err != nil {
		t.Fatal(err)
	}
	br.Close()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return store.CopyDetail(ctx, tx, runPK, 1, 1, detailRows(5, "SUCCEEDED", 1, 1), time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.RunDetailRows(ctx, pool, runPK)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustCollect(t, rows)); n != 5 {
		t.Errorf("after CopyDetail: %d rows", n)
	}
}

// A group of terminal transitions with a first publication writes the
// run's storage in the same statement.
func TestTransitionGroupWithFirstPublication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	f := enqueueAndClaim(t, pool, "q")
	m, pages := manifest("grouped", 1)
	var fg store.FinalGroup
	fg.Add(store.FirstRun{TaskPK: f.PK, Attempt: int64(f.Attempt), Gen: f.Gen, RunID: *f.RunID, RetentionDays: 7,
		DetailRevision: 1, Succeeded: 2, Bytes: 20, Manifest: m, Pages: pages, Nodes: detailRows(2, "SUCCEEDED", 1, 1)})
	if fg.Len() != 1 {
		t.Fatalf("Len %d", fg.Len())
	}
	g := store.GroupTransitions{PKs: []int64{f.PK}, Attempts: []int32{int32(f.Attempt)}, Gens: []int64{f.Gen},
		RunIDs: []string{*f.RunID}, States: []string{"SUCCEEDED"}, Retry: []bool{false}, BackoffSeconds: []float64{0},
		Results: []*string{ptr(`1`)}, ErrTypes: make([]*string, 1), ErrMessages: make([]*string, 1), ErrTracebacks: make([]*string, 1),
		Cancellations: make([]*string, 1), CancelErrs: make([]*string, 1), Summaries: []*string{ptr(`{"s":1}`)},
		Expects: make([]*string, 1), FinalRevisions: []*int64{ptr(int64(5))}, First: []bool{true}}
	rows, err := store.TransitionGroup(ctx, pool, g, &fg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{f.PK}, got); diff != "" {
		t.Errorf("matched (-want +got):\n%s", diff)
	}
	run := store.Run{TaskPK: f.PK, Attempt: int64(f.Attempt), Gen: f.Gen, RunID: *f.RunID}
	var pk int64
	var counts [5]int64
	if err := store.RunDetailCounts(ctx, pool, run).Scan(&pk, &counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil ||
		counts != [5]int64{2, 0, 0, 2, 0} {
		t.Errorf("run written by the group: %v, %v", counts, err)
	}
}

// Cleanup's statements: an expired run is a candidate and is deleted; an
// active run never is; a failure is recorded; an unknown class is refused.
func TestCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	now, err := store.Now(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	active, _ := runningRun(t, pool, "flow")
	ended, _ := runningRun(t, pool, "flow")
	var pks []int64
	for _, r := range []store.Run{active, ended} {
		b := &pgx.Batch{}
		store.QueueRunInsert(b, r, 1)
		br := pool.SendBatch(ctx, b)
		var pk int64
		var inserted bool
		var one int64
		if err := br.QueryRow().Scan(&pk, &inserted, &one); err != nil {
			t.Fatal(err)
		}
		br.Close()
		pks = append(pks, pk)
	}
	if _, err := pool.Exec(ctx, `UPDATE rayflow_progress_runs SET detail_expires_at = now() - interval '1 day'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'SUCCEEDED', finished_at = now() WHERE id = $1`, ended.TaskPK); err != nil {
		t.Fatal(err)
	}
	ids, err := store.CleanupCandidates(ctx, pool, store.CleanupExpiredRun, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{fmt.Sprint(pks[1])}, ids); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	if err := store.CleanupRecordFailure(ctx, pool, store.CleanupExpiredRun, ids[0], "boom"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{{fmt.Sprint(pks[0]), false}, {ids[0], true}, {ids[0], false}} {
		var gone bool
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			gone, err = store.CleanupDelete(ctx, tx, store.CleanupExpiredRun, now, tc.id)
			return err
		})
		if err != nil || gone != tc.want {
			t.Errorf("CleanupDelete(%s): %v, %v; want %v", tc.id, gone, err, tc.want)
		}
	}
	for _, class := range []string{store.CleanupPendingManifest, store.CleanupOrphanPage, store.CleanupEmptyRun} {
		if _, err := store.CleanupCandidates(ctx, pool, class, now, 10); err != nil {
			t.Errorf("%s candidates: %v", class, err)
		}
	}
	if _, err := store.CleanupCandidates(ctx, pool, "nosuchclass", now, 10); !errors.Is(err, store.ErrUnknownCleanupClass) {
		t.Errorf("unknown class: %v, want ErrUnknownCleanupClass", err)
	}
}
