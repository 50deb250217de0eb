package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/serve/reader"
)

// Server is the HTTP API.
type Server struct {
	pool   *pgxpool.Pool
	tokens *Tokens
	// sessions are the browser sign-ins (the cookie holds a session id).
	sessions *sessions
	reads    *reader.Service
	keys     *reader.Keys
	client   *durable.Client
	log      *slog.Logger
	mux      *http.ServeMux
	graphs   graphCache
	metrics  *metrics
	// enqueueRoutes are the installed EnqueueRoutes; openAPI documents
	// them with the core API.
	enqueueRoutes []EnqueueRoute
	openAPI       []byte
}

// Route is one endpoint of the API.
type Route struct {
	Method, Pattern string
	// Public routes (the probes, sign-in, the stylesheet) need no token.
	Public bool
	// HTML routes are browser pages: they also take the session cookie,
	// and send a request without a principal to the sign-in page.
	HTML bool
	// Read names the read kind whose latency the route records.
	Read string
	// Flow is set on the enqueue routes: the durable flow they create
	// (authorized as reader.ActionEnqueue on it); "*" on POST /api/tasks,
	// whose body names the flow.
	Flow string
	// AllFlows routes concern the tasks of every flow (a queue's limits
	// and counts): only a principal allowed every flow may use them.
	AllFlows bool
	h        func(w http.ResponseWriter, r *http.Request, principal string)
}

// New returns the API on pool, with tokens as principals and allowlist
// and keys signing cursors. log may be nil (slog.Default()).
func New(pool *pgxpool.Pool, tokens *Tokens, keys *reader.Keys, log *slog.Logger, opts ...Option) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	svc, err := reader.New(pool, keys, tokens)
	if err != nil {
		return nil, err
	}
	s := &Server{pool: pool, tokens: tokens, reads: svc, keys: keys, client: durable.NewClient(pool, nil), log: log, mux: http.NewServeMux(), metrics: newMetrics(), sessions: newSessions()}
	for _, o := range opts {
		o(s)
	}
	if s.openAPI, err = openAPIDocument(openAPI, s.enqueueRoutes); err != nil {
		return nil, err
	}
	for _, rt := range s.Routes() {
		s.mux.Handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
	}
	return s, nil
}

// Reads returns the read service the API uses.
func (s *Server) Reads() *reader.Service { return s.reads }

// Routes lists every endpoint (the tests walk it).
func (s *Server) Routes() []Route {
	return append([]Route{
		{Method: "GET", Pattern: "/livez", Public: true, h: s.livez},
		{Method: "GET", Pattern: "/readyz", Public: true, h: s.readyz},
		{Method: "GET", Pattern: "/api/openapi.json", Public: true, h: s.openapi},
		{Method: "GET", Pattern: "/metrics", h: s.metricsHandler},
		{Method: "GET", Pattern: "/api/tasks", h: s.listTasks},
		{Method: "POST", Pattern: "/api/tasks", Flow: anyFlow, h: s.enqueueJSON},
		{Method: "GET", Pattern: "/api/tasks/{task_id}", h: s.taskStatus},
		{Method: "POST", Pattern: "/api/tasks/{task_id}/cancel", h: s.cancel},
		{Method: "POST", Pattern: "/api/tasks/{task_id}/retry", h: s.retry},
		{Method: "GET", Pattern: "/api/queues/{queue}", AllFlows: true, h: s.queueStatus},
		{Method: "PUT", Pattern: "/api/queues/{queue}/limits", AllFlows: true, h: s.setQueueLimits},
		{Method: "GET", Pattern: "/api/workflows/{task_id}", Read: readSummary, h: s.summary},
		{Method: "GET", Pattern: "/api/workflows/{task_id}/topology/nodes", Read: readNodes, h: s.nodes},
		{Method: "GET", Pattern: "/api/workflows/{task_id}/topology/edges", Read: readEdges, h: s.edges},
		{Method: "GET", Pattern: "/api/workflows/{task_id}/nodes", Read: readDetails, h: s.details},
		{Method: "GET", Pattern: "/api/workflows/{task_id}/node-detail", Read: readNode, h: s.node},
		{Method: "GET", Pattern: "/login", Public: true, HTML: true, h: s.loginPage},
		{Method: "POST", Pattern: "/login", Public: true, HTML: true, h: s.login},
		{Method: "POST", Pattern: "/logout", Public: true, HTML: true, h: s.logout},
		{Method: "GET", Pattern: "/assets/graph.css", Public: true, h: s.asset},
		{Method: "GET", Pattern: "/tasks", HTML: true, h: s.tasksPage},
		{Method: "GET", Pattern: "/tasks/{task_id}", HTML: true, h: s.taskPage},
		{Method: "GET", Pattern: "/tasks/{task_id}/graph", HTML: true, Read: readGraph, h: s.graphPage},
		{Method: "GET", Pattern: "/tasks/{task_id}/graph/node", HTML: true, h: s.nodePage},
		{Method: "GET", Pattern: "/tasks/{task_id}/graph/layer", HTML: true, h: s.layerPage},
		{Method: "GET", Pattern: "/tasks/{task_id}/graph/map-items", HTML: true, h: s.mapItemsPage},
		{Method: "GET", Pattern: "/tasks/{task_id}/cancel", HTML: true, h: s.confirmPage("cancel")},
		{Method: "POST", Pattern: "/tasks/{task_id}/cancel", HTML: true, h: s.actionPost("cancel")},
		{Method: "GET", Pattern: "/tasks/{task_id}/retry", HTML: true, h: s.confirmPage("retry")},
		{Method: "POST", Pattern: "/tasks/{task_id}/retry", HTML: true, h: s.actionPost("retry")},
	}, s.routesOfEnqueue()...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	// since, when set, is when the handler started: the response's
	// Server-Timing header says how long it took until its header was
	// written (a page is rendered whole before that; see timingHeader).
	since time.Time
}

func (w *statusWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote, w.code = true, code
	if !w.since.IsZero() {
		w.Header().Set("Server-Timing", timingHeader(time.Since(w.since)))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// timingHeader is a signed-in page's Server-Timing header: the
// handler's time in milliseconds (a browser shows it in the
// navigation's serverTiming, which the goal tests read).
func timingHeader(d time.Duration) string {
	return "handler;dur=" + strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}

// wrap authenticates (never logging the token) and logs the request.
func (s *Server) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		principal := ""
		switch {
		case rt.Public:
		case rt.HTML:
			sw.since = start
			if principal = s.browserPrincipal(r); principal == "" {
				sw.since = time.Time{} // a redirect to the sign-in page says nothing
				http.Redirect(sw, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				s.log.Info("request", "method", r.Method, "route", rt.Pattern, "status", sw.code, "principal", "", "ms", time.Since(start).Milliseconds())
				return
			}
		default:
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if ok {
				principal = s.tokens.Principal(strings.TrimSpace(tok))
			}
			if principal == "" {
				sw.Header().Set("WWW-Authenticate", `Bearer realm="rayflow"`)
				writeJSON(sw, http.StatusUnauthorized, gread.ErrorBody{Code: gread.ErrorCodeAccessDenied, Message: "a valid bearer token is required"})
				s.log.Info("request", "method", r.Method, "route", rt.Pattern, "status", sw.code, "principal", "", "ms", time.Since(start).Milliseconds())
				return
			}
		}
		rt.h(sw, r, principal)
		if rt.Read != "" {
			s.metrics.observe(rt.Read, start)
		}
		s.log.Info("request", "method", r.Method, "route", rt.Pattern, "status", sw.code, "principal", principal, "ms", time.Since(start).Milliseconds())
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}

// HTTPStatus maps a read error code to its HTTP status (docs/contracts.md#reads-cursors-and-error-codes).
func HTTPStatus(code gread.ErrorCode) int {
	switch code {
	case gread.ErrorCodeInvalidArgument, gread.ErrorCodeInvalidCursor:
		return http.StatusBadRequest
	case gread.ErrorCodeAccessDenied:
		return http.StatusForbidden
	case gread.ErrorCodeNotFound:
		return http.StatusNotFound
	case gread.ErrorCodeCursorMismatch, gread.ErrorCodeMissing:
		return http.StatusConflict
	case gread.ErrorCodeCorrupt:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var re *reader.Error
	if errors.As(err, &re) {
		msg := re.Message
		if len(msg) > 2048 {
			msg = msg[:2048]
			for !utf8.ValidString(msg) {
				msg = msg[:len(msg)-1]
			}
		}
		writeJSON(w, HTTPStatus(re.Code), gread.ErrorBody{Code: re.Code, Message: msg})
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	if storeUnavailable(err) {
		s.log.Warn("request: database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"code": CodeUnavailable, "message": "the database is unavailable; retry later"})
		return
	}
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"code": "INTERNAL", "message": "internal error"})
}

// CodeUnavailable is the error code of an API request that PostgreSQL
// could not serve because it cannot be reached (503 with Retry-After, as
// /readyz answers 503 "unavailable" then); serve/openapi.json lists it.
const CodeUnavailable = "UNAVAILABLE"

// RetryAfterSeconds is the Retry-After of a 503 UNAVAILABLE answer.
const RetryAfterSeconds = 5

// storeUnavailable reports whether err says PostgreSQL cannot be reached:
// no connection could be made (the pool cannot acquire one), the server
// ended or refused the connection (SQLSTATE class 08, 57P01–57P03, 53300
// too many connections), or the connection broke. Other database errors
// stay 500 INTERNAL.
func storeUnavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ne *net.OpError
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

func invalid(format string, args ...any) error {
	return &reader.Error{Code: gread.ErrorCodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) livez(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ string) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		s.log.Warn("readiness: database unreachable", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// intParam parses an optional integer query parameter (0 when absent).
func intParam(r *http.Request, name string, min int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, invalid("%s must be an integer of at least %d", name, min)
	}
	return n, nil
}

func (s *Server) pageRequest(r *http.Request) (reader.PageRequest, error) {
	attempt, err := intParam(r, "attempt_number", 1)
	if err != nil {
		return reader.PageRequest{}, err
	}
	limit, err := intParam(r, "limit", 1)
	if err != nil {
		return reader.PageRequest{}, err
	}
	if limit > 1<<20 {
		limit = 1 << 20 // clamped to 256 by the service
	}
	q := r.URL.Query()
	return reader.PageRequest{TaskID: r.PathValue("task_id"), Attempt: attempt, Limit: int(limit), Cursor: q.Get("cursor"), State: q.Get("state")}, nil
}

// expiredStatus is 410 for an EXPIRED publication, else 200.
func expiredStatus(a summary.DetailAvailability) int {
	if a == summary.DetailAvailabilityExpired {
		return http.StatusGone
	}
	return http.StatusOK
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request, principal string) {
	attempt, err := intParam(r, "attempt_number", 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.reads.Summary(r.Context(), principal, r.PathValue("task_id"), attempt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) nodes(w http.ResponseWriter, r *http.Request, principal string) {
	req, err := s.pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.reads.TopologyNodes(r.Context(), principal, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, expiredStatus(out.Availability), out)
}

func (s *Server) edges(w http.ResponseWriter, r *http.Request, principal string) {
	req, err := s.pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.reads.TopologyEdges(r.Context(), principal, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, expiredStatus(out.Availability), out)
}

func (s *Server) details(w http.ResponseWriter, r *http.Request, principal string) {
	req, err := s.pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.reads.NodeDetails(r.Context(), principal, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, expiredStatus(out.Availability), out)
}

func (s *Server) node(w http.ResponseWriter, r *http.Request, principal string) {
	attempt, err := intParam(r, "attempt_number", 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.reads.Node(r.Context(), principal, r.PathValue("task_id"), attempt, r.URL.Query().Get("node_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, expiredStatus(out.Availability), out)
}
