package serve

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

// The task page's actions: Cancel and Retry. A link on the task page
// opens a confirmation page (GET /tasks/{id}/cancel or /retry) whose form
// posts to the same path; the post is authorized as POST
// /api/tasks/{id}/cancel or /retry is (reader.ActionCancel,
// reader.ActionRetry), runs the same durable.Client call pinned to the
// attempt and generation the confirmation showed, and redirects to the
// task page, which shows the outcome. A signed-in browser's form carries
// its session's CSRF token (see sessions); a bearer-token caller, which
// sends no cookie, needs none. With script, the task page's actions
// script (web/pages.html, "actions-script") fetches the confirmation page
// and posts its form to the same route, and shows the task page the post
// is sent on to in place: the routes are the same either way.

// taskAction is one of the task page's actions.
type taskAction struct {
	Name, Verb string
	Auth       reader.Action
	// States the action applies to (the task page offers it then).
	States []durable.State
	// Outcomes are the durable outcomes the task page may show.
	Outcomes []string
}

var taskActions = map[string]taskAction{
	"cancel": {Name: "cancel", Verb: "Cancel", Auth: reader.ActionCancel,
		States: []durable.State{durable.StateQueued, durable.StateRunning},
		Outcomes: []string{string(durable.CancelAccepted), string(durable.CancelAlreadyRequested), string(durable.CancelAlreadyTerminal),
			string(durable.CancelCompletionPending), string(durable.CancelNotFound), string(durable.CancelStaleAttempt),
			string(durable.CancelStaleGeneration), string(durable.CancelInvalidState)}},
	"retry": {Name: "retry", Verb: "Retry", Auth: reader.ActionRetry,
		States: []durable.State{durable.StateFailed, durable.StateLost, durable.StateCancelled, durable.StateExpired},
		Outcomes: []string{string(durable.RetryAccepted), string(durable.RetryNotRetryable), string(durable.RetryNotFound),
			string(durable.RetryStaleAttempt), string(durable.RetryStaleGeneration), string(durable.RetryStaleWorkflowIdentity),
			OutcomeUniqueKeyHeld}},
}

// actionsOf are the actions a task in state st offers, in page order.
func actionsOf(st durable.State) []taskAction {
	var out []taskAction
	for _, name := range []string{"cancel", "retry"} {
		if a := taskActions[name]; slices.Contains(a.States, st) {
			out = append(out, a)
		}
	}
	return out
}

// shownOutcome is the "Cancel: ACCEPTED" line of a task page reached by
// an action's redirect; "" unless both parameters name a known action
// and one of its outcomes.
func shownOutcome(q url.Values) string {
	a, ok := taskActions[q.Get("action")]
	if !ok || !slices.Contains(a.Outcomes, q.Get("outcome")) {
		return ""
	}
	return a.Verb + ": " + q.Get("outcome")
}

// bearerCaller: the request authenticates by its Authorization header
// (as browserPrincipal does first), not by a session cookie.
func bearerCaller(r *http.Request) bool {
	_, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok
}

// csrfToken is the CSRF token of the request's session, "" for a bearer
// caller or a request without a live session.
func (s *Server) csrfToken(r *http.Request) string {
	if bearerCaller(r) {
		return ""
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return ""
	}
	ss, ok := s.sessions.lookup(c.Value)
	if !ok {
		return ""
	}
	return ss.csrf
}

// csrfOK checks a parsed form post: a bearer caller needs no token; a
// session's post must carry its session's token (compared in constant
// time) and come from this site.
func (s *Server) csrfOK(r *http.Request) bool {
	if bearerCaller(r) {
		return true
	}
	want, got := s.csrfToken(r), r.PostForm.Get("csrf")
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 && sameOrigin(r)
}

// loadForAction authorizes principal for the action on the task and
// loads it.
func (s *Server) loadForAction(r *http.Request, principal string, a taskAction) (*durable.Task, error) {
	id := r.PathValue("task_id")
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, a.Auth); err != nil {
		return nil, err
	}
	t, err := s.client.Get(r.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		err = &reader.Error{Code: gread.ErrorCodeNotFound, Message: "no such task"}
	}
	return t, err
}

type confirmData struct {
	page
	Action     taskAction
	Task       TaskStatus
	Applies    bool
	CSRF       string
	Generation int64
}

// confirmPage is GET /tasks/{id}/cancel or /retry: what the action will
// do, and the form that does it.
func (s *Server) confirmPage(name string) func(http.ResponseWriter, *http.Request, string) {
	a := taskActions[name]
	return func(w http.ResponseWriter, r *http.Request, principal string) {
		t, err := s.loadForAction(r, principal, a)
		if err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
		d := confirmData{page: page{Title: a.Verb + " task " + t.ID, Principal: principal, Back: "/tasks/" + t.ID}, Action: a,
			Task: status(t, false), Applies: slices.Contains(a.States, t.State), CSRF: s.csrfToken(r), Generation: t.Generation}
		s.render(w, r, http.StatusOK, "confirm", d)
	}
}

// actionPost is POST /tasks/{id}/cancel or /retry: the confirmed action.
func (s *Server) actionPost(name string) func(http.ResponseWriter, *http.Request, string) {
	a := taskActions[name]
	return func(w http.ResponseWriter, r *http.Request, principal string) {
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			s.render(w, r, http.StatusBadRequest, "error", page{Title: a.Verb, Principal: principal, Code: "INVALID_ARGUMENT", Message: "malformed form"})
			return
		}
		if !s.csrfOK(r) {
			s.log.Info(name+" refused: form token", "principal", principal)
			s.render(w, r, http.StatusForbidden, "error", page{Title: a.Verb, Principal: principal, Code: "ACCESS_DENIED",
				Message: "the form's token is missing or wrong (or the post came from another site); open the task page and try again",
				Back:    "/tasks/" + r.PathValue("task_id")})
			return
		}
		id := r.PathValue("task_id")
		if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, a.Auth); err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
		var exp durable.Expect
		for _, f := range []struct {
			name string
			min  int64
			set  func(int64)
		}{
			{"expect_attempt", 1, func(n int64) { exp.Attempt = int(n) }},
			{"expect_generation", 0, func(n int64) { exp.Generation = n }},
		} {
			if v := r.PostForm.Get(f.name); v != "" {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || n < f.min {
					s.htmlFail(w, r, principal, invalid("%s must be an integer of at least %d", f.name, f.min))
					return
				}
				f.set(n)
			}
		}
		var out string
		var err error
		if name == "cancel" {
			var o durable.CancelOutcome
			o, err = s.client.Cancel(r.Context(), id, exp)
			out = string(o)
		} else {
			var o durable.RetryOutcome
			o, err = s.client.Retry(r.Context(), id, exp)
			out = string(o)
			if errors.Is(err, durable.ErrUniqueHeld) {
				out, err = OutcomeUniqueKeyHeld, nil
			}
		}
		if err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
		s.log.Info(name, "task_id", id, "principal", principal, "outcome", out, "via", "page")
		http.Redirect(w, r, "/tasks/"+id+"?"+url.Values{"action": {name}, "outcome": {out}}.Encode(), http.StatusSeeOther)
	}
}
