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

// navTimes are the shown page's times from navigation start to the end
// of its response (served) and to its first contentful paint (rendered;
// the load event where Chromium reports no paint).
func navTimes(t *testing.T, ctx context.Context) (served, rendered time.Duration) {
	t.Helper()
	ms := eval[[]float64](t, ctx, `(() => {
  const n = performance.getEntriesByType('navigation')[0];
  const p = performance.getEntriesByName('first-contentful-paint')[0];
  return [n.responseEnd, p ? p.startTime : (n.loadEventEnd || n.domContentLoadedEventEnd)];
})()`)
	return time.Duration(ms[0] * float64(time.Millisecond)), time.Duration(ms[1] * float64(time.Millisecond))
}

// bestNav navigates to target three times, waiting for the element of id
// visible, and returns the fastest served and rendered times.
func bestNav(t *testing.T, ctx context.Context, url, visible string) (served, rendered time.Duration) {
	t.Helper()
	served, rendered = time.Duration(1<<62), time.Duration(1<<62)
	for range 3 {
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID(visible))); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		s, r := navTimes(t, ctx)
		served, rendered = min(served, s), min(rendered, r)
	}
	return served, rendered
}

// quietMachine reports whether this machine's one-minute load average
// per CPU is at most 1 (/proc/loadavg), so that wall-clock goals mean
// something; on a busier machine the goal tests log their times and say
// why they do not check them. Where the load is unknown it is quiet.
func quietMachine(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return true
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return true
	}
	if per := load / float64(runtime.NumCPU()); per > 1 {
		t.Logf("load average %.1f on %d CPUs: the times below are logged, not checked against the goals", load, runtime.NumCPU())
		return false
	}
	return true
}

// TestBrowserTasksGoal: in headless Chromium on this machine, the tasks
// page over 100,000 tasks, for a principal who sees them all, is served
// (navigation start to the response's end, the fastest of three) within
// 100 ms, and with any filter within 200 ms (checked on a quiet machine).
func TestBrowserTasksGoal(t *testing.T) {
	e := newEnv(t, 3)
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO rayflow_tasks (task_id, flow_name, queue_name, state, input_json,
 claimed_by, workflow_run_id, started_at, enqueued_at)
 SELECT gen_random_uuid(), 'flow' || (g / 7 % 10), (ARRAY['default', 'gpu', 'batch'])[1 + g % 3],
  (ARRAY['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'FAILED', 'QUEUED', 'RUNNING', 'CANCELLED'])[1 + g % 7], '{}',
  'w', gen_random_uuid(), now(), now() - make_interval(mins => g)
 FROM generate_series(1, 100000) g; ANALYZE rayflow_tasks`); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	ctx := browser(t)
	signIn(t, ctx, srv.URL, "/tasks", "admin", "tasks")
	now := time.Now().UTC()
	check := quietMachine(t)
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
		served, rendered := bestNav(t, ctx, srv.URL+c.target, "tasks")
		t.Logf("%-58s served in %v, first paint %v (goal: served in %v)", c.target, served.Round(time.Millisecond), rendered.Round(time.Millisecond), c.goal)
		if check && served > c.goal {
			t.Errorf("%s: served in %v, over the goal of %v", c.target, served, c.goal)
		}
	}
}

// TestBrowserFailures25k: in headless Chromium on this machine, the
// failures view of a 25,000-node run failing deep in its chain (node
// 15,000; the details of the last nodes are past the store's byte bound)
// renders (navigation start to first contentful paint, the
// fastest of three) within 1 s (checked on a quiet machine), at the
// failure's window, next to the graph view's first window.
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
	_, graphRendered := bestNav(t, ctx, srv.URL+graph, "graph")
	served, rendered := bestNav(t, ctx, srv.URL+graph+"?view=failures", "failed-nodes")
	t.Logf("25,000 nodes: failures view served in %v, first paint %v (graph view: first paint %v)", served.Round(time.Millisecond), rendered.Round(time.Millisecond), graphRendered.Round(time.Millisecond))
	if quietMachine(t) && rendered > time.Second {
		t.Errorf("failures view: first paint %v, over the goal of 1s", rendered)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-state="FAILED"]').length`); n != 1 {
		t.Errorf("the failures view draws %d failed nodes", n)
	}
	if s := run(t, ctx, chromedp.Text(chromedp.ID("failures-summary"))); !strings.Contains(s, fmt.Sprintf("%d of 25000 nodes", bad+2)) {
		t.Errorf("failures summary %q", s)
	}
}
