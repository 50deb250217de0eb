package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// axe-core (npm package axe-core, MPL-2.0), vendored by scripts/axe.sh
// into testdata/axe/ and pinned here by its digest.
const (
	axeVersion = "4.14.1"
	axeSHA256  = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
)

func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		t.Fatalf("axe-core is vendored by scripts/axe.sh: %v", err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != axeSHA256 {
		t.Fatalf("testdata/axe/axe.min.js is not axe-core %s as pinned (sha256 %x)", axeVersion, sum)
	}
	return string(b)
}

// axeViolations injects axe-core into the shown page (through the
// DevTools protocol: the pages' CSP allows no script of their own) and
// returns its serious and critical violations, one line each.
func axeViolations(t *testing.T, ctx context.Context, src string) []string {
	t.Helper()
	run(t, ctx, chromedp.Evaluate[bool](src+"\n;true"))
	return run(t, ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))`,
		chromedp.EvalAwaitPromise))
}

// TestBrowserAccessibility: axe-core reports no serious or critical
// violation on any page, every GET page of the server's route list
// included (a new page fails here until it is given a URL), signed out
// and signed in, with the graph's three views, a map's node page and
// failed items, a layer, a confirmation and an error page.
func TestBrowserAccessibility(t *testing.T) {
	ctx := browser(t)
	src := axeSource(t)
	e, items := mapItemsEnv(t)
	shapedID, _ := publishShaped(t, e.pool)
	srv := httptest.NewServer(e.s)
	defer srv.Close()

	graph := "/tasks/" + shapedID + "/graph"
	pages := map[string][]string{
		"/login":                           {"/login"},
		"/tasks":                           {"/tasks", "/tasks?state=FAILED&limit=1"},
		"/tasks/{task_id}":                 {"/tasks/" + e.taskID, "/tasks/" + shapedID, "/tasks/00000000-0000-4000-8000-000000000000"},
		"/tasks/{task_id}/graph":           {graph, graph + "?view=failures", graph + "?view=timeline", "/tasks/" + e.taskID + "/graph?attempt_number=1&view=failures"},
		"/tasks/{task_id}/graph/node":      {graph + "/node?attempt_number=1&node_id=" + pgstoretest.NodeID(19), graph + "/node?attempt_number=1&node_id=" + pgstoretest.NodeID(3)},
		"/tasks/{task_id}/graph/layer":     {graph + "/layer?attempt_number=1&layer=1"},
		"/tasks/{task_id}/graph/map-items": {items, items + "&limit=1"},
		"/tasks/{task_id}/cancel":          {"/tasks/" + shapedID + "/cancel"},
		"/tasks/{task_id}/retry":           {"/tasks/" + e.taskID + "/retry"},
	}
	for _, rt := range e.s.Routes() {
		if rt.HTML && rt.Method == "GET" && len(pages[rt.Pattern]) == 0 {
			t.Errorf("page %s has no URL to check", rt.Pattern)
		}
	}
	// Signed out: the sign-in page; then signed in through it.
	run(t, ctx, chromedp.Navigate(srv.URL+"/login"))
	if v := axeViolations(t, ctx, src); len(v) > 0 {
		t.Errorf("/login (signed out): %d serious or critical violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	signIn(t, ctx, srv.URL, "/tasks", "chain", "tasks")
	var patterns []string
	for p := range pages {
		patterns = append(patterns, p)
	}
	sort.Strings(patterns)
	checked := 0
	for _, p := range patterns {
		for _, u := range pages[p] {
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+u), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			if v := axeViolations(t, ctx, src); len(v) > 0 {
				t.Errorf("%s: %d serious or critical violations:\n%s", u, len(v), strings.Join(v, "\n"))
			}
			checked++
		}
	}
	t.Logf("axe-core %s: %d pages checked", axeVersion, checked+1)
}

// navTimes are a page's times: from navigation start to the end of its
// response (Served) and to its first contentful paint (Rendered; the
// load event where Chromium reports no paint), and the handler's own time
// as its Server-Timing header says (Server).
type navTimes struct{ Served, Rendered, Server time.Duration }

func (n navTimes) String() string {
	return fmt.Sprintf("served in %v (handler %v), first paint %v", n.Served.Round(time.Millisecond), n.Server.Round(100*time.Microsecond), n.Rendered.Round(time.Millisecond))
}

// shownTimes reads the shown page's navTimes; a page without its
// Server-Timing fails the test.
func shownTimes(t *testing.T, ctx context.Context) navTimes {
	t.Helper()
	ms := eval[[]float64](t, ctx, `(() => {
  const n = performance.getEntriesByType('navigation')[0];
  const p = performance.getEntriesByName('first-contentful-paint')[0];
  const h = n.serverTiming.find(e => e.name === 'handler');
  return [n.responseEnd, p ? p.startTime : (n.loadEventEnd || n.domContentLoadedEventEnd), h ? h.duration : -1];
})()`)
	if ms[2] < 0 {
		t.Fatal("the page has no Server-Timing handler time")
	}
	d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	return navTimes{Served: d(ms[0]), Rendered: d(ms[1]), Server: d(ms[2])}
}

// Goal attempts: a goal is about what a page costs, and a busy machine
// only adds to a time, so each time is the fastest of at least
// minGoalAttempts navigations, and of up to maxGoalAttempts while one
// is still over its goal.
const minGoalAttempts, maxGoalAttempts = 3, 20

// bestNav navigates to url, waiting for the element of id visible, and
// returns the fastest of each time and the navigations made: at least
// minGoalAttempts, more while met says the times are not yet within
// their goals, at most maxGoalAttempts.
func bestNav(t *testing.T, ctx context.Context, url, visible string, met func(navTimes) bool) (navTimes, int) {
	t.Helper()
	best := navTimes{time.Duration(1 << 62), time.Duration(1 << 62), time.Duration(1 << 62)}
	for n := 1; ; n++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID(visible))); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		m := shownTimes(t, ctx)
		best = navTimes{min(best.Served, m.Served), min(best.Rendered, m.Rendered), min(best.Server, m.Server)}
		if n >= maxGoalAttempts || n >= minGoalAttempts && met(best) {
			return best, n
		}
	}
}

// loadAverage is this machine's one-minute load average per CPU, for the
// goal tests' logs ("?" where unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f on %d CPUs", load, runtime.NumCPU())
}

// TestBrowserTasksGoal: in headless Chromium on this machine, the tasks
// page over 100,000 tasks, for a principal who sees them all, is served
// within 100 ms, and with any filter within 200 ms: both the handler's
// time (its Server-Timing) and navigation start to the response's end,
// each the fastest of bestNav's navigations, whatever the machine's load.
// TestTaskListIndexed checks that no filter's plan reads the whole task
// table.
func TestBrowserTasksGoal(t *testing.T) {
	e := newEnv(t, 3)
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, state, input_json,
 claimed_by, workflow_run_id, started_at, enqueued_at)
 SELECT gen_random_uuid(), 'flow' || (g / 7 % 10), (ARRAY['default', 'gpu', 'batch'])[1 + g % 3],
  (ARRAY['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'FAILED', 'QUEUED', 'RUNNING', 'CANCELLED'])[1 + g % 7], '{}',
  'w', gen_random_uuid(), now(), now() - make_interval(mins => g)
 FROM generate_series(1, 100000) g`); err != nil {
		t.Fatal(err)
	}
	// A table that took 100,000 inserts has been vacuumed by autovacuum in
	// steady state; vacuum it now, so that the counts' index-only scans do
	// not visit the heap for every row as they would right after the load.
	if _, err := e.pool.Exec(context.Background(), `VACUUM ANALYZE rayflow_tasks`); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	ctx := browser(t)
	signIn(t, ctx, srv.URL, "/tasks", "admin", "tasks")
	now := time.Now().UTC()
	t.Logf("load average %s", loadAverage())
	for _, c := range []struct {
		target string
		goal   time.Duration
	}{
		{"/tasks", 100 * time.Millisecond},
		{"/tasks?state=FAILED", 200 * time.Millisecond},
		{"/tasks?queue=gpu", 200 * time.Millisecond},
		{"/tasks?flow=flow3", 200 * time.Millisecond},
		{"/tasks?from=" + now.Add(-30*24*time.Hour).Format("2006-01-02T15:04") + "&to=" + now.Add(-29*24*time.Hour).Format("2006-01-02T15:04"), 200 * time.Millisecond},
		{"/tasks?state=QUEUED&queue=batch&flow=flow5", 200 * time.Millisecond},
	} {
		best, n := bestNav(t, ctx, srv.URL+c.target, "tasks", func(b navTimes) bool { return b.Served <= c.goal && b.Server <= c.goal })
		t.Logf("%-58s %v (goal: served in %v; best of %d)", c.target, best, c.goal, n)
		if best.Served > c.goal || best.Server > c.goal {
			t.Errorf("%s: %v, over the goal of %v (best of %d; load average %s)", c.target, best, c.goal, n, loadAverage())
		}
	}
}

// TestBrowserFailures25k: in headless Chromium on this machine, the
// failures view of a 25,000-node run failing deep in its chain (node
// 15,000; the details of the last nodes are past the store's byte bound)
// renders within 1 s, at the failure's window: both the handler's time
// (its Server-Timing) and navigation start to first contentful paint,
// each the fastest of bestNav's navigations, whatever the machine's load.
// The graph view's first window is timed next to it (logged).
func TestBrowserFailures25k(t *testing.T) {
	const bad = 15_000
	e := chainEnv(t, 25_000, false, func(c *pgstoretest.Chain) {
		for i := range bad {
			c.States[i] = detail.NodeStateSucceeded
		}
		c.States[bad] = detail.NodeStateFailed
	})
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	ctx := browser(t)
	graph := "/tasks/" + e.taskID + "/graph"
	signIn(t, ctx, srv.URL, graph, "chain", "run-state") // reads and caches the run's topology once
	graphView, _ := bestNav(t, ctx, srv.URL+graph, "graph", func(navTimes) bool { return true })
	best, n := bestNav(t, ctx, srv.URL+graph+"?view=failures", "failed-nodes", func(b navTimes) bool { return b.Rendered <= time.Second && b.Server <= time.Second })
	t.Logf("25,000 nodes: failures view %v (best of %d; goal: first paint in 1s); graph view %v; load average %s", best, n, graphView, loadAverage())
	if best.Rendered > time.Second || best.Server > time.Second {
		t.Errorf("failures view: %v, over the goal of 1s (best of %d; load average %s)", best, n, loadAverage())
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-state="FAILED"]').length`); n != 1 {
		t.Errorf("the failures view draws %d failed nodes", n)
	}
	if s := run(t, ctx, chromedp.Text(chromedp.ID("failures-summary"))); !strings.Contains(s, fmt.Sprintf("%d of 25000 nodes", bad+2)) {
		t.Errorf("failures summary %q", s)
	}
}
