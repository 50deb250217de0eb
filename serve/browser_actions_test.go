package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
)

// openTask signs in on a task page (script on or off in the tab) and
// waits for its state.
func openTask(t *testing.T, ctx context.Context, base, id string, script bool) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !script})
			return err
		}),
		chromedp.Navigate(base+"/tasks/"+id),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tokensOf["chain"]),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("task-state")),
	); err != nil {
		t.Fatal(err)
	}
}

// taskView is what the shown task page says, read in one evaluation: the
// outcome, state and attempt, the action links, the in-place error, the
// live toggle, whether the window marker set before the action survived
// (no navigation) and the document's URL.
type taskView struct {
	Outcome, State, Attempt, Error, URL string
	Links                               []string
	Live, Marker, Panel                 bool
}

const taskViewJS = `(() => {
  const text = id => (document.getElementById(id)?.textContent ?? '').trim();
  const dd = [...document.querySelectorAll('main dt')].find(dt => dt.textContent === 'Attempt')?.nextElementSibling;
  return {Outcome: text('outcome'), State: text('task-state'), Attempt: dd ? dd.textContent : '',
    Error: (document.querySelector('#confirm-panel .error')?.textContent ?? '').trim(), URL: location.href,
    Links: [...document.querySelectorAll('nav.actions a')].map(a => a.id),
    Live: !!document.querySelector('#live-toggle:not([hidden])'), Marker: window.rayflowMarker === 'kept',
    Panel: !!document.getElementById('confirm-panel')};
})()`

// TestBrowserTaskActions: the task page's Cancel and Retry in headless
// Chromium. With script, the confirmation opens in the page (a live
// page's reload waits while it is open), the action posts in place and
// the page shows the outcome in its status region and the new state and
// attempt, without navigating (a window marker survives); a refused post
// (a wrong CSRF token) shows its error in place and changes nothing;
// "Back to the task" closes the confirmation; a task that moved on behind
// it shows the outcome the durable client gives; axe-core finds no
// serious violation with the confirmation open, after an action and with
// an error shown. A session that ended meanwhile opens the sign-in page
// and changes nothing. Without script the links and forms do the same by
// navigation.
func TestBrowserTaskActions(t *testing.T) {
	e := newEnv(t, 3)
	srv := httptest.NewServer(e.s)
	defer srv.Close()
	stored := func(id string) string {
		st, n := e.stateOf(t, id)
		return st + " " + string(rune('0'+n))
	}

	t.Run("script", func(t *testing.T) {
		ctx := browser(t)
		src := axeSource(t)
		queued := addTask(t, e.pool, "chain", "default", "QUEUED", 0)
		openTask(t, ctx, srv.URL, queued, true)
		origin := eval[float64](t, ctx, `window.rayflowMarker = 'kept'; performance.timeOrigin`)
		if v := eval[taskView](t, ctx, taskViewJS); !v.Live || v.State != "QUEUED" || strings.Join(v.Links, ",") != "cancel-link" {
			t.Fatalf("queued task page: %+v", v)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("cancel-link")), chromedp.WaitVisible(chromedp.CSS("#confirm-panel #confirm"))); err != nil {
			t.Fatal(err)
		}
		// The live page does not reload under an open confirmation.
		if err := chromedp.Do(ctx, chromedp.Sleep((RefreshSeconds+2)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if v := eval[taskView](t, ctx, taskViewJS); !v.Marker || !v.Panel || stored(queued) != "QUEUED 1" {
			t.Fatalf("confirmation open: %+v, stored %s", v, stored(queued))
		}
		if v := axeViolations(t, ctx, src); len(v) > 0 {
			t.Errorf("confirmation open: %s", strings.Join(v, "\n"))
		}
		screenshot(t, ctx, "confirm-in-place")

		confirm := func(link, want string) taskView {
			t.Helper()
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(link)), chromedp.WaitVisible(chromedp.CSS("#confirm-panel #confirm")),
				chromedp.Click(chromedp.CSS("#confirm-panel #confirm"))); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('outcome').textContent === '`+want+`'`,
				chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("%s: waiting for the outcome %q: %v (%+v)", link, want, err, eval[taskView](t, ctx, taskViewJS))
			}
			return eval[taskView](t, ctx, taskViewJS)
		}
		v := confirm("cancel-link", "Cancel: ACCEPTED")
		want := taskView{Outcome: "Cancel: ACCEPTED", State: "CANCELLED", Attempt: "1 of 3", URL: srv.URL + "/tasks/" + queued,
			Links: []string{"retry-link"}, Marker: true}
		if diff := cmp.Diff(want, v); diff != "" || stored(queued) != "CANCELLED 1" {
			t.Errorf("after cancel (-want +got):\n%s\nstored %s", diff, stored(queued))
		}
		if o := eval[float64](t, ctx, `performance.timeOrigin`); o != origin {
			t.Error("the page was loaded again")
		}
		if v := axeViolations(t, ctx, src); len(v) > 0 {
			t.Errorf("after cancel: %s", strings.Join(v, "\n"))
		}

		v = confirm("retry-link", "Retry: ACCEPTED")
		want = taskView{Outcome: "Retry: ACCEPTED", State: "QUEUED", Attempt: "2 of 3", URL: srv.URL + "/tasks/" + queued,
			Links: []string{"cancel-link"}, Live: true, Marker: true}
		if diff := cmp.Diff(want, v); diff != "" || stored(queued) != "QUEUED 2" {
			t.Errorf("after retry (-want +got):\n%s\nstored %s", diff, stored(queued))
		}
		// Pause the live updates again (the task is live): then a refused
		// post, its error in place and the task unchanged.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("live-toggle")), chromedp.Click(chromedp.ID("cancel-link")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-panel #confirm"))); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `document.querySelector('#confirm-panel input[name=csrf]').value = 'forged'; true`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#confirm-panel #confirm")), chromedp.WaitVisible(chromedp.CSS("#confirm-panel .error"))); err != nil {
			t.Fatal(err)
		}
		v = eval[taskView](t, ctx, taskViewJS)
		if !strings.HasPrefix(v.Error, "ACCESS_DENIED: the form's token is missing or wrong") || !v.Marker || !v.Panel || v.State != "QUEUED" || stored(queued) != "QUEUED 2" {
			t.Errorf("refused post: %+v, stored %s", v, stored(queued))
		}
		if v := axeViolations(t, ctx, src); len(v) > 0 {
			t.Errorf("error shown: %s", strings.Join(v, "\n"))
		}
		screenshot(t, ctx, "action-error")

		// "Back to the task" closes the confirmation, focus back on its link.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#confirm-panel a[href="/tasks/`+queued+`"]`)),
			chromedp.WaitNotPresent(chromedp.ID("confirm-panel"))); err != nil {
			t.Fatal(err)
		}
		if f := eval[string](t, ctx, `document.activeElement.id`); f != "cancel-link" {
			t.Errorf("focus after closing the confirmation: %q", f)
		}
		// The task moves on behind the open confirmation (cancelled through
		// the API): the confirmed form answers with the outcome the durable
		// client gives, in place, and the page shows the new state.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("cancel-link")), chromedp.WaitVisible(chromedp.CSS("#confirm-panel #confirm"))); err != nil {
			t.Fatal(err)
		}
		if code, body := e.do(t, "chain", "POST", "/api/tasks/"+queued+"/cancel"); code != http.StatusAccepted || stored(queued) != "CANCELLED 2" {
			t.Fatalf("API cancel: %d %v", code, body)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#confirm-panel #confirm"))); err != nil {
			t.Fatal(err)
		}
		outcome := "Cancel: " + string(durable.CancelAlreadyTerminal)
		run(t, ctx, chromedp.Poll[bool](`document.getElementById('outcome').textContent === '`+outcome+`'`, chromedp.WithPollingTimeout(30*time.Second)))
		v = eval[taskView](t, ctx, taskViewJS)
		want = taskView{Outcome: outcome, State: "CANCELLED", Attempt: "2 of 3", URL: srv.URL + "/tasks/" + queued,
			Links: []string{"retry-link"}, Marker: true}
		if diff := cmp.Diff(want, v); diff != "" {
			t.Errorf("after the task moved on (-want +got):\n%s", diff)
		}
	})

	t.Run("signed out meanwhile", func(t *testing.T) {
		// The session ends while the confirmation is open: the post is sent
		// to the sign-in page, which the page opens (nothing changes).
		ctx := browser(t)
		queued := addTask(t, e.pool, "chain", "default", "QUEUED", 2)
		openTask(t, ctx, srv.URL, queued, true)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("cancel-link")), chromedp.WaitVisible(chromedp.CSS("#confirm-panel #confirm")),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
				return err
			}),
			chromedp.Click(chromedp.CSS("#confirm-panel #confirm")), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
			t.Fatal(err)
		}
		if url := run(t, ctx, chromedp.Location()); !strings.HasPrefix(url, srv.URL+"/login?next=") || stored(queued) != "QUEUED 1" {
			t.Errorf("at %s, stored %s", url, stored(queued))
		}
	})

	t.Run("no script", func(t *testing.T) {
		ctx := browser(t)
		queued := addTask(t, e.pool, "chain", "default", "QUEUED", 1)
		openTask(t, ctx, srv.URL, queued, false)
		for _, step := range []struct {
			link, outcome, state string
		}{{"cancel-link", "Cancel: ACCEPTED", "CANCELLED 1"}, {"retry-link", "Retry: ACCEPTED", "QUEUED 2"}} {
			// Without script the link opens the confirmation page, whose
			// form posts and is sent back to the task page with the outcome.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(step.link)), chromedp.WaitVisible(chromedp.ID("confirm"))); err != nil {
				t.Fatal(err)
			}
			if url := run(t, ctx, chromedp.Location()); !strings.HasSuffix(url, "/tasks/"+queued+"/"+strings.TrimSuffix(step.link, "-link")) {
				t.Fatalf("%s: at %s, not the confirmation page", step.link, url)
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("outcome"))); err != nil {
				t.Fatal(err)
			}
			url := run(t, ctx, chromedp.Location())
			outcome := run(t, ctx, chromedp.Text(chromedp.ID("outcome")))
			if !strings.Contains(url, "/tasks/"+queued+"?action=") || outcome != step.outcome || stored(queued) != step.state {
				t.Errorf("%s: at %s, outcome %q, stored %s", step.link, url, outcome, stored(queued))
			}
		}
	})
}
