package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/rayflow/rayflow/engine/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/read"
)

// Bounds of the task responses (CONTRACTS §10).
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

// TaskList is one page of the executions list.
type TaskList struct {
	Items         []TaskStatus `json:"items"`
	ReturnedCount int          `json:"returned_count"`
	NextCursor    *string      `json:"next_cursor"`
}

// listTasks lists the tasks of the principal's flows, newest first. The
// page is filtered after the keyset read, so it may hold fewer items than
// the limit while a next cursor remains.
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
	p, err := s.client.List(r.Context(), durable.ListOptions{State: durable.State(q.Get("state")), Queue: q.Get("queue"), Limit: int(limit), Cursor: q.Get("cursor")})
	if errors.Is(err, durable.ErrBadCursor) {
		s.fail(w, r, &read.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"})
		return
	}
	if errors.Is(err, durable.ErrInvalidOption) {
		s.fail(w, r, invalid("%v", err))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := TaskList{Items: []TaskStatus{}}
	all := slices.Contains(flows, "*")
	for _, t := range p.Tasks {
		if all || slices.Contains(flows, t.Flow) {
			out.Items = append(out.Items, status(t, false))
		}
	}
	out.ReturnedCount = len(out.Items)
	if p.Next != "" {
		out.NextCursor = &p.Next
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
