// Package serve is rayflow serve's HTTP API (docs/serve.md#routes):
// task status, the executions list, cancel and retry of durable
// tasks, and the five authorized progress reads of serve/reader, behind
// bearer tokens with a per-flow allowlist; /livez and /readyz.
//
// Every route but the probes needs "Authorization: Bearer <token>"; a
// missing or unknown token is 401, a principal the allowlist denies is 403
// ACCESS_DENIED whether or not the task exists. Read errors map to HTTP as
// docs/contracts.md#reads-cursors-and-error-codes says (INVALID_ARGUMENT and INVALID_CURSOR 400,
// ACCESS_DENIED 403, NOT_FOUND 404, CURSOR_MISMATCH and MISSING 409,
// CORRUPT 503), and a page or node whose publication is EXPIRED (retired
// by a newer revision, or removed by retention) is served with 410 Gone.
// While PostgreSQL cannot be reached a JSON route answers 503 UNAVAILABLE
// with Retry-After (as /readyz answers 503); another failure is 500
// INTERNAL.
//
// The browser pages sign in at /login: the cookie holds a server-side
// session id, never the token (see session.go). /tasks lists tasks as GET
// /api/tasks does (list.go); a task page's Cancel and Retry post a
// confirmation form carrying the session's CSRF token (actions.go), in
// place where script runs (the task page's script in web/pages.html). The
// graph page's failures and timeline views are in views.go, a map's
// failed items page in mapitems.go.
package serve
