package durable

import (
	"testing"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// runningSummary is a valid summary-only RUNNING summary of c's run.
func runningSummary(t *testing.T, c claimed, rev int64, started string) []byte {
	t.Helper()
	s := summary.Summary{SchemaVersion: 3, StorageProtocolVersion: 1,
		RunIdentity: common.RunIdentity{SchemaVersion: 1, RunID: c.runID, TaskExecutionPK: c.pk,
			AttemptNumber: int64(c.attempt), ExecutionGeneration: c.gen},
		ReportingPolicy: common.ReportingPolicyTerminalOnly, LimitsProfile: "v1", SummaryRevision: rev, State: summary.StateRunning,
		Timestamps: summary.Timestamps{StartedAt: started, UpdatedAt: "2026-12-01T10:00:05Z"},
		Detail:     summary.Detail{Availability: summary.DetailAvailabilityNotReported, TruncationReasons: []summary.TruncationReason{}},
		Storage:    summary.Storage{Kind: "database"},
		Retention:  summary.Retention{DetailDays: 7},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := canonical.NoFold.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTransitionArchivesTheRowsSummary: whatever the caller believes the
// row's summary is (unknown, none, the right one, a stale one), the
// archived terminal summary is derived from the row's actual summary,
// the transition lands once, and a superseded fence changes nothing.
func TestTransitionArchivesTheRowsSummary(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const (
		rowNone = iota
		rowSummary
	)
	const (
		callerUnknown = iota
		callerNone
		callerRight
		callerStale
	)
	for _, tc := range []struct {
		name        string
		row, caller int
	}{
		{"no summary, unknown", rowNone, callerUnknown},
		{"no summary, known none", rowNone, callerNone},
		{"no summary, believed one", rowNone, callerStale},
		{"summary, unknown", rowSummary, callerUnknown},
		{"summary, believed none", rowSummary, callerNone},
		{"summary, known", rowSummary, callerRight},
		{"summary, stale one", rowSummary, callerStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.enqueue("test.noop", "1", EnqueueOptions{Queue: "transition"})
			cs, err := claimTasks(ctx, e.pool, "transition", 1, "T", "local", "", nil)
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim: %v (%d)", err, len(cs))
			}
			c := cs[0]
			cur, old := runningSummary(t, c, 5, "2026-12-01T10:00:00Z"), runningSummary(t, c, 4, "2026-12-01T09:00:00Z")
			if tc.row == rowSummary {
				if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET workflow_progress_summary_json = $2, progress_summary_revision = 5 WHERE id = $1`,
					c.pk, string(cur)); err != nil {
					t.Fatal(err)
				}
			}
			s := "1"
			o := outcome{state: StateSucceeded, result: &s}
			switch tc.caller {
			case callerNone:
				o.lastKnown = true
			case callerRight:
				o.lastKnown, o.lastSummary = true, cur
			case callerStale:
				o.lastKnown, o.lastSummary = true, old
			}
			// A superseded fence (another generation) changes nothing.
			stale := c.fence()
			stale.Gen++
			if n, err := transition(ctx, e.pool, stale, o); err != nil || n != 0 {
				t.Fatalf("stale fence: %d rows, %v", n, err)
			}
			if n, err := transition(ctx, e.pool, c.fence(), o); err != nil || n != 1 {
				t.Fatalf("transition: %d rows, %v", n, err)
			}
			var archived *string
			if err := e.pool.QueryRow(ctx, `SELECT workflow_progress_summary_json FROM rayflow_task_attempts WHERE task_pk = $1`, c.pk).Scan(&archived); err != nil {
				t.Fatal(err)
			}
			task, err := e.c.Get(ctx, id)
			if err != nil || task.State != StateSucceeded {
				t.Fatalf("task: %v %v", task, err)
			}
			if tc.row == rowNone {
				if archived != nil {
					t.Fatalf("archived %s, want none", *archived)
				}
				return
			}
			if archived == nil {
				t.Fatal("no summary archived")
			}
			got, err := summary.DecodeSummary([]byte(*archived))
			if err != nil {
				t.Fatal(err)
			}
			if got.State != summary.StateSucceeded || got.SummaryRevision != summary.ReservedRevision || got.Timestamps.StartedAt != "2026-12-01T10:00:00Z" {
				t.Fatalf("archived %s", *archived)
			}
		})
	}
}

// TestFinalPublicationWithTheTransition: the worker sends a run's final
// progress publication in the terminal transition's batch. Both land
// (stored progress verifies, the task and attempt rows hold the run's own
// terminal summary) or, when the fence is gone, neither; a CANCELLING task
// records its outcome without the publication (written only while
// RUNNING), as when the lifecycle wins first.
func TestFinalPublicationWithTheTransition(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	w, err := NewWorker(e.pool, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	runs := func(pk int64) int {
		return e.count(`SELECT count(*) FROM rayflow_progress_runs WHERE task_pk = $1`, pk)
	}
	for _, tc := range []string{"lands", "stale fence", "cancelling"} {
		t.Run(tc, func(t *testing.T) {
			id := e.enqueue("test.echo", `{"name":"final"}`, EnqueueOptions{Queue: "final"})
			cs, err := claimTasks(ctx, e.pool, "final", 1, "T", "local", "", nil)
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim: %v (%d)", err, len(cs))
			}
			c := cs[0]
			var sink *pgstore.Sink
			out, err := w.runTask(ctx, c.fence(), c, &sink)
			if err != nil || sink == nil {
				t.Fatalf("run: %v (sink %v)", err, sink)
			}
			prev := sink.LastSummary()
			fin := sink.TakeFinal()
			if fin == nil {
				t.Fatal("no deferred final publication")
			}
			res := string(out)
			o := outcome{state: StateSucceeded, result: &res, lastKnown: true, lastSummary: prev, final: fin}
			want := int64(1)
			switch tc {
			case "stale fence":
				if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET execution_generation = execution_generation + 1 WHERE id = $1`, c.pk); err != nil {
					t.Fatal(err)
				}
				want = 0
			case "cancelling":
				if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'CANCELLING' WHERE id = $1`, c.pk); err != nil {
					t.Fatal(err)
				}
				o = outcome{state: StateCancelled, errType: "Cancelled", errMsg: ErrCancelled.Error(), lastKnown: true, lastSummary: prev, final: fin}
			}
			if n, err := transition(ctx, e.pool, c.fence(), o); err != nil || n != want {
				t.Fatalf("transition: %d rows, %v; want %d", n, err, want)
			}
			task, err := e.c.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var row, archived *string
			if err := e.pool.QueryRow(ctx, `SELECT t.workflow_progress_summary_json, a.workflow_progress_summary_json
 FROM rayflow_tasks t LEFT JOIN rayflow_task_attempts a ON a.task_pk = t.id WHERE t.id = $1`, c.pk).Scan(&row, &archived); err != nil {
				t.Fatal(err)
			}
			switch tc {
			case "lands":
				if task.State != StateSucceeded || runs(c.pk) != 1 || row == nil || archived == nil || *row != *archived || *row != string(fin.Summary()) {
					t.Fatalf("%s, %d run rows, summary %v archived %v", task.State, runs(c.pk), row, archived)
				}
				rep, err := pgstore.Verify(ctx, e.pool, c.pk, 0)
				if err != nil || len(rep.Problems) > 0 || rep.Summary.State != summary.StateSucceeded ||
					rep.Summary.SummaryRevision != summary.ReservedRevision || rep.Summary.NodeCounts.RetainedDetail == 0 {
					t.Fatalf("verify: %v %+v", err, rep)
				}
			case "stale fence":
				if task.State != StateRunning || runs(c.pk) != 0 || row != nil || archived != nil {
					t.Fatalf("%s, %d run rows, summary %v archived %v", task.State, runs(c.pk), row, archived)
				}
			case "cancelling":
				if task.State != StateCancelled || runs(c.pk) != 0 || row != nil || archived != nil {
					t.Fatalf("%s, %d run rows, summary %v archived %v", task.State, runs(c.pk), row, archived)
				}
			}
		})
	}
}
