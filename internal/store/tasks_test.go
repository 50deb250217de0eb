package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

func ptr[T any](v T) *T { return &v }

var running = []string{"RUNNING", "CANCELLING"}

func newTaskID(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var id string
	if err := pool.QueryRow(context.Background(), `SELECT gen_random_uuid()::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// enqueue inserts a task of flow on queue and returns its task id and pk.
func enqueue(t *testing.T, pool *pgxpool.Pool, queue string, priority int) (string, int64) {
	t.Helper()
	id := newTaskID(t, pool)
	pk, err := store.InsertTask(context.Background(), pool, store.NewTask{TaskID: id, Flow: "flow", Queue: queue,
		Priority: priority, MaxAttempts: 3, InputJSON: `{"n":1}`, QueueTimeoutSeconds: ptr(int64(60))})
	if err != nil {
		t.Fatal(err)
	}
	return id, pk
}

type claimedRow struct {
	PK            int64
	ID, Flow      string
	Attempt       int
	MaxAttempts   int
	Gen           int64
	RunID, Input  string
	Timeout       int64
	PinnedFP      string
	PinnedAttempt int
	Priority      int
	Created       time.Time
	Waited        float64
	Key           string
}

func claim(t *testing.T, pool *pgxpool.Pool, c store.Claim) []claimedRow {
	t.Helper()
	rows, err := store.ClaimTasks(context.Background(), pool, c)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[claimedRow])
	if err != nil {
		t.Fatal(err)
	}
	var got []claimedRow
	for _, r := range all {
		if r.PK > 0 { // not a marker row
			got = append(got, r)
		}
	}
	return got
}

// enqueueAndClaim enqueues one task on queue and claims it; it returns the
// attempt's fence.
func enqueueAndClaim(t *testing.T, pool *pgxpool.Pool, queue string) store.Fence {
	t.Helper()
	_, pk := enqueue(t, pool, queue, 0)
	got := claim(t, pool, store.Claim{Queue: queue, N: 1, Worker: "w1", Runner: "local"})
	if len(got) != 1 || got[0].PK != pk {
		t.Fatalf("claimed %+v, want task %d", got, pk)
	}
	return store.Fence{PK: pk, States: running, Attempt: got[0].Attempt, Gen: got[0].Gen, RunID: &got[0].RunID}
}

func TestInsertTaskAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	id, pk := enqueue(t, pool, "q", 5)
	// The same task id again inserts nothing.
	_, err := store.InsertTask(ctx, pool, store.NewTask{TaskID: id, Flow: "flow", Queue: "q", MaxAttempts: 3, InputJSON: `{}`})
	if !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("duplicate task id: %v, want pgx.ErrNoRows", err)
	}
	var gotPK int64
	var gotID, flow, queue, state string
	var priority int
	var repairOf string
	var dest = []any{&gotPK, &gotID, &flow, &queue, &priority, &state}
	for range 26 {
		dest = append(dest, new(any))
	}
	dest = append(dest, &repairOf, new(string), new(bool), new(*time.Time), new(bool), new(any))
	if err := store.TaskByID(ctx, pool, id).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	if gotPK != pk || gotID != id || flow != "flow" || queue != "q" || priority != 5 || state != "QUEUED" || repairOf != "" {
		t.Errorf("TaskByID = %d %s %s %s %d %s repair of %q", gotPK, gotID, flow, queue, priority, state, repairOf)
	}
	// A repair task's record names the task it repairs.
	repairID := newTaskID(t, pool)
	if _, err := store.InsertTask(ctx, pool, store.NewTask{TaskID: repairID, Flow: "flow", Queue: "q", MaxAttempts: 3, InputJSON: `{}`, RepairOf: &pk}); err != nil {
		t.Fatal(err)
	}
	if err := store.TaskByID(ctx, pool, repairID).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	if repairOf != id {
		t.Errorf("the repair task's record: repair of %q, want %s", repairOf, id)
	}
	rows, err := store.ListTasks(ctx, pool, pk+1, "QUEUED", "q", 10)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Close(); rows.Err() != nil || n != 1 {
		t.Errorf("ListTasks: %d rows, %v", n, rows.Err())
	}
	rows, err = store.ListTasks(ctx, pool, pk, "", "", 10) // before pk: none
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Error("ListTasks before the first task returned a row")
	}
	rows.Close()
}

// Claims take larger priority first, FIFO within one, at most N, and pin
// the plan of a registered flow.
func TestClaimTasks(t *testing.T) {
	t.Parallel()
	pool := pgtest.MigratedPool(t)
	_, low := enqueue(t, pool, "q", 0)
	_, high := enqueue(t, pool, "q", 9)
	_, other := enqueue(t, pool, "other", 100)
	got := claim(t, pool, store.Claim{Queue: "q", N: 1, Worker: "w1", Runner: "local",
		Flows: []string{"flow"}, Fingerprints: []string{"sha256:abc"}, Selections: []string{"{}"}})
	if len(got) != 1 || got[0].PK != high || got[0].PinnedFP != "sha256:abc" || got[0].PinnedAttempt != 1 || got[0].Gen != 1 {
		t.Fatalf("first claim %+v, want task %d pinned", got, high)
	}
	got = claim(t, pool, store.Claim{Queue: "q", N: 5, Worker: "w1", Runner: "local"})
	if len(got) != 1 || got[0].PK != low || got[0].PinnedFP != "" {
		t.Fatalf("second claim %+v, want task %d unpinned", got, low)
	}
	if got := claim(t, pool, store.Claim{Queue: "q", N: 5, Worker: "w1", Runner: "local"}); len(got) != 0 {
		t.Fatalf("third claim %+v, want none (task %d is on another queue)", got, other)
	}
}

func TestFencedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	f := enqueueAndClaim(t, pool, "q")
	stale := f
	stale.Gen++

	if state, err := store.Heartbeat(ctx, pool, f); err != nil || state != "RUNNING" {
		t.Errorf("Heartbeat: %q, %v", state, err)
	}
	if _, err := store.Heartbeat(ctx, pool, stale); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("stale Heartbeat: %v, want pgx.ErrNoRows", err)
	}
	if err := store.StorePlan(ctx, pool, "sha256:p", `{"plan":1}`); err != nil {
		t.Fatal(err)
	}
	if err := store.StorePlan(ctx, pool, "sha256:p", `{"plan":1}`); err != nil {
		t.Errorf("StorePlan twice: %v", err)
	}
	for _, tc := range []struct {
		name string
		f    store.Fence
		want int64
	}{{"stale", stale, 0}, {"first", f, 1}, {"pinned already", f, 0}} {
		tag, err := store.PinPlan(ctx, pool, tc.f, "sha256:p", ptr("{}"))
		if err != nil || tag.RowsAffected() != tc.want {
			t.Errorf("PinPlan %s: %d rows, %v; want %d", tc.name, tag.RowsAffected(), err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		f    store.Fence
		want int64
	}{{"stale", stale, 0}, {"current", f, 1}} {
		tag, err := store.SetRayJobID(ctx, pool, tc.f, "job-1")
		if err != nil || tag.RowsAffected() != tc.want {
			t.Errorf("SetRayJobID %s: %d rows, %v; want %d", tc.name, tag.RowsAffected(), err, tc.want)
		}
	}
	var id, flow, input, fp string
	var maxAttempts, pinned int
	var timeout int64
	if err := store.AdoptRayJob(ctx, pool, f, "w2", "job-1").Scan(&id, &flow, &maxAttempts, &input, &timeout, &fp, &pinned); err != nil ||
		flow != "flow" || fp != "sha256:p" || pinned != 1 {
		t.Errorf("AdoptRayJob: %s %s %s %d, %v", id, flow, fp, pinned, err)
	}
	if err := store.AdoptRayJob(ctx, pool, f, "w2", "job-2").Scan(&id, &flow, &maxAttempts, &input, &timeout, &fp, &pinned); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("AdoptRayJob of another job: %v, want pgx.ErrNoRows", err)
	}
	if sum, err := store.TaskSummary(ctx, pool, f); err != nil || sum != nil {
		t.Errorf("TaskSummary: %v, %v", sum, err)
	}
}

func TestTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	f := enqueueAndClaim(t, pool, "q")
	// Expecting a summary the row does not hold changes nothing.
	tag, err := store.Transition(ctx, pool, f, store.Outcome{State: "FAILED", Expect: ptr(`{}`), Check: true})
	if err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("checked transition: %d rows, %v", tag.RowsAffected(), err)
	}
	// A retry archives the attempt and queues the next one.
	tag, err = store.Transition(ctx, pool, f, store.Outcome{State: "FAILED", Retry: true, ErrType: ptr("E"), ErrMessage: ptr("boom")})
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("retry transition: %d rows, %v", tag.RowsAffected(), err)
	}
	if tag, err := store.Transition(ctx, pool, f, store.Outcome{State: "FAILED"}); err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("superseded transition: %d rows, %v", tag.RowsAffected(), err)
	}
	var state string
	var attempt int
	if err := pool.QueryRow(ctx, `SELECT state, attempt_number FROM rayflow_tasks WHERE id = $1`, f.PK).Scan(&state, &attempt); err != nil ||
		state != "QUEUED" || attempt != 2 {
		t.Errorf("after retry: %s attempt %d, %v", state, attempt, err)
	}
	rows, err := store.TaskAttempts(ctx, pool, f.PK)
	if err != nil {
		t.Fatal(err)
	}
	type attemptRow struct {
		Attempt              int
		Gen                  int64
		RunID, State, Worker string
		FP                   string
		Started, Finished    *time.Time
		ErrType, ErrMessage  string
		Trace                string
		Result               *string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[attemptRow])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Attempt != 1 || got[0].State != "FAILED" || got[0].ErrType != "E" || got[0].ErrMessage != "boom" {
		t.Errorf("TaskAttempts = %+v", got)
	}

	// The fenced variant aborts its batch when the fence no longer matches.
	b := &pgx.Batch{}
	store.QueueTransitionFenced(b, f, store.Outcome{State: "SUCCEEDED"})
	if err := pool.SendBatch(ctx, b).Close(); err == nil {
		t.Error("fenced transition of a superseded attempt did not fail")
	}
	f2 := enqueueAndClaim(t, pool, "q2")
	b = &pgx.Batch{}
	store.QueueTransitionFenced(b, f2, store.Outcome{State: "SUCCEEDED", Result: ptr(`1`)})
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Errorf("fenced transition: %v", err)
	}
}

func TestRetryAndCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	f := enqueueAndClaim(t, pool, "q")
	var id string
	if err := pool.QueryRow(ctx, `SELECT task_id::text FROM rayflow_tasks WHERE id = $1`, f.PK).Scan(&id); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var pk, gen int64
		var state string
		var attempt int
		var runID *string
		if err := store.LockTaskForCancel(ctx, tx, id).Scan(&pk, &state, &attempt, &gen, &runID); err != nil {
			return err
		}
		if pk != f.PK || state != "RUNNING" || runID == nil || *runID != *f.RunID {
			t.Errorf("LockTaskForCancel: %d %s %v", pk, state, runID)
		}
		tag, err := store.RequestCancel(ctx, tx, pk, gen)
		if err == nil && tag.RowsAffected() != 1 {
			t.Errorf("RequestCancel: %d rows", tag.RowsAffected())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Transition(ctx, pool, f, store.Outcome{State: "CANCELLED", Cancellation: ptr("REQUESTED")}); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var pk, gen int64
		var state, runID, queue string
		var attempt int
		if err := store.LockTaskForRetry(ctx, tx, id).Scan(&pk, &state, &attempt, &gen, &runID, &queue); err != nil {
			return err
		}
		if state != "CANCELLED" || queue != "q" {
			t.Errorf("LockTaskForRetry: %s %s", state, queue)
		}
		tag, err := store.RequeueTask(ctx, tx, pk, state, attempt, gen, false)
		if err == nil && tag.RowsAffected() != 1 {
			t.Errorf("RequeueTask: %d rows", tag.RowsAffected())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := claim(t, pool, store.Claim{Queue: "q", N: 1, Worker: "w", Runner: "local"}); len(got) != 1 || got[0].Attempt != 2 {
		t.Errorf("claim after RequeueTask: %+v", got)
	}
}

func TestStuckTasksAndNotify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	f := enqueueAndClaim(t, pool, "q")
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if err := store.Listen(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := store.Notify(ctx, pool, "q:q"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(wctx)
	if err != nil || n.Channel != store.NotifyChannel || n.Payload != "q:q" {
		t.Errorf("notification %+v, %v", n, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE rayflow_tasks SET last_heartbeat_at = now() - interval '1 hour' WHERE id = $1`, f.PK); err != nil {
		t.Fatal(err)
	}
	for _, sessions := range []bool{false, true} {
		rows, err := store.SweepTasks(ctx, pool, 60, sessions)
		if err != nil {
			t.Fatal(err)
		}
		var pks []int64
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			pks = append(pks, vals[0].(int64))
		}
		if diff := cmp.Diff([]int64{f.PK}, pks); diff != "" || rows.Err() != nil {
			t.Errorf("SweepTasks (sessions %v) (-want +got):\n%s%v", sessions, diff, rows.Err())
		}
	}
}

// A group of transitions changes only the rows whose own fence matches.
func TestTransitionGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	a, b := enqueueAndClaim(t, pool, "qa"), enqueueAndClaim(t, pool, "qb")
	g := store.GroupTransitions{
		PKs: []int64{a.PK, b.PK}, Attempts: []int32{int32(a.Attempt), int32(b.Attempt)},
		Gens:   []int64{a.Gen, b.Gen + 1}, // b's fence is stale
		RunIDs: []string{*a.RunID, *b.RunID}, States: []string{"SUCCEEDED", "SUCCEEDED"},
		Retry: []bool{false, false}, BackoffSeconds: []float64{0, 0}, Results: []*string{ptr(`1`), ptr(`2`)},
		ErrTypes: make([]*string, 2), ErrMessages: make([]*string, 2), ErrTracebacks: make([]*string, 2),
		Cancellations: make([]*string, 2), CancelErrs: make([]*string, 2), Summaries: make([]*string, 2),
		Expects: make([]*string, 2), FinalRevisions: make([]*int64, 2), First: []bool{false, false},
	}
	rows, err := store.TransitionGroup(ctx, pool, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{a.PK}, got); diff != "" {
		t.Errorf("matched (-want +got):\n%s", diff)
	}
}
