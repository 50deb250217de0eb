package reader_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
	"github.com/rayflow/rayflow/sdk/canonical"
	reader "github.com/rayflow/rayflow/serve/reader"
)

func wantCode(t *testing.T, what string, err error, code read.ErrorCode) {
	t.Helper()
	if got := reader.CodeOf(err); got != code {
		t.Errorf("%s: err = %v, want %s", what, err, code)
	}
}

func setup(t *testing.T, n int) (*reader.Service, *pgxpool.Pool, string, *pgstoretest.Chain) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	pool, taskID, c := pgstoretest.NewPublished(t, n, 3)
	svc := newService(t, pool)
	return svc, pool, taskID, c
}

func TestSummary(t *testing.T) {
	svc, _, taskID, c := setup(t, 10)
	ctx := context.Background()
	got, err := svc.Summary(ctx, "all", taskID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Availability != summary.DetailAvailabilityAvailable || !got.Complete || got.Summary == nil ||
		got.Summary.NodeCounts.Succeeded != 4 || *got.Publication.SummaryRevision != c.Rev || got.RunIdentity.RunID != c.ID.RunID {
		t.Errorf("summary = %+v", got)
	}
	if got.Summary.Storage.Kind != "database" {
		t.Errorf("storage = %+v", got.Summary.Storage)
	}
	if _, err := svc.Summary(ctx, "all", taskID, 2); reader.CodeOf(err) != read.ErrorCodeNotFound {
		t.Errorf("absent attempt: %v", err)
	}
	wantCode(t, "negative attempt", func() error { _, err := svc.Summary(ctx, "all", taskID, -1); return err }(), read.ErrorCodeInvalidArgument)
}

func TestAuthorizationFirst(t *testing.T) {
	svc, _, taskID, _ := setup(t, 3)
	ctx := context.Background()
	const absent = "00000000-0000-4000-8000-000000000000"
	reads := map[string]func(principal, task string) error{
		"summary": func(p, id string) error { _, err := svc.Summary(ctx, p, id, 0); return err },
		"nodes": func(p, id string) error {
			_, err := svc.TopologyNodes(ctx, p, reader.PageRequest{TaskID: id})
			return err
		},
		"edges": func(p, id string) error {
			_, err := svc.TopologyEdges(ctx, p, reader.PageRequest{TaskID: id})
			return err
		},
		"details": func(p, id string) error {
			_, err := svc.NodeDetails(ctx, p, reader.PageRequest{TaskID: id})
			return err
		},
		"node": func(p, id string) error { _, err := svc.Node(ctx, p, id, 0, "n000000"); return err },
	}
	for name, f := range reads {
		for _, task := range []string{taskID, absent, "not-a-uuid"} {
			wantCode(t, name+" by a stranger of "+task, f("stranger", task), read.ErrorCodeAccessDenied)
			wantCode(t, name+" by another flow's principal of "+task, f("flow:other", task), read.ErrorCodeAccessDenied)
		}
		wantCode(t, name+" of an absent task", f("all", absent), read.ErrorCodeNotFound)
		if err := f("flow:chain", taskID); err != nil {
			t.Errorf("%s by the flow's principal: %v", name, err)
		}
	}
}

// TestWalkCollections pages through every collection with several limits
// and checks the records, the order and the final counts.
func TestWalkCollections(t *testing.T) {
	svc, _, taskID, _ := setup(t, 600)
	ctx := context.Background()
	for _, limit := range []int{0, 1, 7, 256, 1000} {
		var ids []string
		cur, pages := "", 0
		for {
			p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: limit, Cursor: cur})
			if err != nil {
				t.Fatalf("limit %d page %d: %v", limit, pages, err)
			}
			want := min(max(limit, 0), 256)
			if limit == 0 {
				want = 100
			}
			if p.NextCursor != nil && len(p.Items) != want {
				t.Fatalf("limit %d: a non-final page of %d items", limit, len(p.Items))
			}
			for _, n := range p.Items {
				ids = append(ids, n.NodeID)
			}
			pages++
			if p.NextCursor == nil {
				break
			}
			cur = *p.NextCursor
		}
		if len(ids) != 600 || !slices.IsSorted(ids) || ids[0] != pgstoretest.NodeID(0) || ids[599] != pgstoretest.NodeID(599) {
			t.Errorf("limit %d: %d node ids over %d pages", limit, len(ids), pages)
		}
	}
	var edges int
	for cur := ""; ; {
		p, err := svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 256, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		edges += len(p.Items)
		if p.NextCursor == nil {
			break
		}
		cur = *p.NextCursor
	}
	if edges != 599 {
		t.Errorf("edges = %d, want 599", edges)
	}
	for state, want := range map[string]int{"": 600, "SUCCEEDED": 200, "PENDING": 400, "FAILED": 0} {
		var keys []string
		for cur := ""; ; {
			p, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 128, Cursor: cur, State: state})
			if err != nil {
				t.Fatalf("details %q: %v", state, err)
			}
			for _, d := range p.Items {
				if state != "" && string(d.State) != state {
					t.Fatalf("state filter %s returned %s", state, d.State)
				}
				keys = append(keys, d.NodeID)
			}
			if p.NextCursor == nil {
				break
			}
			cur = *p.NextCursor
		}
		if len(keys) != want {
			t.Errorf("details %q: %d, want %d", state, len(keys), want)
		}
	}
}

func TestLimitsAndArguments(t *testing.T) {
	svc, _, taskID, _ := setup(t, 300)
	ctx := context.Background()
	for _, tc := range []struct{ limit, want int }{{0, 100}, {1, 1}, {256, 256}, {257, 256}, {100000, 256}} {
		p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: tc.limit})
		if err != nil || len(p.Items) != tc.want || p.ReturnedCount != int64(tc.want) {
			t.Errorf("limit %d: %v items, err %v; want %d", tc.limit, len(p.Items), err, tc.want)
		}
	}
	_, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: -1})
	wantCode(t, "negative limit", err, read.ErrorCodeInvalidArgument)
	_, err = svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, State: "DONE"})
	wantCode(t, "bad state", err, read.ErrorCodeInvalidArgument)
	_, err = svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID, State: "PENDING"})
	wantCode(t, "state on edges", err, read.ErrorCodeInvalidArgument)
	_, err = svc.Node(ctx, "all", taskID, 0, strings.Repeat("x", 257))
	wantCode(t, "node id of 257 bytes", err, read.ErrorCodeInvalidArgument)
}

func TestSingleNode(t *testing.T) {
	svc, _, taskID, _ := setup(t, 5)
	ctx := context.Background()
	n, err := svc.Node(ctx, "all", taskID, 0, pgstoretest.NodeID(3))
	if err != nil || !n.Found || n.Item == nil || n.Item.NodeID != pgstoretest.NodeID(3) {
		t.Fatalf("node = %+v, %v", n, err)
	}
	n, err = svc.Node(ctx, "all", taskID, 0, "nope")
	if err != nil || n.Found || n.Item != nil {
		t.Fatalf("absent node = %+v, %v", n, err)
	}
}

func TestCursorBinding(t *testing.T) {
	svc, pool, taskID, c := setup(t, 300)
	ctx := context.Background()
	p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50})
	if err != nil || p.NextCursor == nil {
		t.Fatal(p, err)
	}
	cur := *p.NextCursor
	d, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, State: "PENDING"})
	if err != nil || d.NextCursor == nil {
		t.Fatal(err)
	}
	dcur := *d.NextCursor
	// Another task of the same principal.
	other, oid := pgstoretest.NewTask(t, pool, "chain")
	oc := pgstoretest.NewChain(oid, 300)
	oc.Publish(t, pool, oc.Pub(true, false))

	_, err = svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 51, Cursor: cur})
	wantCode(t, "other limit", err, read.ErrorCodeCursorMismatch)
	_, err = svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Cursor: cur})
	wantCode(t, "default limit vs 50", err, read.ErrorCodeCursorMismatch)
	_, err = svc.TopologyEdges(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, Cursor: cur})
	wantCode(t, "other collection", err, read.ErrorCodeCursorMismatch)
	_, err = svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: other, Limit: 50, Cursor: cur})
	wantCode(t, "other task", err, read.ErrorCodeCursorMismatch)
	_, err = svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, State: "RUNNING", Cursor: dcur})
	wantCode(t, "other filter", err, read.ErrorCodeCursorMismatch)
	_, err = svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, Cursor: dcur})
	wantCode(t, "filter dropped", err, read.ErrorCodeCursorMismatch)
	for _, i := range []int{0, len(cur) / 2, len(cur) - 1} {
		b := []byte(cur)
		b[i] ^= 1 // any changed byte must be refused
		_, err = svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, Cursor: string(b)})
		wantCode(t, fmt.Sprintf("tampered at %d", i), err, read.ErrorCodeInvalidCursor)
	}

	// A new detail revision retires the detail cursor, not the topology one.
	c.States[1] = detail.NodeStateRunning
	c.Publish(t, pool, c.Pub(false, false))
	d2, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, State: "PENDING", Cursor: dcur})
	if err != nil || d2.Availability != summary.DetailAvailabilityExpired || len(d2.Items) != 0 || d2.NextCursor != nil || d2.Complete {
		t.Errorf("stale detail cursor: %+v, %v", d2, err)
	}
	if p2, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, Cursor: cur}); err != nil || len(p2.Items) != 50 || p2.Items[0].NodeID != pgstoretest.NodeID(50) {
		t.Errorf("topology cursor after a detail-only publication: %v", err)
	}
	// A new topology version retires the topology cursor.
	c.Publish(t, pool, c.Pub(true, false))
	p3, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 50, Cursor: cur})
	if err != nil || p3.Availability != summary.DetailAvailabilityExpired || len(p3.Items) != 0 {
		t.Errorf("stale topology cursor: %+v, %v", p3, err)
	}
}

func TestFinalPageCounts(t *testing.T) {
	svc, pool, taskID, c := setup(t, 30)
	ctx := context.Background()
	// One detail row lost: the final page sees fewer than retained.
	if _, err := pool.Exec(ctx, `DELETE FROM rayflow_progress_nodes WHERE node_id = $1`, pgstoretest.NodeID(7)); err != nil {
		t.Fatal(err)
	}
	_, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID})
	wantCode(t, "lost row", err, read.ErrorCodeMissing)
	// The run's counter says fewer than there are rows: CORRUPT.
	if _, err := pool.Exec(ctx, `UPDATE rayflow_progress_runs SET detail_node_count = 28, detail_pending_count = detail_pending_count - 2`); err != nil {
		t.Fatal(err)
	}
	_, err = svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID})
	wantCode(t, "counter below rows", err, read.ErrorCodeCorrupt)
	_ = c
}

func TestExpiry(t *testing.T) {
	svc, pool, taskID, c := setup(t, 20)
	ctx := context.Background()
	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	c.Publish(t, pool, c.Pub(false, true))
	if n, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID}); err != nil || n.Availability != summary.DetailAvailabilityAvailable || len(n.Items) != 20 {
		t.Fatalf("before expiry: %+v, %v", n, err)
	}
	// Past detail_expires_at and after cleanup deleted the run: EXPIRED, no error.
	svc.Now = func() time.Time { return pgstoretest.T0.Add(8 * 24 * time.Hour) }
	if _, err := pool.Exec(ctx, `DELETE FROM rayflow_progress_runs`); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() (summary.DetailAvailability, error){
		"summary": func() (summary.DetailAvailability, error) {
			s, err := svc.Summary(ctx, "all", taskID, 0)
			if err != nil {
				return "", err
			}
			return s.Summary.Detail.Availability, nil
		},
		"nodes": func() (summary.DetailAvailability, error) {
			p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID})
			if err != nil {
				return "", err
			}
			return p.Availability, nil
		},
		"node": func() (summary.DetailAvailability, error) {
			p, err := svc.Node(ctx, "all", taskID, 0, pgstoretest.NodeID(1))
			if err != nil {
				return "", err
			}
			return p.Availability, nil
		},
	} {
		if a, err := f(); err != nil || a != summary.DetailAvailabilityExpired {
			t.Errorf("%s after expiry: %s, %v", name, a, err)
		}
	}
}

// TestResponseCap: 16 KiB-ish detail records, 256 per page, cannot fit a
// 512 KiB response; pages shrink, every page stays within the cap, and the
// walk still returns every record.
func TestResponseCap(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	pool := pgtest.MigratedPool(t)
	taskID, id := pgstoretest.NewTask(t, pool, "chain")
	c := pgstoretest.NewChain(id, 300)
	c.Message = strings.Repeat("m", 2000)
	for i := range c.States {
		c.States[i] = detail.NodeStateRunning
	}
	c.Publish(t, pool, c.Pub(true, false))
	svc := newService(t, pool)
	ctx := context.Background()
	total, pages := 0, 0
	for cur := ""; ; {
		p, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 256, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		n, err := canonical.ASCIISize(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if n > read.MaxResponseBytes {
			t.Fatalf("page of %d bytes", n)
		}
		total += len(p.Items)
		pages++
		if p.NextCursor == nil {
			break
		}
		if len(p.Items) >= 256 {
			t.Fatal("a full page of large records")
		}
		cur = *p.NextCursor
	}
	if total != 300 || pages < 2 {
		t.Errorf("%d records over %d pages", total, pages)
	}
}

// TestArchivedAttempt: attempt_number selects the archived attempt's
// summary and its run's pages, while the current attempt has none yet.
func TestArchivedAttempt(t *testing.T) {
	svc, pool, taskID, c := setup(t, 12)
	ctx := context.Background()
	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	c.Publish(t, pool, c.Pub(false, true))
	// Archive attempt 1 with its terminal summary and start attempt 2, as a retry does.
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at, workflow_progress_summary_json)
 SELECT id, attempt_number, execution_generation, workflow_run_id, 'SUCCEEDED', now(), workflow_progress_summary_json FROM rayflow_tasks WHERE task_id = $1`, taskID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE rayflow_tasks SET attempt_number = 2, execution_generation = 1, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL WHERE task_id = $1`, taskID); err != nil {
		t.Fatal(err)
	}
	cur, err := svc.Summary(ctx, "all", taskID, 0)
	if err != nil || cur.Availability != summary.DetailAvailabilityNotReported || cur.Summary != nil || cur.RunIdentity.AttemptNumber != 2 {
		t.Fatalf("current attempt: %+v, %v", cur, err)
	}
	old, err := svc.Summary(ctx, "all", taskID, 1)
	if err != nil || old.Summary == nil || old.RunIdentity.AttemptNumber != 1 || old.Summary.State != summary.StateSucceeded {
		t.Fatalf("attempt 1: %+v, %v", old, err)
	}
	p, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Attempt: 1, Limit: 5})
	if err != nil || len(p.Items) != 5 || p.NextCursor == nil {
		t.Fatalf("attempt 1 nodes: %+v, %v", p, err)
	}
	// The cursor of attempt 1 is not one of the current attempt's.
	_, err = svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Limit: 5, Cursor: *p.NextCursor})
	wantCode(t, "attempt-1 cursor on the current attempt", err, read.ErrorCodeCursorMismatch)
	p2, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID, Attempt: 1, Limit: 5, Cursor: *p.NextCursor})
	if err != nil || len(p2.Items) != 5 || p2.Items[0].NodeID != pgstoretest.NodeID(5) {
		t.Fatalf("attempt 1 page 2: %+v, %v", p2, err)
	}
	cn, err := svc.TopologyNodes(ctx, "all", reader.PageRequest{TaskID: taskID})
	if err != nil || len(cn.Items) != 0 || cn.Availability != summary.DetailAvailabilityNotReported {
		t.Fatalf("current nodes: %+v, %v", cn, err)
	}
}

// TestOversizeRecordRefused: a stored record over 1 MiB is refused before
// it is loaded (the schema forbids it, so the test lifts the constraint).
func TestOversizeRecordRefused(t *testing.T) {
	svc, pool, taskID, _ := setup(t, 3)
	ctx := context.Background()
	for _, q := range []string{
		`ALTER TABLE rayflow_progress_nodes DROP CONSTRAINT rayflow_progress_nodes_check, DROP CONSTRAINT rayflow_progress_nodes_check1`,
		`UPDATE rayflow_progress_nodes SET payload = repeat(' ', 1048577) || payload, encoded_bytes = 1, decoded_bytes = 1 WHERE node_id = 'n000001'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Refused by size before loading (the message names the cap), not by
	// the decoder after loading.
	_, err := svc.Node(ctx, "all", taskID, 0, pgstoretest.NodeID(1))
	wantCode(t, "single node over 1 MiB", err, read.ErrorCodeCorrupt)
	if err == nil || !strings.Contains(err.Error(), "over 1048576") {
		t.Errorf("single node: %v", err)
	}
	_, err = svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID})
	wantCode(t, "details with a row over 1 MiB", err, read.ErrorCodeCorrupt)
	if err == nil || !strings.Contains(err.Error(), "over 1048576") {
		t.Errorf("details: %v", err)
	}
	if n, err := svc.Node(ctx, "all", taskID, 0, pgstoretest.NodeID(0)); err != nil || !n.Found {
		t.Errorf("a normal row: %+v, %v", n, err)
	}
}

// TestNotReported: a queued task (no run id, no summary) reads as
// NOT_REPORTED with the nil run id and empty pages.
func TestNotReported(t *testing.T) {
	svc, pool, _, _ := setup(t, 1)
	ctx := context.Background()
	var taskID string
	if err := pool.QueryRow(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json) VALUES (gen_random_uuid(), 'chain', '{}') RETURNING task_id::text`).Scan(&taskID); err != nil {
		t.Fatal(err)
	}
	s, err := svc.Summary(ctx, "all", taskID, 0)
	if err != nil || s.Availability != summary.DetailAvailabilityNotReported || s.Summary != nil || s.SourceSchemaVersion != nil ||
		s.RunIdentity.RunID != "00000000-0000-0000-0000-000000000000" || s.Publication.SummaryRevision != nil {
		t.Fatalf("summary: %+v, %v", s, err)
	}
	p, err := svc.NodeDetails(ctx, "all", reader.PageRequest{TaskID: taskID, State: "RUNNING"})
	if err != nil || len(p.Items) != 0 || p.NextCursor != nil || p.Availability != summary.DetailAvailabilityNotReported {
		t.Fatalf("details: %+v, %v", p, err)
	}
	n, err := svc.Node(ctx, "all", taskID, 0, "x")
	if err != nil || n.Found {
		t.Fatalf("node: %+v, %v", n, err)
	}
}

// TestTamperedBytesAfterACachedRead: a record read once (and cached) whose
// stored bytes or digest change afterwards is CORRUPT on the next read:
// the cache is keyed by the digest of the bytes a read loads.
func TestTamperedBytesAfterACachedRead(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		read      func(svc *reader.Service, taskID string) error
	}{
		{"detail payload", `UPDATE rayflow_progress_nodes SET payload = replace(payload, '"PENDING"', '"RUNNING"') WHERE node_id = 'n000001'`,
			func(svc *reader.Service, taskID string) error {
				_, err := svc.NodeDetails(context.Background(), "all", reader.PageRequest{TaskID: taskID})
				return err
			}},
		{"detail digest", `UPDATE rayflow_progress_nodes SET digest = repeat('0', 64) WHERE node_id = 'n000001'`,
			func(svc *reader.Service, taskID string) error {
				_, err := svc.Node(context.Background(), "all", taskID, 0, pgstoretest.NodeID(1))
				return err
			}},
		{"page payload", `UPDATE rayflow_progress_pages SET payload = replace(payload, 'n000001', 'n000000') WHERE collection = 'NODE'`,
			func(svc *reader.Service, taskID string) error {
				_, err := svc.TopologyNodes(context.Background(), "all", reader.PageRequest{TaskID: taskID})
				return err
			}},
		{"page digest", `UPDATE rayflow_progress_pages SET digest = repeat('0', 64) WHERE collection = 'EDGE'`,
			func(svc *reader.Service, taskID string) error {
				_, err := svc.TopologyEdges(context.Background(), "all", reader.PageRequest{TaskID: taskID})
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc, pool, taskID, _ := setup(t, 3)
			if err := c.read(svc, taskID); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(context.Background(), c.sql); err != nil {
				t.Fatal(err)
			}
			wantCode(t, c.name, c.read(svc, taskID), read.ErrorCodeCorrupt)
		})
	}
}
