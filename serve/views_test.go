package serve

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// chainEnv is a server and a task whose attempt 1 is a chain of n nodes,
// set up by setup and published (final when final is set).
func chainEnv(t *testing.T, n int, final bool, setup func(c *pgstoretest.Chain)) *env {
	t.Helper()
	e := newEnv(t, 1)
	taskID, id := pgstoretest.NewTask(t, e.pool, "chain")
	c := pgstoretest.NewChain(id, n)
	setup(c)
	c.Publish(t, e.pool, c.Pub(true, final))
	e.taskID, e.c = taskID, c
	return e
}

func boxIDs(d dom) []string {
	var out []string
	for _, b := range d.boxes() {
		out = append(out, attr(b, "data-node-id")+":"+attr(b, "data-state"))
	}
	return out
}

// TestGraphFailuresView: the failures view draws the failed nodes, their
// ancestors and the nodes they stopped, collapses the rest of a drawn
// layer into its group and leaves the other layers out, opens at the
// window of the node that failed first and lists the failed nodes with
// their errors and timings.
func TestGraphFailuresView(t *testing.T) {
	t.Run("shaped", func(t *testing.T) {
		// n0 → n1..n15 → n16 → n17 → n18 → n19; n3 failed, n16 and n19 run.
		e, _ := newShaped(t)
		code, _, body := e.get(t, "chain", "/tasks/"+e.taskID+"/graph?view=failures")
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		d := parse(t, body)
		want := []string{pgstoretest.NodeID(0) + ":SUCCEEDED", pgstoretest.NodeID(3) + ":FAILED", "layer-1:GROUP", pgstoretest.NodeID(16) + ":RUNNING"}
		if diff := cmp.Diff(want, boxIDs(d)); diff != "" {
			t.Errorf("drawn (-want +got):\n%s", diff)
		}
		var rows [][]string
		for _, tr := range d.all("tr", func(n *html.Node) bool { return attr(n, "data-node-id") != "" }) {
			var cells []string
			for _, td := range (dom{tr}).all("td", nil) {
				cells = append(cells, text(td))
			}
			rows = append(rows, cells)
		}
		if diff := cmp.Diff([][]string{{"step " + pgstoretest.NodeID(3), "1", "boom", "2026-12-01 10:00:01.000Z", "2026-12-01 10:00:02.000Z", "1s"}}, rows); diff != "" {
			t.Errorf("failed nodes (-want +got):\n%s", diff)
		}
		if s := text(d.byID("failures-summary")); !strings.Contains(s, "3 of 20 nodes") || !strings.Contains(s, "other 17") {
			t.Errorf("summary %q", s)
		}
		if attr(d.byID("view-failures"), "aria-current") != "page" || attr(d.byID("view-graph"), "aria-current") != "" {
			t.Error("the views nav does not mark the failures view")
		}
	})
	t.Run("ended run keeps the nodes still running", func(t *testing.T) {
		e := chainEnv(t, 6, true, func(c *pgstoretest.Chain) {
			c.States[0], c.States[1], c.States[4] = detail.NodeStateSucceeded, detail.NodeStateFailed, detail.NodeStateRunning
		})
		_, _, body := e.get(t, "chain", "/tasks/"+e.taskID+"/graph?view=failures")
		want := []string{pgstoretest.NodeID(0) + ":SUCCEEDED", pgstoretest.NodeID(1) + ":FAILED", pgstoretest.NodeID(2) + ":PENDING", pgstoretest.NodeID(4) + ":RUNNING"}
		if diff := cmp.Diff(want, boxIDs(parse(t, body))); diff != "" {
			t.Errorf("drawn (-want +got):\n%s", diff)
		}
	})
	t.Run("no failure", func(t *testing.T) {
		e := newEnv(t, 4)
		_, _, body := e.get(t, "chain", "/tasks/"+e.taskID+"/graph?view=failures")
		d := parse(t, body)
		if n := len(d.boxes()); n != 0 || text(d.byID("failures-summary")) != "No node of this attempt failed." {
			t.Errorf("%d boxes, summary %q", n, text(d.byID("failures-summary")))
		}
	})
	t.Run("failure not retained", func(t *testing.T) {
		// 25,000 nodes: the detail rows past the byte bound are dropped,
		// the last node's (failed) among them; the summary counts it.
		e := chainEnv(t, 25_000, false, func(c *pgstoretest.Chain) {
			for i := range 24_999 {
				c.States[i] = detail.NodeStateSucceeded
			}
			c.States[24_999] = detail.NodeStateFailed
		})
		_, _, body := e.get(t, "chain", "/tasks/"+e.taskID+"/graph?view=failures")
		d := parse(t, body)
		if s := text(d.byID("failures-unshown")); !strings.HasPrefix(s, "1 more failed node is counted but not shown") || d.byID("failures-summary") != nil {
			t.Errorf("unshown %q, summary %q", s, text(d.byID("failures-summary")))
		}
	})
	// Both ways of reading states (every detail page; one page of each
	// state filter past SparseDetail) at the bound: a long chain failing
	// late opens at the failure's window, which ends at the node it stopped.
	for _, n := range []int{SparseDetail, SparseDetail + 1} {
		t.Run(fmt.Sprintf("chain of %d", n), func(t *testing.T) {
			bad := n - 500
			e := chainEnv(t, n, false, func(c *pgstoretest.Chain) {
				for i := range bad {
					c.States[i] = detail.NodeStateSucceeded
				}
				c.States[bad] = detail.NodeStateFailed
				c.Errors = map[int]string{bad: "no such file"}
			})
			base := "/tasks/" + e.taskID + "/graph"
			_, _, body := e.get(t, "chain", base+"?view=failures")
			d := parse(t, body)
			win := bad/WindowNodes + 1
			boxes := boxIDs(d)
			want := []string{pgstoretest.NodeID(bad) + ":FAILED", pgstoretest.NodeID(bad+1) + ":PENDING"}
			if len(boxes) != bad%WindowNodes+2 || !cmp.Equal(boxes[len(boxes)-2:], want) {
				t.Fatalf("window %d: %d boxes, last %v", win, len(boxes), boxes[max(0, len(boxes)-2):])
			}
			if attr(d.byID("prev-window"), "href") != fmt.Sprintf("%s?attempt_number=1&view=failures&window=%d", base, win-1) || d.byID("next-window") != nil {
				t.Errorf("window links: prev %q", attr(d.byID("prev-window"), "href"))
			}
			if row := d.all("tr", func(n *html.Node) bool { return attr(n, "data-node-id") == pgstoretest.NodeID(bad) }); len(row) != 1 || !strings.Contains(text(row[0]), "no such file") {
				t.Error("the failed node's row lacks its error")
			}
		})
	}
}

// TestGraphTimeline: the timeline view draws each node of the window as a
// bar from its start to its end against the window's span, rows grouped
// by layer, with the timings in each row's label; a node that has not
// started has no bar. The node page shows a node's duration.
func TestGraphTimeline(t *testing.T) {
	e := chainEnv(t, 4, false, func(c *pgstoretest.Chain) {
		c.States[0], c.States[1], c.States[2] = detail.NodeStateSucceeded, detail.NodeStateSucceeded, detail.NodeStateFailed
		c.Times = map[int][2]time.Duration{0: {0, 10 * time.Second}, 1: {10 * time.Second, 30 * time.Second}, 2: {30 * time.Second, 40 * time.Second}}
	})
	base := "/tasks/" + e.taskID + "/graph"
	code, _, body := e.get(t, "chain", base+"?view=timeline")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	d := parse(t, body)
	type row struct {
		ID, Layer, Aria string
		X, W            string
	}
	var got []row
	for _, a := range d.boxes() {
		r := row{ID: attr(a, "data-node-id"), Layer: attr(a, "data-layer"), Aria: attr(a, "aria-label")}
		if bars := (dom{a}).all("rect", nil); len(bars) == 1 {
			r.X, r.W = attr(bars[0], "x"), attr(bars[0], "width")
		}
		got = append(got, r)
	}
	left := tlLabelW + pad
	want := []row{
		{pgstoretest.NodeID(0), "0", "step n000000: SUCCEEDED, started 2026-12-01 10:00:00.000Z, finished 2026-12-01 10:00:10.000Z, took 10s", fmt.Sprint(left), fmt.Sprint(tlBarW / 4)},
		{pgstoretest.NodeID(1), "1", "step n000001: SUCCEEDED, started 2026-12-01 10:00:10.000Z, finished 2026-12-01 10:00:30.000Z, took 20s", fmt.Sprint(left + tlBarW/4), fmt.Sprint(tlBarW / 2)},
		{pgstoretest.NodeID(2), "2", "step n000002: FAILED, started 2026-12-01 10:00:30.000Z, finished 2026-12-01 10:00:40.000Z, took 10s", fmt.Sprint(left + 3*tlBarW/4), fmt.Sprint(tlBarW / 4)},
		{pgstoretest.NodeID(3), "3", "step n000003: PENDING, not started", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline rows (-want +got):\n%s", diff)
	}
	var ticks []string
	for _, x := range d.all("text", func(n *html.Node) bool { return attr(n, "class") == "tick" }) {
		ticks = append(ticks, text(x))
	}
	if diff := cmp.Diff([]string{"+0s", "+10s", "+20s", "+30s", "+40s"}, ticks); diff != "" {
		t.Errorf("axis (-want +got):\n%s", diff)
	}
	_, _, body = e.get(t, "chain", base+"/node?attempt_number=1&node_id="+pgstoretest.NodeID(1))
	if took := text(parse(t, body).byID("node-took")); took != "20s" {
		t.Errorf("node page: took %q", took)
	}
}

// TestGraphViewRefused: an unknown view is INVALID_ARGUMENT, and the
// views are authorized as the graph page is.
func TestGraphViewRefused(t *testing.T) {
	e := newEnv(t, 2)
	for _, c := range []struct {
		principal, target string
		code              int
		errCode           string
	}{
		{"chain", "?view=gantt", 400, "INVALID_ARGUMENT"},
		{"other", "?view=failures", 403, "ACCESS_DENIED"},
		{"other", "?view=timeline", 403, "ACCESS_DENIED"},
	} {
		code, body := e.do(t, c.principal, "GET", "/tasks/"+e.taskID+"/graph"+c.target)
		if code != c.code || c.errCode != "" && body["code"] != c.errCode {
			t.Errorf("%s %s: %d %v", c.principal, c.target, code, body)
		}
	}
	// Unauthenticated: sent to sign in.
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, httptest.NewRequest("GET", "/tasks/"+e.taskID+"/graph?view=failures", nil))
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login?next=") {
		t.Errorf("unauthenticated: %d %s", w.Code, w.Header().Get("Location"))
	}
}
