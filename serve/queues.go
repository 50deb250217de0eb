package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/serve/reader"
)

// The queue routes (docs/durable.md#fair-admission): GET
// /api/queues/{queue} is the queue's durable.QueueStatus, PUT
// /api/queues/{queue}/limits sets its durable.QueueLimits. A queue holds
// the tasks of every flow, so both are authorized for every flow
// (reader.ActionReadQueue, reader.ActionSetQueueLimits): with the token
// allowlist, only a principal whose flows are "*" may use them.

// maxLimitsBody bounds PUT /api/queues/{queue}/limits's body.
const maxLimitsBody = 4 << 10

// queueLimitFields names the body field of each durable.QueueLimits
// field a durable.OptionError can name.
var queueLimitFields = map[string]string{"Queue": "queue", "PerKeyRunning": "per_key_running", "StartsPerSecond": "starts_per_second",
	"Burst": "burst"}

// queueOf authorizes action on the request's queue for every flow and
// checks the queue's name; it answers the request itself and returns
// false when either fails.
func (s *Server) queueOf(w http.ResponseWriter, r *http.Request, principal string, action reader.Action) (string, bool) {
	if err := s.reads.AuthorizeFlow(r.Context(), principal, "", action); err != nil {
		s.fail(w, r, err)
		return "", false
	}
	queue := r.PathValue("queue")
	if err := durable.CheckQueueName(queue); err != nil {
		writeJSON(w, http.StatusBadRequest, inputError("queue", "%v", err))
		return "", false
	}
	return queue, true
}

// queueStatus is GET /api/queues/{queue}: the queue's limits (zero for
// none) and admission counts.
func (s *Server) queueStatus(w http.ResponseWriter, r *http.Request, principal string) {
	queue, ok := s.queueOf(w, r, principal, reader.ActionReadQueue)
	if !ok {
		return
	}
	st, err := s.client.Queue(r.Context(), queue)
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: queue %s: %w", queue, err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// setQueueLimits is PUT /api/queues/{queue}/limits: the body is a
// durable.QueueLimits ({} removes the limits); a field out of its range
// is a 400 InputError naming it and nothing is written. The answer is
// the queue's status with the new limits.
func (s *Server) setQueueLimits(w http.ResponseWriter, r *http.Request, principal string) {
	queue, ok := s.queueOf(w, r, principal, reader.ActionSetQueueLimits)
	if !ok {
		return
	}
	l, ie := decodeQueueLimits(http.MaxBytesReader(w, r.Body, maxLimitsBody))
	if ie != nil {
		writeJSON(w, http.StatusBadRequest, ie)
		return
	}
	if err := s.client.SetQueueLimits(r.Context(), queue, l); err != nil {
		var oe *durable.OptionError
		if errors.As(err, &oe) && errors.Is(err, durable.ErrInvalidOption) {
			writeJSON(w, http.StatusBadRequest, inputError(queueLimitFields[oe.Option], "%v", err))
			return
		}
		s.fail(w, r, fmt.Errorf("serve: setting the limits of queue %s: %w", queue, err))
		return
	}
	s.log.Info("queue limits", "queue", queue, "principal", principal, "per_key_running", l.PerKeyRunning,
		"starts_per_second", l.StartsPerSecond, "burst", l.Burst)
	st, err := s.client.Queue(r.Context(), queue)
	if err != nil {
		s.fail(w, r, fmt.Errorf("serve: queue %s: %w", queue, err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// decodeQueueLimits reads one JSON object of durable.QueueLimits (no
// unknown field, nothing after it), or the InputError that says what is
// wrong with the body.
func decodeQueueLimits(body io.Reader) (durable.QueueLimits, *InputError) {
	var l durable.QueueLimits
	raw, err := io.ReadAll(body)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err = dec.Decode(&l); err == nil && dec.More() {
			err = errors.New("more than one JSON value")
		}
	}
	var tooLarge *http.MaxBytesError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &tooLarge):
		return l, inputError("", "the body is over %d bytes", maxLimitsBody)
	case errors.As(err, &te):
		return l, inputError(te.Field, "the body is not a QueueLimits: %v", err)
	}
	field := ""
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = strings.Trim(name, `"`)
	}
	return l, inputError(field, "the body is not a QueueLimits: %v", err)
}
