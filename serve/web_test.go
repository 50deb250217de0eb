package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/net/html"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// dom is a parsed page.
type dom struct{ root *html.Node }

func parse(t *testing.T, body []byte) dom {
	t.Helper()
	n, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return dom{n}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// all returns the elements named tag (any tag if "") for which keep holds.
func (d dom) all(tag string, keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) && (keep == nil || keep(n)) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d.root)
	return out
}

func (d dom) byID(id string) *html.Node {
	if ns := d.all("", func(n *html.Node) bool { return attr(n, "id") == id }); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// boxes are the graph's drawn links (nodes and collapsed groups).
func (d dom) boxes() []*html.Node {
	return d.all("a", func(n *html.Node) bool { return attr(n, "data-node-id") != "" })
}

// signInCookie signs principal in through the form and returns the
// session cookie.
func signInCookie(t *testing.T, s *Server, principal string) *http.Cookie {
	t.Helper()
	req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tokensOf[principal]}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	cs := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cs) != 1 || cs[0].Name != SessionCookie {
		t.Fatalf("sign-in as %s: %d %v", principal, w.Code, w.Header())
	}
	return cs[0]
}

// get fetches a page as principal through a session cookie.
func (e *env) get(t *testing.T, principal, target string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.AddCookie(signInCookie(t, e.s, principal))
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	return w.Code, w.Header(), w.Body.Bytes()
}

// shaped publishes a 20-node graph: n0 → n1..n15 (a layer wider than
// WideLayer) → n16 → n17 → n18 → n19, a bounded map.
func shaped(c *pgstoretest.Chain, final bool) *progress.Publication {
	p := c.Pub(true, final)
	var edges []topology.Edge
	for i := 1; i <= 15; i++ {
		edges = append(edges, topology.Edge{Source: pgstoretest.NodeID(0), Target: pgstoretest.NodeID(i)},
			topology.Edge{Source: pgstoretest.NodeID(i), Target: pgstoretest.NodeID(16)})
	}
	for i := 16; i < 19; i++ {
		edges = append(edges, topology.Edge{Source: pgstoretest.NodeID(i), Target: pgstoretest.NodeID(i + 1)})
	}
	p.Edges = edges
	p.Summary.EdgeCounts.Discovered, p.Summary.EdgeCounts.RetainedTopology = int64(len(edges)), int64(len(edges))
	p.Nodes[19].Kind = topology.NodeKindMap
	ten := int64(10)
	f := &detail.NodeFanout{MaxItems: &ten, SubmittedItems: 6, CompletedItems: 4, InFlightItems: 2}
	if final {
		f = &detail.NodeFanout{MaxItems: &ten, SubmittedItems: 10, CompletedItems: 10, InputExhausted: true}
	}
	p.Details[19].Fanout = f
	return p
}

func newShaped(t *testing.T) (*env, *pgstoretest.Chain) {
	e := newEnv(t, 1)
	e.taskID, e.c = publishShaped(t, e.pool)
	return e, e.c
}

// publishShaped publishes a new task's shaped run of 20 nodes (node 3
// FAILED, 16 and 19 RUNNING, the rest before 16 SUCCEEDED) and returns
// the task's id and its chain.
func publishShaped(t *testing.T, pool *pgxpool.Pool) (string, *pgstoretest.Chain) {
	t.Helper()
	taskID, id := pgstoretest.NewTask(t, pool, "chain")
	c := pgstoretest.NewChain(id, 20)
	for i := range 16 {
		c.States[i] = detail.NodeStateSucceeded
	}
	c.States[3] = detail.NodeStateFailed
	c.States[16], c.States[19] = detail.NodeStateRunning, detail.NodeStateRunning
	c.Publish(t, pool, shaped(c, false))
	return taskID, c
}

func TestGraphPageLive(t *testing.T) {
	e, _ := newShaped(t)
	base := "/tasks/" + e.taskID
	code, h, body := e.get(t, "chain", base+"/graph")
	if code != 200 {
		t.Fatalf("graph: %d %s", code, body)
	}
	d := parse(t, body)
	// A live page's one script runs by the response's nonce, nothing else.
	scripts := d.all("script", nil)
	if csp := h.Get("Content-Security-Policy"); len(scripts) != 1 || !strings.Contains(csp, "default-src 'none'") ||
		!strings.HasSuffix(csp, "; script-src 'nonce-"+attr(scripts[0], "nonce")+"'") || len(attr(scripts[0], "nonce")) < 20 {
		t.Errorf("CSP = %q, %d scripts", csp, len(scripts))
	}
	if n := refreshes(d); n != 1 {
		t.Errorf("a live run's page has %d refreshes, want 1", n)
	}
	if got := text(d.byID("run-state")); got != "RUNNING" {
		t.Errorf("run state %q", got)
	}
	bs := d.boxes()
	// n0, 11 of the 15-wide layer and its group of 4, n16..n19.
	if len(bs) != 1+11+1+4 {
		t.Fatalf("%d boxes, want 17", len(bs))
	}
	states := map[string]int{}
	for _, b := range bs {
		href, aria, st := attr(b, "href"), attr(b, "aria-label"), attr(b, "data-state")
		if !strings.HasPrefix(href, base+"/graph/") || aria == "" {
			t.Errorf("box %s: href %q aria %q", attr(b, "data-node-id"), href, aria)
		}
		states[st]++
		if st != "GROUP" && !strings.Contains(text(b), st) {
			t.Errorf("box %s does not say its state %s: %q", attr(b, "data-node-id"), st, text(b))
		}
		if st != "GROUP" && len(d.all("", func(n *html.Node) bool { return isDescendant(n, b) && strings.Contains(attr(n, "class"), "glyph") })) == 0 {
			t.Errorf("box %s has no state shape", attr(b, "data-node-id"))
		}
	}
	if states["SUCCEEDED"] != 11 || states["FAILED"] != 1 || states["RUNNING"] != 2 || states["PENDING"] != 2 || states["GROUP"] != 1 {
		t.Errorf("states drawn: %v", states)
	}
	var mp, grp *html.Node
	for _, b := range bs {
		switch attr(b, "data-node-id") {
		case pgstoretest.NodeID(19):
			mp = b
		case "layer-1":
			grp = b
		}
	}
	if mp == nil || !strings.Contains(attr(mp, "aria-label"), "items at most 4 pending, 2 running, 4 succeeded, 0 failed") {
		t.Fatalf("map box: %v", mp)
	}
	if grp == nil || !strings.Contains(attr(grp, "aria-label"), "4 more nodes of layer 1: 0 pending, 0 running, 4 succeeded") {
		t.Fatalf("group box: %v", grp)
	}
	legend := d.all("ul", func(n *html.Node) bool { return attr(n, "class") == "legend" })
	if len(legend) != 1 {
		t.Fatal("no legend")
	}
	for _, s := range []string{"PENDING", "RUNNING", "SUCCEEDED", "FAILED"} {
		if !strings.Contains(text(legend[0]), s) {
			t.Errorf("legend lacks %s", s)
		}
	}
	// The map's item page: its counts by state.
	code, _, body = e.get(t, "chain", attr(mp, "href"))
	if code != 200 {
		t.Fatalf("map page: %d %s", code, body)
	}
	items := text(parse(t, body).byID("map-items"))
	for _, want := range []string{"pending4", "running2", "succeeded4", "failed0"} {
		if !strings.Contains(strings.ReplaceAll(items, "\n", ""), want) {
			t.Errorf("map items %q lack %s", items, want)
		}
	}
	// The group's list: the whole layer, linked.
	code, _, body = e.get(t, "chain", attr(grp, "href"))
	rows := parse(t, body).all("tr", nil)
	if code != 200 || len(rows) != 1+15 {
		t.Errorf("layer page: %d, %d rows", code, len(rows))
	}
	// Windows: one window, no previous/next links.
	if d.byID("next-window") != nil || d.byID("prev-window") != nil {
		t.Error("a 20-node graph has window links")
	}
}

// refreshes counts a page's live refreshes: the pause button of its
// reload script, and the <noscript> refresh without script (parsed, as a
// browser with script does, as text).
func refreshes(d dom) int {
	n := 0
	for _, ns := range d.all("noscript", nil) {
		if strings.Contains(text(ns), `http-equiv="refresh"`) && d.byID("live-toggle") != nil {
			n++
		}
	}
	return n
}

func isDescendant(n, of *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == of {
			return true
		}
	}
	return false
}

// TestGraphPageFinishedAndAttempts: a finished run does not refresh; a
// retried task's graph switches between its attempts.
func TestGraphPageFinishedAndAttempts(t *testing.T) {
	e, c := newShaped(t)
	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	c.Publish(t, e.pool, shaped(c, true))
	base := "/tasks/" + e.taskID
	code, _, body := e.get(t, "chain", base+"/graph")
	d := parse(t, body)
	if code != 200 || text(d.byID("run-state")) != "SUCCEEDED" || refreshes(d) != 0 || len(d.all("script", nil)) != 0 {
		t.Fatalf("finished graph: %d state %q", code, text(d.byID("run-state")))
	}
	if n := len(d.boxes()); n != 17 {
		t.Errorf("%d boxes", n)
	}
	if nav := d.all("nav", func(n *html.Node) bool { return attr(n, "class") == "attempts" }); len(nav) != 0 {
		t.Error("an attempt switcher for a task of one attempt")
	}
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_task_attempts (task_pk, attempt_number, execution_generation, workflow_run_id, state, finished_at, workflow_progress_summary_json)
 SELECT id, attempt_number, execution_generation, workflow_run_id, 'FAILED', now(), workflow_progress_summary_json FROM rayflow_tasks WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET attempt_number = 2, execution_generation = 1, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	code, _, body = e.get(t, "chain", base+"/graph")
	d = parse(t, body)
	links := d.all("a", func(n *html.Node) bool { return n.Parent != nil && attr(n.Parent, "class") == "attempts" })
	if code != 200 || len(links) != 2 || attr(links[1], "aria-current") != "page" || text(d.byID("run-state")) != "NOT_REPORTED" {
		t.Fatalf("attempt 2: %d, %d switcher links, state %q", code, len(links), text(d.byID("run-state")))
	}
	if refreshes(d) != 1 {
		t.Error("attempt 2 (running, nothing published yet) does not refresh")
	}
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'FAILED', finished_at = now() WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	if _, _, body := e.get(t, "chain", base+"/graph"); refreshes(parse(t, body)) != 0 {
		t.Error("a task that ended without publishing still refreshes")
	}
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET state = 'RUNNING', finished_at = NULL WHERE task_id = $1`, e.taskID); err != nil {
		t.Fatal(err)
	}
	code, _, body = e.get(t, "chain", attr(links[0], "href"))
	d = parse(t, body)
	if code != 200 || len(d.boxes()) != 17 || text(d.byID("run-state")) != "SUCCEEDED" {
		t.Errorf("attempt 1 through the switcher: %d, %d boxes", code, len(d.boxes()))
	}
	// The task page: state, attempts, a link to the graph.
	code, _, body = e.get(t, "chain", base)
	d = parse(t, body)
	if code != 200 || text(d.byID("task-state")) != "RUNNING" || attr(d.byID("graph-link"), "href") != base+"/graph" {
		t.Errorf("task page: %d %q", code, body)
	}
	if rows := d.all("tr", nil); len(rows) != 1+2 {
		t.Errorf("task page: %d attempt rows, want 2", len(rows)-1)
	}
}

// TestLogin: the sign-in form sets an HttpOnly SameSite=Strict cookie
// for a known token only, refuses a cross-site post, keeps next on site.
func TestLogin(t *testing.T) {
	s := lazyServer(t)
	post := func(origin, token, next string, site ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}, "next": {next}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for _, v := range site {
			req.Header.Set("Sec-Fetch-Site", v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	w := post("http://example.com", tokensOf["chain"], "/tasks/x/graph")
	cs := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tasks/x/graph" || len(cs) != 1 {
		t.Fatalf("sign-in: %d %v", w.Code, w.Header())
	}
	if c := cs[0]; c.Name != SessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != int(SessionTTL.Seconds()) {
		t.Errorf("cookie %+v", c)
	}
	for name, w := range map[string]*httptest.ResponseRecorder{
		"unknown token":                post("", "not-a-token-at-all-xx", "/"),
		"cross-site":                   post("https://evil.example", tokensOf["chain"], "/"),
		"null origin":                  post("null", tokensOf["chain"], "/"),
		"cross-site by Sec-Fetch-Site": post("http://example.com", tokensOf["chain"], "/", "cross-site"),
		"same-site by Sec-Fetch-Site":  post("http://example.com", tokensOf["chain"], "/", "same-site"),
	} {
		if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
			t.Errorf("%s: %d %v", name, w.Code, w.Header())
		}
		if strings.Contains(w.Body.String(), tokensOf["chain"]) {
			t.Errorf("%s: the page echoes the token", name)
		}
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example", "/\\evil.example", "x"} {
		if w := post("", tokensOf["chain"], next); w.Header().Get("Location") != "/" {
			t.Errorf("next %q → %q", next, w.Header().Get("Location"))
		}
	}
	w = post("", tokensOf["chain"], "/")
	req := httptest.NewRequest("POST", "/logout", nil)
	req.AddCookie(w.Result().Cookies()[0])
	lw := httptest.NewRecorder()
	s.ServeHTTP(lw, req)
	if c := lw.Result().Cookies(); lw.Code != http.StatusSeeOther || len(c) != 1 || c[0].MaxAge >= 0 {
		t.Errorf("sign-out: %d %v", lw.Code, c)
	}
}

// TestGraph25k: a 25,000-node chain renders its first window of at most
// WindowNodes boxes with next-window links, in bounded time.
func TestGraph25k(t *testing.T) {
	e := newEnv(t, 25_000)
	base := "/tasks/" + e.taskID + "/graph"
	start := time.Now()
	code, _, body := e.get(t, "chain", base)
	first := time.Since(start)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	d := parse(t, body)
	elems := len(d.all("", nil))
	t.Logf("25,000-node chain: first window rendered in %v, %d bytes, %d elements", first, len(body), elems)
	if n := len(d.boxes()); n != WindowNodes {
		t.Errorf("%d boxes, want %d", n, WindowNodes)
	}
	if elems > 10*WindowNodes {
		t.Errorf("%d elements in the first window", elems)
	}
	if d.byID("prev-window") != nil || attr(d.byID("next-window"), "href") != base+"?attempt_number=1&window=2" {
		t.Error("window links of the first window")
	}
	if first > 30*time.Second {
		t.Errorf("first window took %v", first)
	}
	start = time.Now()
	code, _, _ = e.get(t, "chain", base)
	t.Logf("25,000-node chain: the same window again (topology cached; sparse: the 400 drawn states read node by node) in %v", time.Since(start))
	if code != 200 {
		t.Fatal(code)
	}
	e.c.States[0] = detail.NodeStateRunning
	e.c.Publish(t, e.pool, e.c.Pub(false, false))
	start = time.Now()
	code, _, body = e.get(t, "chain", base)
	t.Logf("25,000-node chain: after a new detail revision in %v", time.Since(start))
	if code != 200 || attr(parse(t, body).boxes()[0], "data-state") != "RUNNING" {
		t.Fatalf("after a new revision: %d", code)
	}
	start = time.Now()
	code, _, body = e.get(t, "chain", base+"?window=63")
	d = parse(t, body)
	t.Logf("25,000-node chain: last window rendered in %v", time.Since(start))
	if code != 200 || len(d.boxes()) != 25_000-62*WindowNodes || d.byID("next-window") != nil || d.byID("prev-window") == nil {
		t.Errorf("last window: %d, %d boxes", code, len(d.boxes()))
	}
}

// TestSparseDetailBound: up to SparseDetail retained details the page
// walks every detail page; one more, it reads the drawn nodes one by one.
// Either way the drawn states are the published ones.
func TestSparseDetailBound(t *testing.T) {
	for _, n := range []int{SparseDetail, SparseDetail + 1} {
		e := newEnv(t, n)
		g, err := loadGraph(context.Background(), e.s.reads, &e.s.graphs, "chain", e.taskID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if g.Sparse != (n > SparseDetail) {
			t.Errorf("%d nodes: sparse %v", n, g.Sparse)
		}
		_, _, body := e.get(t, "chain", "/tasks/"+e.taskID+"/graph")
		for i, b := range parse(t, body).boxes() {
			want := "PENDING"
			if i%2 == 0 { // newEnv: every even node succeeded
				want = "SUCCEEDED"
			}
			if got := attr(b, "data-state"); got != want {
				t.Fatalf("%d nodes: box %d (%s) is %s, want %s", n, i, attr(b, "data-node-id"), got, want)
			}
		}
	}
}

// TestSafeNext: a post-login redirect stays a path of this origin; every
// hostile form falls back to "/", whether posted or echoed into the form.
func TestSafeNext(t *testing.T) {
	hostile := []string{
		"", "x", "tasks/x", "//evil.example", "//evil.example/x", "///evil.example", "/\\evil.example", "\\\\evil.example",
		"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "\t//evil.example", "/\x00/evil.example", "/\x7f/evil.example",
		"/\u0085/evil.example", "/tasks\\..\\x", "https://evil.example", "https:evil.example", "http://evil.example/x",
		"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", " /x", "/%2F%2Fevil.example", "/%2f/evil.example",
		"/%5Cevil.example", "/%09/evil.example", "/%0a/evil.example", "/%0D%0A/evil.example", "/%00", "/%zz", "/\xff",
		"/" + strings.Repeat("a", 2048),
	}
	for _, next := range hostile {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	good := []string{"/", "/tasks/x/graph?a=b", "/tasks/00000000-0000-4000-8000-000000000000/graph?attempt_number=1&window=2",
		"/tasks/x/graph/node?attempt_number=1&node_id=0.1", "/tasks/x#top", "/tasks/x/graph?next=%2F%2Fy", "/" + strings.Repeat("a", 2047)}
	for _, next := range good {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
	s := lazyServer(t)
	for _, next := range []string{"/\t/evil.example", "/\r\n/evil.example", "/%09/evil.example", "//evil.example"} {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tokensOf["chain"]}, "next": {next}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
			t.Errorf("POST /login next=%q: %d Location %q", next, w.Code, w.Header().Get("Location"))
		}
		w = httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/login?next="+url.QueryEscape(next), nil))
		in := parse(t, w.Body.Bytes()).all("input", func(n *html.Node) bool { return attr(n, "name") == "next" })
		if w.Code != 200 || len(in) != 1 || attr(in[0], "value") != "/" {
			t.Errorf("GET /login?next=%q: %d, the form's next is not /", next, w.Code)
		}
	}
}

// TestSessionCookie: the sign-in cookie is a server-side session id, not
// the token. A tampered, unknown, expired or signed-out cookie is refused
// (a copy taken before sign-out does not sign in after it), and so is a
// session whose token no longer names its principal.
func TestSessionCookie(t *testing.T) {
	s := lazyServer(t)
	page := "/tasks/" + path("{task_id}")
	// signedIn: whether the cookie authenticates a page request (one the
	// server refuses sends the browser to sign in before any database read).
	signedIn := func(c *http.Cookie) bool {
		t.Helper()
		req := httptest.NewRequest("GET", page, nil)
		req.AddCookie(c)
		return s.browserPrincipal(req) != ""
	}
	c := signInCookie(t, s, "chain")
	for _, tok := range tokensOf {
		if strings.Contains(c.Value, tok) || strings.Contains(tok, c.Value) {
			t.Fatalf("the cookie %q holds a token", c.Value)
		}
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Errorf("cookie flags %+v", c)
	}
	if !signedIn(c) {
		t.Fatal("a fresh session cookie is refused")
	}
	if c2 := signInCookie(t, s, "chain"); c2.Value == c.Value {
		t.Error("two sign-ins share a session id")
	}
	// Tampered: every single-character change, a cut and an extension.
	tampered := []string{"", c.Value[:len(c.Value)-1], c.Value + "A", tokensOf["chain"], strings.ToUpper(c.Value)}
	for i := range c.Value {
		b := []byte(c.Value)
		b[i] ^= 1
		tampered = append(tampered, string(b))
	}
	for _, v := range tampered {
		if v != c.Value && signedIn(&http.Cookie{Name: SessionCookie, Value: v}) {
			t.Errorf("tampered cookie %q signs in", v)
		}
	}
	// Expiry: just before SessionTTL it holds; at SessionTTL it is gone.
	start := time.Now()
	s.sessions.now = func() time.Time { return start }
	exp := signInCookie(t, s, "chain")
	s.sessions.now = func() time.Time { return start.Add(SessionTTL - time.Second) }
	if !signedIn(exp) {
		t.Error("a session one second before its expiry is refused")
	}
	s.sessions.now = func() time.Time { return start.Add(SessionTTL) }
	if signedIn(exp) {
		t.Error("an expired session is accepted")
	}
	s.sessions.now = time.Now
	// Sign-out ends the session: replaying the captured cookie is refused.
	req := httptest.NewRequest("POST", "/logout", nil)
	req.AddCookie(c)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", w.Code)
	}
	if signedIn(c) {
		t.Error("the cookie captured before sign-out still signs in")
	}
	req = httptest.NewRequest("GET", page, nil)
	req.AddCookie(c)
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login?") {
		t.Errorf("a page with the signed-out cookie: %d %v", w.Code, w.Header())
	}
	// A token dropped from the tokens: its sessions end with it.
	c = signInCookie(t, s, "chain")
	other := signInCookie(t, s, "admin")
	tk, err := ParseTokens(strings.NewReader("admin admin-token-0123456789 *\nchain chain-token-changed-012345 chain\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.tokens = tk
	if signedIn(c) || !signedIn(other) {
		t.Errorf("after the chain token changed: chain's session %v, admin's %v", signedIn(c), signedIn(other))
	}
}

// TestSessionBound: MaxSessions sessions are all kept; one more ends the
// oldest only.
func TestSessionBound(t *testing.T) {
	ss := newSessions()
	start := time.Now()
	var ids []string
	for i := range MaxSessions {
		ss.now = func() time.Time { return start.Add(time.Duration(i) * time.Millisecond) }
		ids = append(ids, ss.start("p", [32]byte{}))
	}
	if ss.len() != MaxSessions {
		t.Fatalf("%d sessions, want %d", ss.len(), MaxSessions)
	}
	for _, id := range []string{ids[0], ids[MaxSessions-1]} {
		if _, ok := ss.lookup(id); !ok {
			t.Fatal("a session at the cap is gone")
		}
	}
	last := ss.start("p", [32]byte{})
	if ss.len() != MaxSessions {
		t.Errorf("%d sessions after one over the cap", ss.len())
	}
	if _, ok := ss.lookup(ids[0]); ok {
		t.Error("the oldest session outlived the cap")
	}
	for _, id := range []string{ids[1], ids[MaxSessions-1], last} {
		if _, ok := ss.lookup(id); !ok {
			t.Error("a newer session is gone")
		}
	}
}

// TestServerTiming: a signed-in page's response says how long its
// handler took in a Server-Timing header ("handler;dur=" milliseconds);
// a redirect to the sign-in page, the public pages and the JSON routes
// send none.
func TestServerTiming(t *testing.T) {
	e := newEnv(t, 3)
	header := regexp.MustCompile(`^handler;dur=[0-9]+\.[0-9]$`)
	for _, tc := range []struct {
		name, principal, target string
		bearer, timed           bool
	}{
		{"tasks page", "chain", "/tasks", false, true},
		{"task page", "chain", "/tasks/" + e.taskID, false, true},
		{"graph page", "chain", "/tasks/" + e.taskID + "/graph?view=failures", false, true},
		{"error page", "chain", "/tasks/00000000-0000-4000-8000-000000000000", false, true},
		{"page by bearer token", "chain", "/tasks", true, true},
		{"signed out", "", "/tasks", false, false},
		{"sign-in page", "", "/login", false, false},
		{"JSON route", "chain", "/api/tasks", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.target, nil)
			switch {
			case tc.principal != "" && tc.bearer:
				req.Header.Set("Authorization", "Bearer "+tokensOf[tc.principal])
			case tc.principal != "":
				req.AddCookie(signInCookie(t, e.s, tc.principal))
			}
			w := httptest.NewRecorder()
			e.s.ServeHTTP(w, req)
			got := w.Header().Values("Server-Timing")
			if tc.timed && (len(got) != 1 || !header.MatchString(got[0])) || !tc.timed && len(got) != 0 {
				t.Errorf("%d: Server-Timing %q", w.Code, got)
			}
		})
	}
}

func TestTimingHeader(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "handler;dur=0.0"},
		{1234 * time.Microsecond, "handler;dur=1.2"},
		{1250*time.Millisecond + 60*time.Microsecond, "handler;dur=1250.1"},
	} {
		if got := timingHeader(tc.d); got != tc.want {
			t.Errorf("timingHeader(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
