package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

// A map's failed items page (GET /tasks/{id}/graph/map-items?node_id=):
// the failed item each attempt of the task recorded for the map (a map
// stops at its first failed item, so an attempt records at most one:
// the item its stored error names, reader.MapFailedItems), newest attempt
// first, in keyset pages of at most MaxListLimit rows (default
// DefaultListLimit) with signed cursors bound to the principal, task,
// map and page size, as the /tasks page's. Each row says how many
// items the failure cancelled in flight, from the attempt's detail of
// the map node, since those are counted but not kept.

// mapItemsCursor is the signed payload of a failed-items cursor.
type mapItemsCursor struct {
	V         int    `json:"v"`
	Principal string `json:"principal"`
	Task      string `json:"task"`
	Node      string `json:"node"`
	Limit     int    `json:"limit"`
	Before    int64  `json:"before,omitempty"`
}

const mapItemsCursorPurpose = "rayflow.map-items.cursor.v1"

type mapItemRow struct {
	Attempt                        int64
	Index                          int64
	State, Type, Message, NodeHref string
	MessageOmitted                 bool
	Cancelled                      string
}

type mapItemsData struct {
	page
	TaskID, NodeID, GraphHref, NodeHref string
	Rows                                []mapItemRow
	Next, First                         string
	Omitted                             int
}

func mapItemsHref(taskID, nodeID string, v url.Values) string {
	if v == nil {
		v = url.Values{}
	}
	v.Set("node_id", nodeID)
	return "/tasks/" + taskID + "/graph/map-items?" + v.Encode()
}

// mapItemsPage is a map node's failed items, every attempt's.
func (s *Server) mapItemsPage(w http.ResponseWriter, r *http.Request, principal string) {
	taskID, nodeID := r.PathValue("task_id"), r.URL.Query().Get("node_id")
	// Authorized first: a denied principal is refused whatever it asks.
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, taskID, reader.ActionReadProgress); err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	limit, err := intParam(r, "limit", 1)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		s.htmlFail(w, r, principal, invalid("limit must be 1 to %d", MaxListLimit))
		return
	}
	want := mapItemsCursor{V: 1, Principal: principal, Task: taskID, Node: nodeID, Limit: int(limit)}
	if tok := r.URL.Query().Get("cursor"); tok != "" {
		payload, _, err := s.keys.Unseal(mapItemsCursorPurpose, tok)
		if err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
		var c mapItemsCursor
		if err := json.Unmarshal(payload, &c); err != nil || c.V != 1 || c.Before < 1 {
			s.htmlFail(w, r, principal, &reader.Error{Code: gread.ErrorCodeInvalidCursor, Message: "invalid cursor"})
			return
		}
		before := c.Before
		c.Before = 0
		if c != want {
			s.htmlFail(w, r, principal, &reader.Error{Code: gread.ErrorCodeCursorMismatch, Message: "cursor was issued for another principal, task, map or limit"})
			return
		}
		want.Before = before
	}
	items, err := s.reads.MapFailedItems(r.Context(), principal, taskID, nodeID, want.Before, int(limit)+1, ErrorMaxBytes)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	d := mapItemsData{page: page{Title: "Failed items of map " + nodeID, Principal: principal}, TaskID: taskID, NodeID: nodeID,
		GraphHref: viewHref(taskID, 0, 0, viewFailures)}
	more := len(items) > int(limit)
	if more {
		items = items[:limit]
	}
	for _, it := range items {
		row := mapItemRow{Attempt: it.Attempt, Index: it.Index, State: it.State, Type: it.ErrorType, Message: it.ErrorMessage,
			MessageOmitted: it.MessageBytes > ErrorMaxBytes, NodeHref: nodeHref(taskID, it.Attempt, nodeID), Cancelled: "not recorded"}
		if row.MessageOmitted {
			d.Omitted++
		}
		// The attempt's detail of the map: the items in flight when it
		// failed (the failed one among them) were cancelled with it.
		out, err := s.reads.Node(r.Context(), principal, taskID, it.Attempt, nodeID)
		var re *reader.Error
		switch {
		case errors.As(err, &re) && (re.Code == gread.ErrorCodeNotFound || re.Code == gread.ErrorCodeMissing):
		case err != nil:
			s.htmlFail(w, r, principal, err)
			return
		case out.Item != nil && out.Item.Fanout != nil:
			row.Cancelled = strconv.FormatInt(max(out.Item.Fanout.InFlightItems-1, 0), 10)
		}
		d.Rows = append(d.Rows, row)
	}
	if more {
		want.Before = items[len(items)-1].Attempt
		payload, err := json.Marshal(want)
		if err == nil {
			var tok string
			if tok, err = s.keys.Seal(mapItemsCursorPurpose, payload); err == nil {
				v := url.Values{"cursor": {tok}}
				if r.URL.Query().Get("limit") != "" {
					v.Set("limit", strconv.FormatInt(limit, 10))
				}
				d.Next = mapItemsHref(taskID, nodeID, v)
			}
		}
		if err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
	}
	if r.URL.Query().Get("cursor") != "" {
		v := url.Values{}
		if r.URL.Query().Get("limit") != "" {
			v.Set("limit", strconv.FormatInt(limit, 10))
		}
		d.First = mapItemsHref(taskID, nodeID, v)
	}
	s.render(w, r, http.StatusOK, "map-items", d)
}
