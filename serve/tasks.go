package serve

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/rayflow/rayflow/engine/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/read"
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
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, read.ActionReadTask); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.client.Get(r.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		s.fail(w, r, &read.Error{Code: gread.ErrorCodeNotFound, Message: "no such task"})
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
type listCursor struct {
	V         int      `json:"v"`
	Principal string   `json:"principal"`
	State     string   `json:"state"`
	Queue     string   `json:"queue"`
	Limit     int64    `json:"limit"`
	Flows     []string `json:"flows"`
	After     string   `json:"after"`
}

const listCursorPurpose = "rayflow.executions.cursor.v1"

// listTasks lists the tasks of the principal's flows, newest first, with
// signed cursors bound to the principal, the filters and the limit.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, principal string) {
	flows := s.tokens.Flows(principal)
	if len(flows) == 0 {
		s.fail(w, r, &read.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"})
		return
	}
	limit, err := intParam(r, "limit", 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		s.fail(w, r, invalid("limit must be 1 to %d", MaxListLimit))
		return
	}
	q := r.URL.Query()
	state, queue := q.Get("state"), q.Get("queue")
	if state != "" && !durable.State(state).Valid() {
		s.fail(w, r, invalid("unknown state %q", state))
		return
	}
	if len(queue) > durable.MaxQueueNameLen {
		s.fail(w, r, invalid("queue name over %d bytes", durable.MaxQueueNameLen))
		return
	}
	want := listCursor{V: 1, Principal: principal, State: state, Queue: queue, Limit: limit, Flows: flows}
	if tok := q.Get("cursor"); tok != "" {
		payload, _, err := s.keys.Unseal(listCursorPurpose, tok)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var c listCursor
		if err := json.Unmarshal(payload, &c); err != nil || c.V != 1 || c.After == "" {
			s.fail(w, r, &read.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"})
			return
		}
		after := c.After
		c.After = ""
		if !reflect.DeepEqual(c, want) {
			s.fail(w, r, &read.Error{Code: gread.ErrorCodeCursorMismatch, Message: "cursor was issued for another principal, filter or limit"})
			return
		}
		want.After = after
	}
	all := slices.Contains(flows, "*")
	var flowArg []string
	if !all {
		flowArg = flows
	}
	before := int64(math.MaxInt64)
	if want.After != "" {
		if before, err = strconv.ParseInt(want.After, 10, 64); err != nil {
			s.fail(w, r, &read.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"})
			return
		}
	}
	// Only the bounded columns of a list item; an error message over the
	// inline bound is not loaded at all.
	rows, err := s.pool.Query(r.Context(), `SELECT id, task_id::text, flow_name, queue_name, state, attempt_number, max_attempts,
 execution_generation, enqueued_at, started_at, finished_at, coalesce(cancellation_status, ''),
 CASE WHEN octet_length(error_message) <= $6 THEN error_message END, octet_length(error_message)
 FROM rayflow_tasks
 WHERE id < $1 AND ($2 = '' OR state = $2) AND ($3 = '' OR queue_name = $3) AND ($4::text[] IS NULL OR flow_name = ANY($4))
 ORDER BY id DESC LIMIT $5`, before, state, queue, flowArg, limit+1, ErrorMaxBytes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var tasks []*durable.Task
	var errOmitted []bool
	for rows.Next() {
		var t durable.Task
		var msg *string
		var msgLen *int32
		if err := rows.Scan(&t.PK, &t.ID, &t.Flow, &t.Queue, &t.State, &t.Attempt, &t.MaxAttempts, &t.Generation,
			&t.EnqueuedAt, &t.StartedAt, &t.FinishedAt, &t.CancellationStatus, &msg, &msgLen); err != nil {
			rows.Close()
			s.fail(w, r, err)
			return
		}
		if msg != nil {
			t.ErrorMessage = *msg
		}
		tasks = append(tasks, &t)
		errOmitted = append(errOmitted, msg == nil && msgLen != nil) // over the bound: not loaded
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		s.fail(w, r, err)
		return
	}
	out := TaskList{Items: []TaskStatus{}, Counts: map[durable.State]int{}}
	if len(tasks) > int(limit) {
		tasks, out.HasMore = tasks[:limit], true
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
		want.After = strconv.FormatInt(tasks[len(tasks)-1].PK, 10)
		payload, err := json.Marshal(want)
		if err == nil {
			var tok string
			if tok, err = s.keys.Seal(listCursorPurpose, payload); err == nil {
				out.NextCursor = &tok
			}
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	for _, st := range durable.States {
		out.Counts[st] = 0
	}
	crows, err := s.pool.Query(r.Context(), `SELECT state, count(*) FROM rayflow_tasks
 WHERE ($1::text[] IS NULL OR flow_name = ANY($1)) GROUP BY state`, flowArg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for crows.Next() {
		var st string
		var n int
		if err := crows.Scan(&st, &n); err != nil {
			crows.Close()
			s.fail(w, r, err)
			return
		}
		out.Counts[durable.State(st)] = n
	}
	crows.Close()
	if err := crows.Err(); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// Outcome is the body of a cancel or retry.
type Outcome struct {
	TaskID  string `json:"task_id"`
	Outcome string `json:"outcome"`
}

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
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, read.ActionCancel); err != nil {
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
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, read.ActionRetry); err != nil {
		s.fail(w, r, err)
		return
	}
	exp, err := s.expect(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.client.Retry(r.Context(), id, exp)
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
