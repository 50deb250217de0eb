package serve

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/serve/internal/chromium"
)

// browser starts a headless Chromium (Debian's; `make chromium` installs
// it) with a fresh profile, or skips when there is none.
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	path, err := chromium.Path()
	if err != nil {
		t.Skip(err)
	}
	opts := chromium.Options(path, t.TempDir(), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// run runs one action and fails the test on its error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[T](expr))
}

// signIn opens target, is sent to the sign-in form, signs in with the
// principal's token and lands on target, where the element with id
// landmark shows.
func signIn(t *testing.T, ctx context.Context, base, target, principal, landmark string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+target),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tokensOf[principal]),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID(landmark)),
	); err != nil {
		t.Fatal(err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("%s: the screenshot is not a PNG: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: screenshot %v", name, b)
	}
	t.Logf("%s: screenshot %v, %d bytes", name, img.Bounds(), len(buf))
	if dir := os.Getenv("RAYFLOW_SCREENSHOT_DIR"); dir != "" { // to look at; never committed
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestBrowserGraph loads a live and then a finished run's graph in a real
// headless Chromium: sign-in through the form, the DOM's node count,
// states and links, keyboard focus on the node links, screenshots.
func TestBrowserGraph(t *testing.T) {
	ctx := browser(t)
	e, c := newShaped(t)
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	target := "/tasks/" + e.taskID + "/graph"
	signIn(t, ctx, srv.URL, target, "chain", "run-state")
	url := run(t, ctx, chromedp.Location())
	boxes := eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-node-id]').length`)
	links := eval[int](t, ctx, `[...document.querySelectorAll('svg#graph a[data-node-id]')].filter(a => a.getAttribute('href').startsWith('/tasks/') && a.getAttribute('aria-label')).length`)
	states := eval[string](t, ctx, `[...document.querySelectorAll('svg#graph a[data-state]')].map(a => a.dataset.state + ':' + (a.textContent.includes(a.dataset.state) || a.dataset.state === 'GROUP')).sort().join(',')`)
	refresh := eval[int](t, ctx, `document.querySelectorAll('#live-toggle:not([hidden])').length`)
	state := run(t, ctx, chromedp.Text(chromedp.ID("run-state")))
	if !strings.HasSuffix(url, target) || boxes != 17 || links != 17 || refresh != 1 || state != "RUNNING" {
		t.Errorf("live page %s: %d boxes, %d links, %d refresh, state %q", url, boxes, links, refresh, state)
	}
	if strings.Contains(states, ":false") {
		t.Errorf("a box does not say its state: %s", states)
	}
	// Keyboard: tabbing reaches the graph's node links, each with a label.
	var focused string
	for range 12 {
		run(t, ctx, chromedp.KeyEvent(kb.Tab))
		focused = eval[string](t, ctx, `(document.activeElement.closest('svg#graph') ? 'node:' : '') + (document.activeElement.getAttribute('aria-label') || '')`)
		if strings.HasPrefix(focused, "node:") {
			break
		}
	}
	if !strings.HasPrefix(focused, "node:") || len(focused) <= len("node:") {
		t.Errorf("tabbing never reached a labelled node link (last focus %q)", focused)
	}
	checkLayout(t, ctx, "live page")
	screenshot(t, ctx, "live")
	// The live page reloads itself (its one script, allowed by the
	// response's nonce) until the reader pauses it.
	origin := eval[float64](t, ctx, `performance.timeOrigin`)
	testwait.Until(t, 4*RefreshSeconds*time.Second, "the live page reloads", func() bool {
		o, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.timeOrigin`))
		return err == nil && o != origin
	})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("live-toggle")), chromedp.Click(chromedp.ID("live-toggle"))); err != nil {
		t.Fatal(err)
	}
	origin = eval[float64](t, ctx, `performance.timeOrigin`)
	if err := chromedp.Do(ctx, chromedp.Sleep((RefreshSeconds+2)*time.Second)); err != nil {
		t.Fatal(err)
	}
	if o, pressed := eval[float64](t, ctx, `performance.timeOrigin`), eval[string](t, ctx, `document.getElementById('live-toggle').getAttribute('aria-pressed')`); o != origin || pressed != "true" {
		t.Errorf("paused live page: reloaded %v, aria-pressed %q", o != origin, pressed)
	}

	for i := range c.States {
		c.States[i] = detail.NodeStateSucceeded
	}
	c.Publish(t, e.pool, shaped(c, true))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+target), chromedp.WaitVisible(chromedp.ID("graph"))); err != nil {
		t.Fatal(err)
	}
	boxes = eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-state="SUCCEEDED"]').length`)
	refresh = eval[int](t, ctx, `document.querySelectorAll('#live-toggle:not([hidden])').length`)
	state = run(t, ctx, chromedp.Text(chromedp.ID("run-state")))
	if boxes != 16 || refresh != 0 || state != "SUCCEEDED" {
		t.Errorf("finished page: %d succeeded boxes, %d refresh, state %q", boxes, refresh, state)
	}
	checkLayout(t, ctx, "finished page")
	screenshot(t, ctx, "finished")
}

// checkLayout: as Chromium lays the graph page out, every text of a node
// box (a bounded map's item counts too) lies inside the box, and the
// legend's text shows each state glyph once.
func checkLayout(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	outside := eval[[]string](t, ctx, `[...document.querySelectorAll('svg#graph a[data-node-id]')].flatMap(a => {
  const b = a.querySelector('rect.box').getBoundingClientRect();
  return [...a.parentNode.querySelectorAll('text')].filter(x => {
    const r = x.getBoundingClientRect();
    return r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5;
  }).map(x => a.dataset.nodeId + ': ' + JSON.stringify(x.textContent) + ' ' + Math.round(x.getBoundingClientRect().right - b.right) + 'px past the right edge');
})`)
	if len(outside) > 0 {
		t.Errorf("%s: text outside its node box: %v", page, outside)
	}
	maps := eval[int](t, ctx, `[...document.querySelectorAll('svg#graph a.map')].flatMap(a => [...a.parentNode.querySelectorAll('text')]).filter(x => /○/.test(x.textContent)).length`)
	if maps != 1 {
		t.Errorf("%s: %d map count texts, want 1", page, maps)
	}
	legend := eval[string](t, ctx, `document.querySelector('ul.legend').innerText`)
	for _, g := range []string{"○", "▶", "✓", "✗"} {
		if n := strings.Count(legend, g); n != 1 {
			t.Errorf("%s: the legend shows %s %d times: %q", page, g, n, legend)
		}
	}
	for _, st := range []string{"PENDING", "RUNNING", "SUCCEEDED", "FAILED"} {
		if !strings.Contains(legend, st) {
			t.Errorf("%s: the legend lacks %s: %q", page, st, legend)
		}
	}
}

// TestBrowserGraph25k: the first window of a 25,000-node run renders in
// Chromium with WindowNodes node links; time to first render is logged.
func TestBrowserGraph25k(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 25_000)
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	target := "/tasks/" + e.taskID + "/graph"
	start := time.Now()
	signIn(t, ctx, srv.URL, target, "chain", "run-state")
	first := time.Since(start)
	boxes := eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-node-id]').length`)
	elems := eval[int](t, ctx, `document.getElementsByTagName('*').length`)
	t.Logf("25,000 nodes in Chromium: sign-in to first render %v; %d node links, %d elements", first, boxes, elems)
	if boxes != WindowNodes || elems > 10*WindowNodes {
		t.Errorf("%d node links, %d elements", boxes, elems)
	}
	start = time.Now()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("next-window")), chromedp.WaitVisible(chromedp.ID("prev-window"))); err != nil {
		t.Fatal(err)
	}
	boxes = eval[int](t, ctx, `document.querySelectorAll('svg#graph a[data-node-id]').length`)
	t.Logf("25,000 nodes in Chromium: next window in %v (%d node links)", time.Since(start), boxes)
	if boxes != WindowNodes {
		t.Errorf("window 2: %d node links", boxes)
	}
	screenshot(t, ctx, "25k")
}

// TestBrowserTasksAndCancel: in headless Chromium, sign in on the /tasks
// page, tab through its form fields in order, filter by state, open a
// task from the list, and cancel it through the confirmation form (the
// session's CSRF token travels in the form; the page's script posts it in
// place); the task page shows the outcome and the task is cancelled in
// PostgreSQL. TestBrowserTaskActions checks the actions with and without
// script.
func TestBrowserTasksAndCancel(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 3)
	queued := addTask(t, e.pool, "chain", "default", "QUEUED", 0)
	succeeded := addTask(t, e.pool, "chain", "default", "SUCCEEDED", 1)
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	signIn(t, ctx, srv.URL, "/tasks", "chain", "tasks")
	if rows := eval[int](t, ctx, `document.querySelectorAll('#tasks tr[data-task-id]').length`); rows != 3 {
		t.Errorf("%d rows, want 3", rows)
	}
	// Every form field has a label; tabbing visits the fields in page order.
	if unlabelled := eval[int](t, ctx, `[...document.querySelectorAll('main input, main select')].filter(x => x.type !== 'hidden' && x.labels.length === 0).length`); unlabelled != 0 {
		t.Errorf("%d form fields without a label", unlabelled)
	}
	var order []string // a datetime-local field takes several tabs
	for range 30 {
		run(t, ctx, chromedp.KeyEvent(kb.Tab))
		id := eval[string](t, ctx, `document.activeElement.closest('main') && document.activeElement.id || ''`)
		if id != "" && (len(order) == 0 || order[len(order)-1] != id) {
			order = append(order, id)
		}
	}
	if got := strings.Join(order, ","); !strings.HasPrefix(got, "task_id,state,flow,queue,from,to,limit") {
		t.Errorf("focus order %s", got)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("state"), "QUEUED"),
		chromedp.Click(chromedp.CSS(`form[aria-label="Filter tasks"] button[type="submit"]`)),
		// the filtered page (the unfiltered one shows the row too)
		chromedp.WaitVisible(chromedp.CSS(`ul.counts a[data-state="QUEUED"][aria-current="page"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#tasks tr[data-task-id="`+succeeded+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tasks tr[data-task-id="`+queued+`"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if rows := eval[int](t, ctx, `document.querySelectorAll('#tasks tr[data-task-id]').length`); rows != 1 {
		t.Errorf("QUEUED: %d rows, want 1", rows)
	}
	screenshot(t, ctx, "tasks")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tasks tr[data-task-id="`+queued+`"] td a`)),
		chromedp.WaitVisible(chromedp.ID("cancel-link")),
		chromedp.Click(chromedp.ID("cancel-link")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.stateOf(t, queued); st != "QUEUED" {
		t.Fatalf("the confirmation page changed the task: %s", st)
	}
	screenshot(t, ctx, "confirm")
	// The action posts in place (the task page's script; the outcome
	// region is there, empty, until the answer comes).
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm"))); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Poll[bool](`document.getElementById('outcome')?.textContent !== ''`))
	outcome := run(t, ctx, chromedp.Text(chromedp.ID("outcome")))
	state := run(t, ctx, chromedp.Text(chromedp.ID("task-state")))
	if st, _ := e.stateOf(t, queued); outcome != "Cancel: ACCEPTED" || state != "CANCELLED" || st != "CANCELLED" {
		t.Errorf("after confirming: outcome %q, page state %q, stored state %s", outcome, state, st)
	}
	screenshot(t, ctx, "cancelled")
}
