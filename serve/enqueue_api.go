package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/serve/reader"
)

// EnqueueRequest is the JSON body of POST /api/tasks: one task of any flow
// the server registered or a live worker publishes (docs/durable.md#published-flows),
// with the input as JSON. Zero options take the durable defaults.
type EnqueueRequest struct {
	Flow           string          `json:"flow"`
	Input          json.RawMessage `json:"input"`
	Queue          string          `json:"queue,omitempty"`
	Priority       int             `json:"priority,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	TimeoutSeconds int64           `json:"timeout_seconds,omitempty"`
	// AllowUnserved enqueues even when no live worker serves the flow on
	// the queue (durable.EnqueueOptions.AllowUnserved).
	AllowUnserved bool `json:"allow_unserved,omitempty"`
	// UniqueKey, UniqueGlobal and UniqueForSeconds are
	// durable.EnqueueOptions.Unique: a held key answers 200 with the
	// holder's task and "duplicate": true instead of 201.
	UniqueKey        string `json:"unique_key,omitempty"`
	UniqueGlobal     bool   `json:"unique_global,omitempty"`
	UniqueForSeconds int64  `json:"unique_for_seconds,omitempty"`
	// RunAt (RFC 3339) is when the task becomes claimable
	// (durable.EnqueueOptions.RunAfter); "" means now.
	RunAt string `json:"run_at,omitempty"`
	// ConcurrencyKey (1–200 bytes) is durable.EnqueueOptions.ConcurrencyKey:
	// the queue's per-key running limit and round-robin across keys apply
	// (docs/durable.md#fair-admission).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

// maxEnqueueBody bounds POST /api/tasks's body: the largest input and
// room for the other fields.
const maxEnqueueBody = durable.MaxInputBytes + 64<<10

// anyFlow is the Flow of the POST /api/tasks route, whose body names it.
const anyFlow = "*"

// enqueueJSON is POST /api/tasks. It authorizes the principal for the
// body's flow first (a body that names none is authorized as the flow "",
// which only an allow-all principal has), so that a denied principal
// learns nothing of the input's validity; then it checks the options and
// the input (400 InputError naming the body field: "input.numbers[1]"
// for a field of the input) and creates the task.
func (s *Server) enqueueJSON(w http.ResponseWriter, r *http.Request, principal string) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEnqueueBody))
	var req EnqueueRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	decodeErr := readErr
	if decodeErr == nil {
		decodeErr = dec.Decode(&req)
	}
	if err := s.reads.AuthorizeFlow(r.Context(), principal, req.Flow, reader.ActionEnqueue); err != nil {
		s.fail(w, r, err)
		return
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(decodeErr, &tooLarge):
		writeJSON(w, http.StatusBadRequest, inputError("input", "the body is over %d bytes (the input is at most %d)", maxEnqueueBody, durable.MaxInputBytes))
		return
	case decodeErr != nil:
		field := ""
		if name, ok := strings.CutPrefix(decodeErr.Error(), "json: unknown field "); ok {
			field = strings.Trim(name, `"`)
		}
		var te *json.UnmarshalTypeError
		if errors.As(decodeErr, &te) {
			field = te.Field
		}
		writeJSON(w, http.StatusBadRequest, inputError(field, "the body is not an EnqueueRequest: %v", decodeErr))
		return
	case req.Flow == "":
		writeJSON(w, http.StatusBadRequest, inputError("flow", "flow is required"))
		return
	case req.TimeoutSeconds < 0 || req.TimeoutSeconds > durable.MaxTimeoutSeconds: // checked before it is scaled to a Duration
		writeJSON(w, http.StatusBadRequest, inputError("timeout_seconds", "timeout_seconds must be from 0 to %d, got %d", durable.MaxTimeoutSeconds, req.TimeoutSeconds))
		return
	case req.UniqueForSeconds < 0 || req.UniqueForSeconds > durable.MaxTimeoutSeconds:
		writeJSON(w, http.StatusBadRequest, inputError("unique_for_seconds", "unique_for_seconds must be from 0 to %d, got %d", durable.MaxTimeoutSeconds, req.UniqueForSeconds))
		return
	}
	var runAt time.Time
	if req.RunAt != "" {
		var err error
		if runAt, err = time.Parse(time.RFC3339Nano, req.RunAt); err != nil {
			writeJSON(w, http.StatusBadRequest, inputError("run_at", "run_at %q is not an RFC 3339 time such as 2026-12-24T18:00:00Z", req.RunAt))
			return
		}
	}
	o := durable.EnqueueOptions{Queue: req.Queue, Priority: req.Priority, MaxAttempts: req.MaxAttempts,
		Timeout: time.Duration(req.TimeoutSeconds) * time.Second, AllowUnserved: req.AllowUnserved, RunAfter: runAt,
		Unique:         durable.Unique{Key: req.UniqueKey, Global: req.UniqueGlobal, For: time.Duration(req.UniqueForSeconds) * time.Second},
		ConcurrencyKey: req.ConcurrencyKey}
	en, err := s.client.EnqueueJSONDetail(r.Context(), req.Flow, req.Input, o)
	if err != nil {
		if ie := enqueueInputError(err); ie != nil {
			writeJSON(w, http.StatusBadRequest, ie)
			return
		}
		s.fail(w, r, fmt.Errorf("serve: enqueueing %s: %w", req.Flow, err))
		return
	}
	id := en.TaskID
	code := http.StatusCreated
	if en.Duplicate {
		code = http.StatusOK
	}
	s.log.Info("enqueue", "task_id", id, "flow", en.Flow, "principal", principal, "duplicate", en.Duplicate)
	w.Header().Set("Location", "/api/tasks/"+id)
	writeJSON(w, code, Enqueued{TaskID: id, Flow: en.Flow, State: string(en.State), MaxAttempts: en.MaxAttempts,
		StatusURL: "/api/tasks/" + id, ProgressURL: "/api/workflows/" + id, GraphURL: "/tasks/" + id + "/graph", Duplicate: en.Duplicate})
}

// enqueueOptionFields names the EnqueueRequest field of each
// durable.EnqueueOptions field a durable.OptionError can name.
var enqueueOptionFields = map[string]string{
	"Queue": "queue", "Priority": "priority", "MaxAttempts": "max_attempts", "Timeout": "timeout_seconds",
	"Unique.Key": "unique_key", "Unique.For": "unique_for_seconds", "ConcurrencyKey": "concurrency_key",
}

// enqueueInputError is the 400 body of an enqueue the durable client
// refused for its request (nil for any other error).
func enqueueInputError(err error) *InputError {
	var fe *durable.InputFieldError
	switch {
	case errors.As(err, &fe):
		field := "input"
		if fe.Field != "" {
			field += "." + fe.Field
		}
		return inputError(field, "%v", err)
	case errors.Is(err, durable.ErrInvalidInput), errors.Is(err, durable.ErrInputTooLarge):
		return inputError("input", "%v", err)
	case errors.Is(err, durable.ErrUnknownFlow):
		return inputError("flow", "%v", err)
	case errors.Is(err, durable.ErrUnserved):
		return inputError("queue", "%v", err)
	case errors.Is(err, durable.ErrInvalidOption):
		var oe *durable.OptionError
		if errors.As(err, &oe) {
			return inputError(enqueueOptionFields[oe.Option], "%v", err)
		}
		return inputError("", "%v", err)
	}
	return nil
}
