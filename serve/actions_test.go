package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

// post sends a form post with a session cookie (nil: none) and the
// headers given, without following the redirect.
func (e *env) post(t *testing.T, cookie *http.Cookie, target string, form url.Values, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	return w
}

// confirmForm opens an action's confirmation page with cookie and
// returns its form's fields (nil when it offers no form).
func (e *env) confirmForm(t *testing.T, cookie *http.Cookie, target string) url.Values {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.AddCookie(cookie)
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s", target, w.Code, w.Body)
	}
	forms := parse(t, w.Body.Bytes()).all("form", func(n *html.Node) bool { return attr(n, "action") != "/logout" })
	if len(forms) == 0 {
		return nil
	}
	if len(forms) != 1 || attr(forms[0], "method") != "post" || attr(forms[0], "action") != target {
		t.Fatalf("GET %s: forms %v", target, forms)
	}
	v := url.Values{}
	for _, in := range (dom{forms[0]}).all("input", nil) {
		v.Set(attr(in, "name"), attr(in, "value"))
	}
	return v
}

func (e *env) stateOf(t *testing.T, id string) (string, int) {
	t.Helper()
	var st string
	var attempt int
	if err := e.pool.QueryRow(context.Background(), `SELECT state, attempt_number FROM rayflow_tasks WHERE task_id = $1`, id).Scan(&st, &attempt); err != nil {
		t.Fatal(err)
	}
	return st, attempt
}

// TestTaskActions: the task page's Cancel and Retry go through a
// confirmation form, need the session's CSRF token (a bearer caller
// none), are authorized as the API's cancel and retry, really change the
// task, and land on the task page with the outcome.
func TestTaskActions(t *testing.T) {
	e := newEnv(t, 3) // e.taskID: flow chain, RUNNING
	queued := addTask(t, e.pool, "chain", "default", "QUEUED", 0)
	failed := addTask(t, e.pool, "chain", "default", "FAILED", 1)
	secret := addTask(t, e.pool, "secret", "default", "QUEUED", 2)
	const absent = "00000000-0000-4000-8000-000000000000"
	chain := signInCookie(t, e.s, "chain")
	form := e.confirmForm(t, chain, "/tasks/"+queued+"/cancel")
	if form.Get("csrf") == "" || form.Get("expect_attempt") != "1" {
		t.Fatalf("confirmation form %v", form)
	}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for k, vs := range form {
			f[k] = vs
		}
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	otherSession := e.confirmForm(t, signInCookie(t, e.s, "chain"), "/tasks/"+queued+"/cancel").Get("csrf")
	if otherSession == form.Get("csrf") {
		t.Fatal("two sessions share a CSRF token")
	}
	// Refused: nothing changes.
	for _, tc := range []struct {
		name, target string
		form         url.Values
		header       map[string]string
		code         int
	}{
		{"no csrf", "/tasks/" + queued + "/cancel", with("csrf", ""), nil, 403},
		{"wrong csrf", "/tasks/" + queued + "/cancel", with("csrf", strings.Repeat("A", 43)), nil, 403},
		{"another session's csrf", "/tasks/" + queued + "/cancel", with("csrf", otherSession), nil, 403},
		{"cross-site", "/tasks/" + queued + "/cancel", form, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"another flow", "/tasks/" + secret + "/cancel", form, nil, 403},
		{"absent task", "/tasks/" + absent + "/cancel", form, nil, 403},
		{"another flow, retry", "/tasks/" + secret + "/retry", form, nil, 403},
		{"bad expect_attempt", "/tasks/" + queued + "/cancel", with("expect_attempt", "0"), nil, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.post(t, chain, tc.target, tc.form, tc.header)
			m := dataCode.FindSubmatch(w.Body.Bytes())
			if w.Code != tc.code || m == nil || (tc.code == 403) != (string(m[1]) == "ACCESS_DENIED") {
				t.Fatalf("%d %q", w.Code, w.Body)
			}
			if tc.code == 403 && (strings.Contains(tc.name, "flow") || tc.name == "absent task") {
				// refused exactly as the API refuses the same principal
				api := strings.Replace(tc.target, "/tasks/", "/api/tasks/", 1)
				code, body := e.do(t, "chain", "POST", api)
				if code != w.Code || body["code"] != string(m[1]) {
					t.Errorf("the API: %d %v, the page: %d %s", code, body, w.Code, m[1])
				}
			}
			for _, id := range []string{queued, secret} {
				if st, _ := e.stateOf(t, id); st != "QUEUED" {
					t.Errorf("task %s is %s after a refused post", id, st)
				}
			}
		})
	}

	// Accepted: cancel through the confirmation, the outcome shown.
	w := e.post(t, chain, "/tasks/"+queued+"/cancel", form, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tasks/"+queued+"?action=cancel&outcome=ACCEPTED" {
		t.Fatalf("cancel: %d %v %.200s", w.Code, w.Header(), w.Body)
	}
	if st, _ := e.stateOf(t, queued); st != "CANCELLED" {
		t.Errorf("cancelled task is %s", st)
	}
	code, _, body := e.get(t, "chain", w.Header().Get("Location"))
	if got := text(parse(t, body).byID("outcome")); code != 200 || got != "Cancel: ACCEPTED" {
		t.Errorf("task page after cancel: %d %q", code, got)
	}
	// A cancelled task offers Retry only; its confirmation has no cancel form.
	if f := e.confirmForm(t, chain, "/tasks/"+queued+"/cancel"); f != nil {
		t.Errorf("cancel offered for a cancelled task: %v", f)
	}
	// Retry of the failed task, then the same confirmation again: stale.
	rf := e.confirmForm(t, chain, "/tasks/"+failed+"/retry")
	for i, want := range []string{"ACCEPTED", "STALE_ATTEMPT"} {
		w := e.post(t, chain, "/tasks/"+failed+"/retry", rf, nil)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/tasks/"+failed+"?action=retry&outcome="+want {
			t.Errorf("retry %d: %d %v", i, w.Code, w.Header())
		}
	}
	if st, attempt := e.stateOf(t, failed); st != "QUEUED" || attempt != 2 {
		t.Errorf("retried task: %s attempt %d", st, attempt)
	}
	// A bearer caller sends no cookie and needs no CSRF token.
	req := httptest.NewRequest("POST", "/tasks/"+e.taskID+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+tokensOf["chain"])
	rw := httptest.NewRecorder()
	e.s.ServeHTTP(rw, req)
	if st, _ := e.stateOf(t, e.taskID); rw.Code != http.StatusSeeOther || st != "CANCELLING" {
		t.Errorf("bearer cancel: %d, task %s", rw.Code, st)
	}

	// The task page offers what the state allows, nothing else.
	other := addTask(t, e.pool, "chain", "default", "SUCCEEDED", 3)
	running := addTask(t, e.pool, "chain", "default", "RUNNING", 4)
	for id, want := range map[string][]string{running: {"cancel-link"}, queued: {"retry-link"}, failed: {"cancel-link"}, other: nil} {
		_, _, body := e.get(t, "chain", "/tasks/"+id)
		var got []string
		for _, a := range parse(t, body).all("a", func(n *html.Node) bool {
			return strings.HasSuffix(attr(n, "id"), "-link") && attr(n, "id") != "graph-link"
		}) {
			got = append(got, attr(a, "id"))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("task %s offers %v, want %v", id, got, want)
		}
	}
	// An outcome the server did not give is not shown.
	_, _, body = e.get(t, "chain", "/tasks/"+failed+"?action=retry&outcome=HACKED")
	if n := parse(t, body).byID("outcome"); n != nil {
		t.Errorf("unknown outcome shown: %q", text(n))
	}
}

// TestTaskPageScript: a task page that offers Cancel or Retry runs the
// live script and the actions script, both by the response's nonce, and
// its policy adds fetch to this origin (connect-src 'self') and nothing
// else; a task page without actions runs no script (the policy forbids
// any); the links to the confirmation pages stay for a browser without
// script.
func TestTaskPageScript(t *testing.T) {
	e := newEnv(t, 3)
	for _, tc := range []struct {
		state, link string
		live        bool
	}{
		{"QUEUED", "cancel-link", true},
		{"RUNNING", "cancel-link", true},
		{"FAILED", "retry-link", false},
		{"CANCELLED", "retry-link", false},
		{"SUCCEEDED", "", false},
	} {
		t.Run(tc.state, func(t *testing.T) {
			id := addTask(t, e.pool, "chain", "default", tc.state, 0)
			code, h, body := e.get(t, "chain", "/tasks/"+id)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			d := parse(t, body)
			scripts := d.all("script", nil)
			policy := h.Get("Content-Security-Policy")
			if tc.link == "" {
				if len(scripts) != 0 || policy != csp {
					t.Errorf("%d scripts, policy %q", len(scripts), policy)
				}
				return
			}
			if len(scripts) == 0 {
				t.Fatalf("no script; policy %q", policy)
			}
			nonce := attr(scripts[0], "nonce")
			var nonces []string
			for _, s := range scripts {
				nonces = append(nonces, attr(s, "nonce"))
			}
			if diff := cmp.Diff([]string{nonce, nonce}, nonces); diff != "" || len(nonce) < 20 {
				t.Errorf("script nonces (-want +got):\n%s", diff)
			}
			if want := csp + "; connect-src 'self'; script-src 'nonce-" + nonce + "'"; policy != want {
				t.Errorf("policy %q, want %q", policy, want)
			}
			a := d.byID(tc.link)
			toggle := d.byID("live-toggle")
			if a == nil || attr(a, "href") != "/tasks/"+id+"/"+strings.TrimSuffix(tc.link, "-link") {
				t.Errorf("%s: %v", tc.link, a)
			}
			if toggle == nil || (attr(toggle, "data-live") == "on") != tc.live || (refreshes(d) == 1) != tc.live {
				t.Errorf("live toggle %v, %d refreshes, want live %v", toggle, refreshes(d), tc.live)
			}
		})
	}
}
