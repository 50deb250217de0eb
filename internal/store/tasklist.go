package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The executions list of rayflow serve (GET /api/tasks and the /tasks
// page, serve/tasks.go), read along the indexes of migration 0006.

// TaskListPage selects one page of the executions list.
type TaskListPage struct {
	State, Queue string
	// Flows restricts the list to these flows (nil: every flow).
	Flows []string
	// From and To bound enqueued_at: From <= enqueued_at < To. With
	// either, the list is ordered by enqueued_at (then id), newest first;
	// otherwise by id.
	From, To *time.Time
	// After is the keyset of the previous page's last task (nil: the
	// first page): its id, and its enqueued_at for a list by time.
	After *TaskKey
	// Rows is the most rows read.
	Rows int64
	// ErrorMaxBytes: an error message over it is not loaded.
	ErrorMaxBytes int
}

// TaskKey is a task's position in the executions list.
type TaskKey struct {
	ID int64
	At time.Time
}

// ByTime reports whether the list is ordered by enqueued_at.
func (p TaskListPage) ByTime() bool { return p.From != nil || p.To != nil }

// TaskListSQL is the page's query and its arguments: only the filters
// that are set become conditions, so that every filter has a plan of its
// own on the list indexes, never a scan of the whole table. Only the
// bounded columns of a list item are read. Rows: id, task_id, flow_name,
// queue_name, state, attempt_number, max_attempts, execution_generation,
// enqueued_at, started_at, finished_at, cancellation_status (” for
// none), error_message (NULL when over ErrorMaxBytes), its length.
func TaskListSQL(p TaskListPage) (string, []any) {
	args := []any{p.ErrorMaxBytes, p.Rows}
	var where []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	order := "id DESC"
	if p.ByTime() {
		order = "enqueued_at DESC, id DESC"
	}
	switch {
	case p.After == nil:
	case p.ByTime():
		where = append(where, "(enqueued_at, id) < ("+arg(p.After.At)+", "+arg(p.After.ID)+")")
	default:
		where = append(where, "id < "+arg(p.After.ID))
	}
	if p.State != "" {
		where = append(where, "state = "+arg(p.State))
	}
	if p.Queue != "" {
		where = append(where, "queue_name = "+arg(p.Queue))
	}
	switch {
	case len(p.Flows) == 1:
		where = append(where, "flow_name = "+arg(p.Flows[0]))
	case len(p.Flows) > 1:
		where = append(where, "flow_name = ANY("+arg(p.Flows)+")")
	}
	if p.From != nil {
		where = append(where, "enqueued_at >= "+arg(*p.From))
	}
	if p.To != nil {
		where = append(where, "enqueued_at < "+arg(*p.To))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	return `SELECT id, task_id::text, flow_name, queue_name, state, attempt_number, max_attempts,
 execution_generation, enqueued_at, started_at, finished_at, coalesce(cancellation_status, ''),
 CASE WHEN octet_length(error_message) <= $1 THEN error_message END, octet_length(error_message)
 FROM rayflow_tasks` + cond + ` ORDER BY ` + order + ` LIMIT $2`, args
}

// ListTaskPage reads the page (TaskListSQL's rows).
func ListTaskPage(ctx context.Context, q Reader, p TaskListPage) (pgx.Rows, error) {
	sql, args := TaskListSQL(p)
	return q.Query(ctx, sql, args...)
}

// TaskCountsSQL is the query counting the tasks of flows (nil: every
// flow) by state, and its arguments. Rows: state, count.
func TaskCountsSQL(flows []string) (string, []any) {
	if flows == nil {
		return `SELECT state, count(*) FROM rayflow_tasks GROUP BY state`, nil
	}
	return `SELECT state, count(*) FROM rayflow_tasks WHERE flow_name = ANY($1) GROUP BY state`, []any{flows}
}

// AvoidSeqScans makes the rest of tx's transaction prefer an index to a
// sequential scan (SET LOCAL enable_seqscan = off).
func AvoidSeqScans(ctx context.Context, tx Querier) error {
	_, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`)
	return err
}

// CountTasksByState counts the tasks of flows (nil: every flow) by state
// (TaskCountsSQL's rows) in transaction tx. An aggregate over all rows,
// which the planner would rather answer from the heap: the (state, id)
// and (flow_name, id) INCLUDE (state) indexes hold the state and are a
// fraction of the table's size, so the counts read an index only
// (AvoidSeqScans for the rest of tx).
func CountTasksByState(ctx context.Context, tx Querier, flows []string) (pgx.Rows, error) {
	if err := AvoidSeqScans(ctx, tx); err != nil {
		return nil, err
	}
	sql, args := TaskCountsSQL(flows)
	return tx.Query(ctx, sql, args...)
}
