package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/gen/detail"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/serve/reader"
)

// The browser pages: server-rendered HTML and inline SVG from embedded
// templates and one stylesheet. A live run's pages reload every
// RefreshSeconds until the run is terminal: by one inline script
// (allowed by a per-response CSP nonce) that a "Pause live updates"
// button stops, or, without script, by a <meta http-equiv="refresh">
// inside <noscript>. A task page that offers Cancel or Retry also runs
// the actions script (web/pages.html, template "task"): it confirms and
// posts the action in place with fetch (its policy adds connect-src
// 'self'); without script the links and forms work as they are. Every
// other page runs no script (its CSP forbids any).

//go:embed web/pages.html web/graph.css
var webFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{"refreshSeconds": func() int { return RefreshSeconds }}).ParseFS(webFS, "web/pages.html"))

// SessionCookie holds a browser's session id (HttpOnly, SameSite=Strict;
// Secure over TLS), never the bearer token: the session lives on the
// server (see sessions) and ends at sign-out, expiry, or when its token
// no longer names its principal.
const SessionCookie = "rayflow_token"

// RefreshSeconds is the live pages' refresh period.
const RefreshSeconds = 5

// csp is the pages' Content-Security-Policy: no script at all, styles
// and images from this origin, forms post only here, never framed.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// liveCSP is a live page's policy: csp, and its inline scripts by a
// nonce fresh for each response (the script reloads the page every
// RefreshSeconds until the reader pauses it; without script a
// <noscript> refresh does).
func liveCSP(nonce string) string {
	return csp + "; script-src 'nonce-" + nonce + "'"
}

// actionsCSP is the policy of a task page that offers actions: liveCSP,
// and fetch to this origin only (the actions script loads the
// confirmation and posts it).
func actionsCSP(nonce string) string {
	return csp + "; connect-src 'self'; script-src 'nonce-" + nonce + "'"
}

// scripted reports whether a page struct runs script: it refreshes
// (Refresh set) or posts its actions in place (Fetches set).
func scripted(v reflect.Value) bool {
	if f := v.FieldByName("Refresh"); f.IsValid() && f.Int() != 0 {
		return true
	}
	f := v.FieldByName("Fetches")
	return f.IsValid() && f.Bool()
}

// withNonce returns a copy of data (a page struct) with a fresh Nonce
// when it runs script (see scripted), and the nonce; data as given and
// "" otherwise.
func withNonce(data any) (any, string, error) {
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Struct || !scripted(v) {
		return data, "", nil
	}
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	nonce := base64.StdEncoding.EncodeToString(b[:])
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	c.FieldByName("Nonce").SetString(nonce)
	return c.Interface(), nonce, nil
}

func htmlHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make a browser send Origin: null on our own forms
	h.Set("Cache-Control", "no-store")
}

// renderErrors counts template failures (tests read it).
var renderErrors atomic.Int64

// page is the data every page template shares.
type page struct {
	Title, Principal, Code, Message, Back string
	Refresh                               int
	// Fetches: the page runs the actions script, which fetches from this
	// origin (a task page offering Cancel or Retry).
	Fetches bool
	// Nonce is the script nonce of a page that runs script (render sets
	// it).
	Nonce string
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	var buf bytes.Buffer
	data, nonce, err := withNonce(data)
	if err == nil {
		err = pages.ExecuteTemplate(&buf, name, data)
	}
	if err != nil {
		s.log.Error("render", "page", name, "path", r.URL.Path, "err", err)
		renderErrors.Add(1)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	htmlHeaders(w)
	if nonce != "" {
		policy := liveCSP(nonce)
		if f := reflect.ValueOf(data).FieldByName("Fetches"); f.IsValid() && f.Bool() {
			policy = actionsCSP(nonce)
		}
		w.Header().Set("Content-Security-Policy", policy)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// htmlFail renders err as an error page with the API's status mapping.
func (s *Server) htmlFail(w http.ResponseWriter, r *http.Request, principal string, err error) {
	var re *reader.Error
	p := page{Title: "Error", Principal: principal}
	code := http.StatusInternalServerError
	switch {
	case errors.As(err, &re):
		code, p.Code, p.Message = HTTPStatus(re.Code), string(re.Code), re.Message
	case errors.Is(err, errGraphTooLarge):
		code, p.Code, p.Message = http.StatusOK, "LIMIT_EXCEEDED", fmt.Sprintf("the graph has more than %d retained nodes", MaxGraphNodes)
	case errors.Is(err, errCycle):
		code, p.Code, p.Message = http.StatusServiceUnavailable, "CORRUPT", "the topology has a cycle"
	default:
		s.log.Error("page failed", "path", r.URL.Path, "err", err)
		p.Code, p.Message = "INTERNAL", "internal error"
	}
	p.Title = p.Code
	s.render(w, r, code, "error", p)
}

// browserPrincipal authenticates an HTML request by its session cookie
// or, as the API does, by its bearer token.
func (s *Server) browserPrincipal(r *http.Request) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return s.tokens.Principal(strings.TrimSpace(tok))
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		if ss, ok := s.sessions.lookup(c.Value); ok && s.tokens.principalOf(ss.token) == ss.principal {
			return ss.principal
		}
	}
	return ""
}

// safeNext keeps a post-login redirect on this site: next must be a
// path of this origin ("/tasks/x/graph?a=b"), else the sign-in goes to
// "/". Refused: anything not starting with one "/", a scheme or host
// (parsed as a URL), backslashes and control characters (browsers drop
// a tab or newline and read "/\t/evil.example" as "//evil.example"),
// raw or percent-encoded, and invalid UTF-8.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || len(next) > 2048 || !plainPath(next) {
		return "/"
	}
	u, err := url.Parse(next)
	// u.Path is percent-decoded: "/%2F%2Fevil.example" and "/%09/x" fail here.
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || !plainPath(u.Path) {
		return "/"
	}
	return next
}

// plainPath: valid UTF-8, no "//" or "/\" start, no backslash and no
// control character.
func plainPath(p string) bool {
	if !utf8.ValidString(p) || strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') {
		return false
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// sameOrigin refuses a cross-site form post: by Sec-Fetch-Site when the
// browser sends it, else by an Origin of another host.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, _ string) {
	s.render(w, r, http.StatusOK, "login", struct {
		page
		Next string
	}{page{Title: "Sign in"}, safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, _ string) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !sameOrigin(r) {
		s.render(w, r, http.StatusForbidden, "error", page{Title: "Sign in", Code: "ACCESS_DENIED", Message: "cross-site sign-in refused"})
		return
	}
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "error", page{Title: "Sign in", Code: "INVALID_ARGUMENT", Message: "malformed form"})
		return
	}
	tok, next := strings.TrimSpace(r.PostForm.Get("token")), safeNext(r.PostForm.Get("next"))
	digest := sha256.Sum256([]byte(tok))
	principal := s.tokens.principalOf(digest)
	if principal == "" {
		s.log.Info("sign-in refused") // never the token
		s.render(w, r, http.StatusForbidden, "login", struct {
			page
			Next string
		}{page{Title: "Sign in", Message: "unknown token"}, next})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.sessions.start(principal, digest), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionTTL.Seconds())})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ string) {
	if !sameOrigin(r) {
		s.render(w, r, http.StatusForbidden, "error", page{Title: "Sign out", Code: "ACCESS_DENIED", Message: "cross-site sign-out refused"})
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.sessions.end(c.Value) // a copy of the cookie no longer signs in
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request, _ string) {
	b, err := webFS.ReadFile("web/graph.css")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}

// taskPage is /tasks/{task_id}: state, attempts, the graph link.
func (s *Server) taskPage(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.PathValue("task_id")
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, id, reader.ActionReadTask); err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	t, err := s.client.Get(r.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		err = &reader.Error{Code: gread.ErrorCodeNotFound, Message: "no such task"}
	}
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	p := page{Title: "Task " + t.ID, Principal: principal}
	if !t.State.Terminal() {
		p.Refresh = RefreshSeconds
	}
	st := status(t, true)
	actions := actionsOf(t.State)
	p.Fetches = len(actions) > 0
	s.render(w, r, http.StatusOK, "task", struct {
		page
		Task     TaskStatus
		Actions  []taskAction
		Outcome  string
		Failures []failure
	}{p, st, actions, shownOutcome(r.URL.Query()), s.failuresOf(r.Context(), principal, t)})
}

// glyph places a state's marker shape (circle, triangle, checked square,
// crossed diamond) at (x, y) (its vertical centre).
type glyph struct {
	S, Glyph             string
	X, X1, X2, Y, Y0, Y2 int
}

func newGlyph(state string, x, y int) glyph {
	return glyph{S: state, Glyph: glyphText(state), X: x, X1: x + 6, X2: x + 12, Y: y, Y0: y - 6, Y2: y + 6}
}

func glyphText(state string) string {
	switch state {
	case string(detail.NodeStateRunning):
		return "▶"
	case string(detail.NodeStateSucceeded):
		return "✓"
	case string(detail.NodeStateFailed):
		return "✗"
	}
	return "○"
}

type box struct {
	Href, Aria, Class, ID, State, Label, Text string
	X, Y, RX, TX, TY1, TY2                    int
	G                                         glyph
	// Counts is a map's item counts, on a line of their own at (CX, TY3).
	Counts  string
	CX, TY3 int
	// TextFit and CountsFit, when set, are the textLength (px) that
	// squeezes a long Text or Counts line into the box.
	TextFit, CountsFit int
	// TextHidden draws Text (a group's glyph counts, which Aria says in
	// words) beside the link, hidden from assistive technology, so the
	// link's name starts with all its visible text; a map's Counts are
	// drawn so always.
	TextHidden bool
}

// fit is the textLength (px) that keeps s within width px, or 0 when s
// is short enough to need none: at most width/8 characters, 8px being a
// generous average width of the 12px digits, spaces and state glyphs.
func fit(s string, width int) int {
	if utf8.RuneCountInString(s) > width/8 {
		return width
	}
	return 0
}

type line struct{ X1, Y1, X2, Y2 int }

type attemptLink struct {
	N       int64
	Href    string
	Current bool
}

type graphData struct {
	page
	TaskID, RunState, Availability string
	Attempt                        int64
	Live                           bool
	Counts                         *summary.NodeCounts
	NodeTotal                      int64
	Legend                         []glyph
	Attempts                       []attemptLink
	Window, Windows                int
	FirstLayer, LastLayer          int
	Prev, Next                     string
	Width, Height, Hidden          int
	Boxes                          []box
	Lines                          []line
	// View is the shown view (graph, failures, timeline), Views the links
	// to each.
	View  string
	Views []viewLink
	// The failures view: how many nodes failed, are drawn (kept) and
	// collapsed, and the failed nodes' table.
	Failed, Kept, Collapsed int
	FailedRows              []failedRow
	// FailedUnshown is how many of the summary's failed nodes the view
	// does not have: their detail was not retained (truncated), or past
	// the MaxFailuresRead read.
	FailedUnshown int64
	// Timeline is the timeline view's window.
	Timeline *timeline
	// RepairOf is the task id of the task this one repairs, if any.
	RepairOf string
}

const (
	colW, rowH, boxW, boxH, pad = 210, 84, 190, 52, 20
	maxDrawnEdges               = 2000
)

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func graphHref(taskID string, attempt int64, window int) string {
	v := url.Values{}
	if attempt > 0 {
		v.Set("attempt_number", strconv.FormatInt(attempt, 10))
	}
	if window > 1 {
		v.Set("window", strconv.Itoa(window))
	}
	if len(v) == 0 {
		return "/tasks/" + taskID + "/graph"
	}
	return "/tasks/" + taskID + "/graph?" + v.Encode()
}

func nodeHref(taskID string, attempt int64, nodeID string) string {
	return "/tasks/" + taskID + "/graph/node?" + url.Values{"attempt_number": {strconv.FormatInt(attempt, 10)}, "node_id": {nodeID}}.Encode()
}

func layerHref(taskID string, attempt int64, layer, pg int) string {
	v := url.Values{"attempt_number": {strconv.FormatInt(attempt, 10)}, "layer": {strconv.Itoa(layer)}}
	if pg > 1 {
		v.Set("page", strconv.Itoa(pg))
	}
	return "/tasks/" + taskID + "/graph/layer?" + v.Encode()
}

// attemptsOf is the attempt switcher (attempts 1..current of the task,
// the last MaxStatusAttempts), the task's state ("" when unknown) and the
// task id of the task it repairs ("" for none).
func (s *Server) attemptsOf(r *http.Request, principal, taskID string, shown int64) ([]attemptLink, durable.State, string) {
	if _, err := s.reads.Authorize(r.Context(), s.pool, principal, taskID, reader.ActionReadTask); err != nil {
		return nil, "", ""
	}
	t, err := s.client.Get(r.Context(), taskID)
	if err != nil {
		return nil, "", ""
	}
	var out []attemptLink
	for n := int64(max(1, t.Attempt-MaxStatusAttempts)); n <= int64(t.Attempt); n++ {
		out = append(out, attemptLink{N: n, Href: graphHref(taskID, n, 0), Current: n == shown})
	}
	if shown < int64(t.Attempt) {
		return out, durable.StateFailed, t.RepairOf // an archived attempt is over
	}
	return out, t.State, t.RepairOf
}

func (s *Server) graphPage(w http.ResponseWriter, r *http.Request, principal string) {
	taskID := r.PathValue("task_id")
	attempt, err := intParam(r, "attempt_number", 1)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	win, err := intParam(r, "window", 1)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	view := r.URL.Query().Get("view")
	switch view {
	case "":
		view = viewGraph
	case viewGraph, viewFailures, viewTimeline:
	default:
		s.htmlFail(w, r, principal, invalid("view must be %s, %s or %s", viewGraph, viewFailures, viewTimeline))
		return
	}
	start := time.Now()
	g, gerr := loadGraph(r.Context(), s.reads, &s.graphs, principal, taskID, attempt)
	if gerr != nil && !errors.Is(gerr, errGraphTooLarge) {
		s.htmlFail(w, r, principal, gerr)
		return
	}
	sum := g.Summary
	d := graphData{page: page{Title: "Graph of " + taskID, Principal: principal}, TaskID: taskID,
		Availability: string(sum.Availability), Attempt: sum.RunIdentity.AttemptNumber, View: view}
	d.Views = viewLinks(taskID, d.Attempt, view)
	for _, st := range []detail.NodeState{detail.NodeStatePending, detail.NodeStateRunning, detail.NodeStateSucceeded, detail.NodeStateFailed} {
		d.Legend = append(d.Legend, newGlyph(string(st), 2, 8))
	}
	var taskState durable.State
	d.Attempts, taskState, d.RepairOf = s.attemptsOf(r, principal, taskID, d.Attempt)
	d.RunState = "NOT_REPORTED"
	if sum.Summary != nil {
		d.RunState = string(sum.Summary.State)
		d.Counts, d.NodeTotal = &sum.Summary.NodeCounts, sum.Summary.NodeCounts.RetainedTopology
		d.Live = sum.Summary.Terminal.Outcome == nil
	} else {
		// nothing published yet: live while the task may still publish
		d.Live = sum.Availability == summary.DetailAvailabilityNotReported && !taskState.Terminal()
	}
	if d.Live && taskState != "" && taskState.Terminal() && sum.Summary != nil {
		d.Live = false // the task ended without a final publication
	}
	if d.Live {
		d.Refresh = RefreshSeconds
	}
	switch {
	case errors.Is(gerr, errGraphTooLarge):
		d.Message = fmt.Sprintf("This run retains more than %d nodes; only its counts are shown.", MaxGraphNodes)
	case sum.Summary == nil || len(g.Nodes) == 0:
		d.Message = "No graph is available for this attempt (" + string(sum.Availability) + ")."
	default:
		if g.Truncated {
			d.Message = "The retained graph is incomplete (truncated by the reporting limits)."
		}
		var err error
		switch view {
		case viewFailures:
			err = s.drawFailures(r.Context(), &d, g, principal, int(win))
		case viewTimeline:
			err = s.drawTimeline(r.Context(), &d, g, principal, int(win))
		default:
			err = s.drawWindow(r.Context(), &d, g, principal, int(win))
		}
		if err != nil {
			s.htmlFail(w, r, principal, err)
			return
		}
	}
	s.log.Debug("graph page", "task", taskID, "nodes", len(g.Nodes), "ms", time.Since(start).Milliseconds())
	s.render(w, r, http.StatusOK, "graph", d)
}

func (s *Server) drawWindow(ctx context.Context, d *graphData, g *graph, principal string, win int) error {
	return s.drawItems(ctx, d, g, principal, g.windows(), max(win, 1))
}

// drawItems draws window win (1-based, clamped to the last) of ws.
func (s *Server) drawItems(ctx context.Context, d *graphData, g *graph, principal string, ws [][]item, win int) error {
	win = min(max(win, 1), len(ws))
	items := ws[win-1]
	if g.Sparse { // read the states of the drawn nodes only
		var idx []int
		for _, it := range items {
			if it.Node >= 0 {
				idx = append(idx, it.Node)
			}
		}
		if err := g.fillStates(ctx, s.reads, principal, d.TaskID, idx); err != nil {
			return err
		}
	}
	d.Window, d.Windows = win, len(ws)
	if win > 1 {
		d.Prev = viewHref(d.TaskID, d.Attempt, win-1, d.View)
	}
	if win < len(ws) {
		d.Next = viewHref(d.TaskID, d.Attempt, win+1, d.View)
	}
	if len(items) == 0 {
		return nil
	}
	d.FirstLayer, d.LastLayer = items[0].Layer, items[len(items)-1].Layer
	at := map[int][2]int{} // node index → box top-left
	col, row, cols := 0, -1, 1
	prevLayer := -1
	for _, it := range items {
		if it.Layer != prevLayer {
			row, col, prevLayer = row+1, 0, it.Layer
		}
		x, y := pad+col*colW, pad+row*rowH
		col++
		cols = max(cols, col)
		b := box{X: x, Y: y, TX: x + 26, TY1: y + 21, TY2: y + 40}
		if it.Node < 0 {
			c := it.Counts
			b.Class, b.State, b.ID = "group", "GROUP", fmt.Sprintf("layer-%d", it.Layer)
			b.Label = fmt.Sprintf("group: %d more nodes", len(it.Group))
			b.Text = fmt.Sprintf("○%d ▶%d ✓%d ✗%d", c.Pending, c.Running, c.Succeeded, c.Failed)
			// The name starts with the visible label (the glyph counts are
			// hidden from assistive technology: the name says them in words).
			b.Aria = fmt.Sprintf("group: %d more nodes of layer %d: %d pending, %d running, %d succeeded, %d failed", len(it.Group), it.Layer, c.Pending, c.Running, c.Succeeded, c.Failed)
			b.TextHidden = true
			if g.Sparse {
				b.Text, b.TextHidden = "states: open the layer", false
				b.Aria = fmt.Sprintf("group: %d more nodes, states: open the layer (layer %d's page lists them)", len(it.Group), it.Layer)
			}
			b.Href = layerHref(d.TaskID, d.Attempt, it.Layer, 0)
			b.TX = x + 8
			b.TextFit = fit(b.Text, boxW-16)
		} else {
			n := &g.Nodes[it.Node]
			at[it.Node] = [2]int{x, y}
			st := string(n.State)
			b.Class, b.State, b.ID = "state-"+st, st, n.ID
			b.Label = clip(n.Label, 26)
			b.Text = glyphText(st) + " " + st
			b.Href = nodeHref(d.TaskID, d.Attempt, n.ID)
			b.G = newGlyph(st, x+8, y+26)
			b.Aria = fmt.Sprintf("%s: %s", n.Label, st)
			if n.Kind == topology.NodeKindMap {
				c := MapCounts(n.State, n.Fanout)
				b.Class += " map"
				b.RX = 14
				b.Label = clip("map: "+n.Label, 26)
				// Before its input is exhausted a map's pending count is its
				// item cap less the admitted items: an upper bound.
				atMost, atMostText := "", ""
				if c.Pending > 0 && n.Fanout != nil && !n.Fanout.InputExhausted {
					atMost, atMostText = "≤", "at most "
				}
				// Three lines: the label, the state, the item counts
				// (squeezed in when long).
				b.TY1, b.TY2 = y+17, y+32
				b.Counts = fmt.Sprintf("○%s%d ▶%d ✓%d ✗%d", atMost, c.Pending, c.Running, c.Succeeded, c.Failed)
				b.CX, b.TY3, b.CountsFit = b.TX, y+47, fit(b.Counts, x+boxW-8-b.TX)
				b.Aria = fmt.Sprintf("map %s: %s; items %s%d pending, %d running, %d succeeded, %d failed", n.Label, st, atMostText, c.Pending, c.Running, c.Succeeded, c.Failed)
			}
		}
		d.Boxes = append(d.Boxes, b)
	}
	d.Width, d.Height = 2*pad+cols*colW, 2*pad+(row+1)*rowH
	for _, e := range g.Edges {
		a, ok1 := at[e[0]]
		b, ok2 := at[e[1]]
		if !ok1 && !ok2 {
			continue
		}
		if !ok1 || !ok2 || len(d.Lines) >= maxDrawnEdges {
			d.Hidden++
			continue
		}
		d.Lines = append(d.Lines, line{X1: a[0] + boxW/2, Y1: a[1] + boxH, X2: b[0] + boxW/2, Y2: b[1]})
	}
	return nil
}

// nodePage is one node's detail (a map's item counts): the single node read.
func (s *Server) nodePage(w http.ResponseWriter, r *http.Request, principal string) {
	taskID := r.PathValue("task_id")
	attempt, err := intParam(r, "attempt_number", 1)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	nodeID := r.URL.Query().Get("node_id")
	out, err := s.reads.Node(r.Context(), principal, taskID, attempt, nodeID)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	d := struct {
		page
		NodeID, GraphHref string
		Item              *detail.NodeDetail
		Map               *StateCounts
		// Took is the node's duration (finished_at − started_at).
		Took string
		// ItemsHref is a map's failed items page.
		ItemsHref string
	}{page: page{Title: "Node " + nodeID, Principal: principal}, NodeID: nodeID, GraphHref: graphHref(taskID, out.RunIdentity.AttemptNumber, 0), Item: out.Item,
		ItemsHref: mapItemsHref(taskID, nodeID, nil)}
	if out.Item != nil {
		_, _, d.Took = timing(deref(out.Item.StartedAt), deref(out.Item.FinishedAt))
	}
	if out.Item != nil && out.Item.Fanout != nil {
		c := MapCounts(out.Item.State, out.Item.Fanout)
		d.Map = &c
	}
	if out.Item != nil && (out.Item.State == detail.NodeStatePending || out.Item.State == detail.NodeStateRunning) {
		d.Refresh = RefreshSeconds
	}
	s.render(w, r, http.StatusOK, "node", d)
}

type layerRow struct{ Href, Label, State, Glyph string }

// layerPage lists one layer's nodes (a collapsed group), LayerListPage a page.
func (s *Server) layerPage(w http.ResponseWriter, r *http.Request, principal string) {
	taskID := r.PathValue("task_id")
	attempt, err := intParam(r, "attempt_number", 1)
	if err == nil {
		var l, pg int64
		if l, err = intParam(r, "layer", 0); err == nil {
			if pg, err = intParam(r, "page", 1); err == nil {
				s.layer(w, r, principal, taskID, attempt, int(l), int(max(pg, 1)))
				return
			}
		}
	}
	s.htmlFail(w, r, principal, err)
}

func (s *Server) layer(w http.ResponseWriter, r *http.Request, principal, taskID string, attempt int64, l, pg int) {
	g, err := loadGraph(r.Context(), s.reads, &s.graphs, principal, taskID, attempt)
	if err != nil {
		s.htmlFail(w, r, principal, err)
		return
	}
	attempt = g.Summary.RunIdentity.AttemptNumber
	d := struct {
		page
		TaskID, GraphHref, Prev, Next string
		Layer                         int
		Rows                          []layerRow
	}{page: page{Title: "Layer", Principal: principal}, TaskID: taskID, GraphHref: graphHref(taskID, attempt, 0), Layer: l}
	if l < len(g.Layers) {
		idx := g.Layers[l]
		lo := min((pg-1)*LayerListPage, len(idx))
		hi := min(lo+LayerListPage, len(idx))
		if g.Sparse {
			if err := g.fillStates(r.Context(), s.reads, principal, taskID, idx[lo:hi]); err != nil {
				s.htmlFail(w, r, principal, err)
				return
			}
		}
		for _, i := range idx[lo:hi] {
			n := g.Nodes[i]
			d.Rows = append(d.Rows, layerRow{Href: nodeHref(taskID, attempt, n.ID), Label: n.Label, State: string(n.State), Glyph: glyphText(string(n.State))})
		}
		if pg > 1 {
			d.Prev = layerHref(taskID, attempt, l, pg-1)
		}
		if hi < len(idx) {
			d.Next = layerHref(taskID, attempt, l, pg+1)
		}
	}
	s.render(w, r, http.StatusOK, "layer", d)
}
