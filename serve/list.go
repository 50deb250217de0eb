package serve

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

// The /tasks page: the executions list of GET /api/tasks (the same
// query, authorization, cursors and page-size bounds) as a page, with a
// flow and an enqueued-between filter and a jump to a task by its id.
// Plain GET forms and links: no script.

// MaxFlowNameLen is the longest flow name (the task table's bound).
const MaxFlowNameLen = 256

// listTimeLayouts are the accepted spellings of the from and to filters,
// in UTC: an <input type="datetime-local"> value, with or without
// seconds, or RFC 3339 with its own offset.
var listTimeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano}

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func parseListTime(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	for _, l := range listTimeLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, invalid("%s must be a time as YYYY-MM-DDTHH:MM (UTC) or RFC 3339", name)
}

// pageListParams adds the page's filters to listParams: flow, from, to.
func pageListParams(r *http.Request) (taskQuery, error) {
	tq, err := listParams(r)
	if err != nil {
		return taskQuery{}, err
	}
	q := r.URL.Query()
	tq.Flow = q.Get("flow")
	if !utf8.ValidString(tq.Flow) || utf8.RuneCountInString(tq.Flow) > MaxFlowNameLen {
		return taskQuery{}, invalid("flow name over %d characters", MaxFlowNameLen)
	}
	if tq.From, err = parseListTime("from", q.Get("from")); err != nil {
		return taskQuery{}, err
	}
	if tq.To, err = parseListTime("to", q.Get("to")); err != nil {
		return taskQuery{}, err
	}
	if tq.From != nil && tq.To != nil && !tq.From.Before(*tq.To) {
		return taskQuery{}, invalid("from must be before to")
	}
	return tq, nil
}

type stateCount struct {
	State, Href string
	N           int
	Current     bool
}

type taskRow struct {
	ID, Flow, Queue, State, Enqueued, Href, GraphHref string
	Attempt, MaxAttempts                              int
}

type tasksData struct {
	page
	// the filters as given, to fill the form again
	State, Queue, Flow, From, To, Limit, TaskID string
	States                                      []string
	Counts                                      []stateCount
	Rows                                        []taskRow
	Next, First                                 string
	Listed                                      bool
}

// tasksPage is /tasks: the executions list with its filters, the counts
// by state, and a jump to a task by its exact id.
func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request, principal string) {
	q := r.URL.Query()
	d := tasksData{page: page{Title: "Tasks", Principal: principal}, State: q.Get("state"), Queue: q.Get("queue"), Flow: q.Get("flow"),
		From: q.Get("from"), To: q.Get("to"), Limit: q.Get("limit"), TaskID: q.Get("task_id")}
	for _, st := range durable.States {
		d.States = append(d.States, string(st))
	}
	if len(s.tokens.Flows(principal)) == 0 {
		s.htmlFail(w, r, principal, &reader.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"})
		return
	}
	if id := strings.ToLower(strings.TrimSpace(d.TaskID)); id != "" {
		if uuidRe.MatchString(id) {
			// the task page authorizes, as for any link to it
			http.Redirect(w, r, "/tasks/"+id, http.StatusSeeOther)
			return
		}
		d.Code, d.Message = "INVALID_ARGUMENT", "a task id is a UUID such as 00000000-0000-4000-8000-000000000000"
		s.render(w, r, http.StatusBadRequest, "tasks", d)
		return
	}
	tq, err := pageListParams(r)
	if err == nil {
		var out TaskList
		if out, err = s.queryTasks(r.Context(), principal, tq); err == nil {
			s.fillTasks(&d, out, tq)
			s.render(w, r, http.StatusOK, "tasks", d)
			return
		}
	}
	var re *reader.Error
	if errors.As(err, &re) && (HTTPStatus(re.Code) == http.StatusBadRequest || HTTPStatus(re.Code) == http.StatusConflict) {
		// a bad filter or cursor: the form again, with the message
		d.Code, d.Message = string(re.Code), re.Message
		s.render(w, r, HTTPStatus(re.Code), "tasks", d)
		return
	}
	s.htmlFail(w, r, principal, err)
}

// filterValues are the page's filters as query parameters (the cursor
// excluded).
func (d *tasksData) filterValues() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"state": d.State, "queue": d.Queue, "flow": d.Flow, "from": d.From, "to": d.To, "limit": d.Limit} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

func tasksHref(v url.Values) string {
	if len(v) == 0 {
		return "/tasks"
	}
	return "/tasks?" + v.Encode()
}

func (s *Server) fillTasks(d *tasksData, out TaskList, tq taskQuery) {
	d.Listed = true
	for _, st := range durable.States {
		v := d.filterValues()
		v.Set("state", string(st))
		d.Counts = append(d.Counts, stateCount{State: string(st), N: out.Counts[st], Href: tasksHref(v), Current: string(st) == d.State})
	}
	for _, t := range out.Items {
		d.Rows = append(d.Rows, taskRow{ID: t.TaskID, Flow: t.Flow, Queue: t.Queue, State: string(t.State), Attempt: t.AttemptNumber,
			MaxAttempts: t.MaxAttempts, Enqueued: t.EnqueuedAt.UTC().Format("2006-01-02 15:04:05Z"),
			Href: "/tasks/" + t.TaskID, GraphHref: "/tasks/" + t.TaskID + "/graph"})
	}
	if out.NextCursor != nil {
		v := d.filterValues()
		v.Set("cursor", *out.NextCursor)
		d.Next = tasksHref(v)
	}
	if tq.Cursor != "" {
		d.First = tasksHref(d.filterValues())
	}
}
