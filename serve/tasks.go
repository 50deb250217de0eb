package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/serve/reader"
)

// Bounds of the task responses (docs/serve.md#routes).
const (
	InputMaxBytes        = 16384 // input and result shown inline in a status
	ErrorMaxBytes        = 4096  // an error message shown inline
	MaxStatusAttempts    = 4     // archived attempts shown in a status, newest last
	DefaultListLimit     = 50
	MaxListLimit         = 100
	omitValueOverLimit   = "stored_value_exceeds_poll_limit"
	omitErrorOverLimit   = "stored_error_exceeds_poll_limit"
	omitAttemptOverLimit = "stored_error_exceeds_attempt_limit"
)

// AttemptStatus is one archived attempt in a task status.
type AttemptStatus struct {
	AttemptNumber       int           `json:"attempt_number"`
	State               durable.State `json:"state"`
	FinishedAt          time.Time     `json:"finished_at"`
	Error               *string       `json:"error"`
	ErrorOmissionReason *string       `json:"error_omission_reason"`
}

// TaskStatus is the bounded status of a task.
type TaskStatus struct {
	TaskID              string          `json:"task_id"`
	Flow                string          `json:"flow"`
	Queue               string          `json:"queue"`
	State               durable.State   `json:"state"`
	AttemptNumber       int             `json:"attempt_number"`
	MaxAttempts         int             `json:"max_attempts"`
	ExecutionGeneration int64           `json:"execution_generation"`
	EnqueuedAt          time.Time       `json:"enqueued_at"`
	StartedAt           *time.Time      `json:"started_at"`
	FinishedAt          *time.Time      `json:"finished_at"`
	CancellationStatus  string          `json:"cancellation_status,omitempty"`
	Input               json.RawMessage `json:"input,omitempty"`
	InputOmission       *string         `json:"input_omission_reason,omitempty"`
	Result              json.RawMessage `json:"result,omitempty"`
	ResultOmission      *string         `json:"result_omission_reason,omitempty"`
	Error               *string         `json:"error"`
	ErrorOmission       *string         `json:"error_omission_reason,omitempty"`
	Attempts            []AttemptStatus `json:"attempts,omitempty"`
	InputMaxBytes       int             `json:"input_max_bytes"`
	// RepairOf is the task id of the task this one repairs
	// (durable.Client.Repair); only in a task's own status.
	RepairOf string `json:"repair_of,omitempty"`
	// ConcurrencyKey is the task's concurrency key
	// (docs/durable.md#fair-admission); only in a task's own status.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func bounded(v json.RawMessage) (json.RawMessage, *string) {
	if len(v) > InputMaxBytes {
		return nil, ptr(omitValueOverLimit)
	}
	return v, nil
}

func boundedError(msg string, reason string) (*string, *string) {
	switch {
	case msg == "":
		return nil, nil
	case len(msg) > ErrorMaxBytes:
		return nil, &reason
	}
	return &msg, nil
}

func status(t *durable.Task, full bool) TaskStatus {
	st := TaskStatus{TaskID: t.ID, Flow: t.Flow, Queue: t.Queue, State: t.State, AttemptNumber: t.Attempt, MaxAttempts: t.MaxAttempts,
		ExecutionGeneration: t.Generation, EnqueuedAt: t.EnqueuedAt, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
		CancellationStatus: t.CancellationStatus, InputMaxBytes: InputMaxBytes}
	st.Error, st.ErrorOmission = boundedError(t.ErrorMessage, omitErrorOverLimit)
	if !full {
		return st
	}
	st.RepairOf = t.RepairOf
	st.ConcurrencyKey = t.ConcurrencyKey
	st.Input, st.InputOmission = bounded(t.Input)
	if len(t.Result) > 0 {
		st.Result, st.ResultOmission = bounded(t.Result)
	}
	as := t.Attempts
	if len(as) > MaxStatusAttempts {
		as = as[len(as)-MaxStatusAttempts:]
	}
	for _, a := range as {
		x := AttemptStatus{AttemptNumber: a.Attempt, State: a.State, FinishedAt: a.FinishedAt}
		x.Error, x.ErrorOmissionReason = boundedError(a.ErrorMessage, omitAttemptOverLimit)
		st.Attempts = append(st.Attempts, x)
	}
	return st
}

func (s *Server) taskStatus(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("task_id")
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, reader.ActionReadTask); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.client.Get(r.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		s.fail(w, r, &reader.Error{Code: gread.ErrorCodeNotFound, Message: "no such task"})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, status(t, true))
}

// TaskList is one page of the executions list with the counts by state
// of every task the principal may see.
type TaskList struct {
	Items         []TaskStatus          `json:"items"`
	ReturnedCount int                   `json:"returned_count"`
	HasMore       bool                  `json:"has_more"`
	NextCursor    *string               `json:"next_cursor"`
	Counts        map[durable.State]int `json:"counts"`
}

// listCursor is the signed payload of an executions-list cursor: the
// keyset position and every filter it was issued for, and the principal.
// The filters only the /tasks page sets are omitted when empty, so the
// API's cursors are what they were.
type listCursor struct {
	V         int      `json:"v"`
	Principal string   `json:"principal"`
	State     string   `json:"state"`
	Queue     string   `json:"queue"`
	Flow      string   `json:"flow,omitempty"`
	From      string   `json:"from,omitempty"`
	To        string   `json:"to,omitempty"`
	Limit     int64    `json:"limit"`
	Flows     []string `json:"flows"`
	After     string   `json:"after"`
}

const listCursorPurpose = "rayflow.executions.cursor.v1"

// taskQuery is one request of the executions list: the filters (empty
// or nil when unset), the page size (1 to MaxListLimit) and the cursor.
type taskQuery struct {
	State, Queue, Flow string
	// From and To bound enqueued_at: From <= enqueued_at < To.
	From, To *time.Time
	Limit    int64
	Cursor   string
}

// listParams parses the list parameters GET /api/tasks and the /tasks
// page share: limit (default DefaultListLimit, at most MaxListLimit),
// state, queue and cursor.
func listParams(r *http.Request) (taskQuery, error) {
	limit, err := intParam(r, "limit", 1)
	if err != nil {
		return taskQuery{}, err
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		return taskQuery{}, invalid("limit must be 1 to %d", MaxListLimit)
	}
	q := r.URL.Query()
	tq := taskQuery{State: q.Get("state"), Queue: q.Get("queue"), Limit: limit, Cursor: q.Get("cursor")}
	if tq.State != "" && !durable.State(tq.State).Valid() {
		return taskQuery{}, invalid("unknown state %q", tq.State)
	}
	if len(tq.Queue) > durable.MaxQueueNameLen {
		return taskQuery{}, invalid("queue name over %d bytes", durable.MaxQueueNameLen)
	}
	return tq, nil
}

// listTasks lists the tasks of the principal's flows, newest first, with
// signed cursors bound to the principal, the filters and the limit.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, principal string) {
	if len(s.tokens.Flows(principal)) == 0 {
		s.fail(w, r, &reader.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"})
		return
	}
	tq, err := listParams(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.queryTasks(r.Context(), principal, tq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// listFlows is the flow condition of a principal's list: nil for every
// flow, else the flows it may see (only flow, when one is asked for). A
// principal without flows, or asking for a flow it may not see, is
// ACCESS_DENIED.
func (s *Server) listFlows(principal, flow string) ([]string, error) {
	flows := s.tokens.Flows(principal)
	all := slices.Contains(flows, "*")
	switch {
	case len(flows) == 0, flow != "" && !all && !slices.Contains(flows, flow):
		return nil, &reader.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"}
	case flow != "":
		return []string{flow}, nil
	case all:
		return nil, nil
	}
	return flows, nil
}

func timeText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// keyset is a list position: the last task shown (its id, and its
// enqueued_at when the list is ordered by it).
type keyset struct {
	ID int64
	At time.Time
}

// byTime: a list filtered on enqueued_at is ordered by it, newest first
// (then by id), so that its page is read along the enqueued_at index
// however few of the newest tasks fall in the range; any other list is
// ordered by id, newest first.
func (tq taskQuery) byTime() bool { return tq.From != nil || tq.To != nil }

// String is a keyset as a cursor holds it: the id, or for a byTime list
// enqueued_at (RFC 3339, UTC) and the id.
func (k keyset) String(byTime bool) string {
	if byTime {
		return k.At.UTC().Format(time.RFC3339Nano) + " " + strconv.FormatInt(k.ID, 10)
	}
	return strconv.FormatInt(k.ID, 10)
}

func parseKeyset(s string, byTime bool) (keyset, error) {
	var k keyset
	var err error
	if byTime {
		at, id, ok := strings.Cut(s, " ")
		if !ok {
			return k, errors.New("no time")
		}
		if k.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return k, err
		}
		s = id
	}
	k.ID, err = strconv.ParseInt(s, 10, 64)
	return k, err
}

// listSQL is the executions-list query of one page after (nil: the
// first page) on the list indexes
// (internal/store/migrations/0006_task_list_indexes.sql); an error
// message over the inline bound is not loaded at all.
func listSQL(tq taskQuery, flows []string, after *keyset) (string, []any) {
	return store.TaskListSQL(listPage(tq, flows, after))
}

func listPage(tq taskQuery, flows []string, after *keyset) store.TaskListPage {
	p := store.TaskListPage{State: tq.State, Queue: tq.Queue, Flows: flows, From: tq.From, To: tq.To, Rows: tq.Limit + 1,
		ErrorMaxBytes: ErrorMaxBytes}
	if after != nil {
		p.After = &store.TaskKey{ID: after.ID, At: after.At}
	}
	return p
}

// countSQL counts the tasks of flows (nil: every flow) by state.
func countSQL(flows []string) (string, []any) { return store.TaskCountsSQL(flows) }

// queryTasks reads one page of the executions list and the counts by
// state of every task the principal may see, in one read-only snapshot.
// GET /api/tasks and the /tasks page both list through it.
func (s *Server) queryTasks(ctx context.Context, principal string, tq taskQuery) (TaskList, error) {
	flows, err := s.listFlows(principal, tq.Flow)
	if err != nil {
		return TaskList{}, err
	}
	want := listCursor{V: 1, Principal: principal, State: tq.State, Queue: tq.Queue, Flow: tq.Flow, From: timeText(tq.From), To: timeText(tq.To),
		Limit: tq.Limit, Flows: s.tokens.Flows(principal)}
	if tq.Cursor != "" {
		payload, _, err := s.keys.Unseal(listCursorPurpose, tq.Cursor)
		if err != nil {
			return TaskList{}, err
		}
		var c listCursor
		if err := json.Unmarshal(payload, &c); err != nil || c.V != 1 || c.After == "" {
			return TaskList{}, &reader.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"}
		}
		after := c.After
		c.After = ""
		if !reflect.DeepEqual(c, want) {
			return TaskList{}, &reader.Error{Code: gread.ErrorCodeCursorMismatch, Message: "cursor was issued for another principal, filter or limit"}
		}
		want.After = after
	}
	var after *keyset
	if want.After != "" {
		k, err := parseKeyset(want.After, tq.byTime())
		if err != nil {
			return TaskList{}, &reader.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"}
		}
		after = &k
	}
	out := TaskList{Items: []TaskStatus{}, Counts: map[durable.State]int{}}
	var tasks []*durable.Task
	var errOmitted []bool
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := store.ListTaskPage(ctx, tx, listPage(tq, flows, after))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t durable.Task
			var msg *string
			var msgLen *int32
			if err := rows.Scan(&t.PK, &t.ID, &t.Flow, &t.Queue, &t.State, &t.Attempt, &t.MaxAttempts, &t.Generation,
				&t.EnqueuedAt, &t.StartedAt, &t.FinishedAt, &t.CancellationStatus, &msg, &msgLen); err != nil {
				return err
			}
			if msg != nil {
				t.ErrorMessage = *msg
			}
			tasks = append(tasks, &t)
			errOmitted = append(errOmitted, msg == nil && msgLen != nil) // over the bound: not loaded
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// The counts read every task the principal may see, from an
		// index only (store.CountTasksByState).
		for _, st := range durable.States {
			out.Counts[st] = 0
		}
		crows, err := store.CountTasksByState(ctx, tx, s.countFlows(principal))
		if err != nil {
			return err
		}
		defer crows.Close()
		for crows.Next() {
			var st string
			var n int
			if err := crows.Scan(&st, &n); err != nil {
				return err
			}
			out.Counts[durable.State(st)] = n
		}
		return crows.Err()
	})
	if err != nil {
		return TaskList{}, err
	}
	if len(tasks) > int(tq.Limit) {
		tasks, out.HasMore = tasks[:tq.Limit], true
	}
	for i, t := range tasks {
		st := status(t, false)
		if errOmitted[i] {
			st.ErrorOmission = ptr(omitErrorOverLimit)
		}
		out.Items = append(out.Items, st)
	}
	out.ReturnedCount = len(out.Items)
	if out.HasMore {
		last := tasks[len(tasks)-1]
		want.After = keyset{ID: last.PK, At: last.EnqueuedAt}.String(tq.byTime())
		payload, err := json.Marshal(want)
		if err != nil {
			return TaskList{}, err
		}
		tok, err := s.keys.Seal(listCursorPurpose, payload)
		if err != nil {
			return TaskList{}, err
		}
		out.NextCursor = &tok
	}
	return out, nil
}

// countFlows is the flow condition of the counts: every task the
// principal may see, whatever flow the list is filtered on.
func (s *Server) countFlows(principal string) []string {
	flows := s.tokens.Flows(principal)
	if slices.Contains(flows, "*") {
		return nil
	}
	return flows
}

// Outcome is the body of a cancel or retry.
type Outcome struct {
	TaskID  string `json:"task_id"`
	Outcome string `json:"outcome"`
	// HeldBy is the task that holds the unique key of a retry refused
	// with OutcomeUniqueKeyHeld.
	HeldBy string `json:"held_by,omitempty"`
}

// OutcomeUniqueKeyHeld is the 409 outcome of a retry of a task whose
// unique key another live task holds (durable.ErrUniqueHeld); the task
// is left as it was.
const OutcomeUniqueKeyHeld = "UNIQUE_KEY_HELD"

func (s *Server) expect(r *http.Request) (durable.Expect, error) {
	a, err := intParam(r, "expect_attempt", 1)
	if err != nil {
		return durable.Expect{}, err
	}
	g, err := intParam(r, "expect_generation", 0)
	if err != nil {
		return durable.Expect{}, err
	}
	return durable.Expect{Attempt: int(a), Generation: g, RunID: r.URL.Query().Get("expect_run_id")}, nil
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("task_id")
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, reader.ActionCancel); err != nil {
		s.fail(w, r, err)
		return
	}
	exp, err := s.expect(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.client.Cancel(r.Context(), id, exp)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	code := http.StatusConflict
	switch out {
	case durable.CancelAccepted, durable.CancelAlreadyRequested:
		code = http.StatusAccepted
	case durable.CancelNotFound:
		code = http.StatusNotFound
	}
	s.log.Info("cancel", "task_id", id, "principal", principal, "outcome", out)
	writeJSON(w, code, Outcome{TaskID: id, Outcome: string(out)})
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("task_id")
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, reader.ActionRetry); err != nil {
		s.fail(w, r, err)
		return
	}
	exp, err := s.expect(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.client.Retry(r.Context(), id, exp)
	var held *durable.UniqueHeldError
	if errors.As(err, &held) {
		s.log.Info("retry", "task_id", id, "principal", principal, "outcome", OutcomeUniqueKeyHeld, "holder", held.Holder)
		writeJSON(w, http.StatusConflict, Outcome{TaskID: id, Outcome: OutcomeUniqueKeyHeld, HeldBy: held.Holder})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	code := http.StatusConflict
	switch out {
	case durable.RetryAccepted:
		code = http.StatusAccepted
	case durable.RetryNotFound:
		code = http.StatusNotFound
	}
	s.log.Info("retry", "task_id", id, "principal", principal, "outcome", out)
	writeJSON(w, code, Outcome{TaskID: id, Outcome: string(out)})
}
