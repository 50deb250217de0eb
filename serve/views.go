package serve

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/serve/reader"
)

// The graph page's other views of the same attempt (?view=):
//
//   - failures: the failed nodes, all their ancestors (the path that led
//     to each failure), the nodes they stopped (their direct successors,
//     which could not run) and, in a run that ended, the nodes still
//     running when it ended; every other node of a drawn layer is
//     collapsed into that layer's group with its counts, and a layer
//     with none of them is left out. The view opens at the window of the
//     node that failed first, and lists the failed nodes with their
//     errors and timings.
//   - timeline: one window of nodes (the graph view's windows), a bar
//     per node from its started_at to its finished_at (to the summary's
//     updated_at while it runs), rows grouped by longest-path layer.
//
// Both read only the records the graph view reads: a run over
// SparseDetail has its FAILED (and, once ended, RUNNING) node details
// read by the indexed state filter, at most MaxFailuresRead of each.

// Graph page views.
const (
	viewGraph    = "graph"
	viewFailures = "failures"
	viewTimeline = "timeline"
)

// MaxFailuresRead bounds the FAILED (and RUNNING) node details the
// failures view reads of a run over SparseDetail.
const MaxFailuresRead = 1024

// FailedNodesListed bounds the failures view's table of failed nodes.
const FailedNodesListed = 100

type viewLink struct {
	Name, Label, Href string
	Current           bool
}

func viewHref(taskID string, attempt int64, window int, view string) string {
	h := graphHref(taskID, attempt, window)
	if view == "" || view == viewGraph {
		return h
	}
	v := url.Values{}
	if attempt > 0 {
		v.Set("attempt_number", strconv.FormatInt(attempt, 10))
	}
	if window > 1 {
		v.Set("window", strconv.Itoa(window))
	}
	v.Set("view", view)
	return "/tasks/" + taskID + "/graph?" + v.Encode()
}

func viewLinks(taskID string, attempt int64, shown string) []viewLink {
	var out []viewLink
	for _, v := range []struct{ name, label string }{{viewGraph, "Graph"}, {viewFailures, "Failures"}, {viewTimeline, "Timeline"}} {
		out = append(out, viewLink{Name: v.name, Label: v.label, Href: viewHref(taskID, attempt, 0, v.name), Current: v.name == shown})
	}
	return out
}

// failedRow is one failed node of the failures view's table.
type failedRow struct {
	ID, Label, Href, Error      string
	ItemsHref                   string // a map's failed items
	Started, Finished, Duration string
	Layer                       int
}

// timing formats a node's recorded start, end and duration ("" each
// when not recorded).
func timing(started, finished string) (start, end, took string) {
	a, errA := time.Parse(time.RFC3339Nano, started)
	b, errB := time.Parse(time.RFC3339Nano, finished)
	if errA == nil {
		start = a.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	if errB == nil {
		end = b.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	if errA == nil && errB == nil {
		took = durationText(b.Sub(a))
	}
	return start, end, took
}

// durationText is d rounded for reading: ms under a minute, s above.
func durationText(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// readStates reads the node details of one state (at most
// MaxFailuresRead, by the indexed state filter) into g's nodes and
// returns their indexes.
func readStates(ctx context.Context, reads *reader.Service, principal, taskID string, g *graph, state detail.NodeState) ([]int, error) {
	var out []int
	cursor := ""
	for len(out) < MaxFailuresRead {
		p, err := reads.NodeDetails(ctx, principal, reader.PageRequest{TaskID: taskID, Attempt: g.Summary.RunIdentity.AttemptNumber,
			Limit: graphPage, Cursor: cursor, State: string(state)})
		if err != nil {
			return nil, err
		}
		for i := range p.Items {
			if j, ok := g.byID[p.Items[i].NodeID]; ok && len(out) < MaxFailuresRead {
				g.Nodes[j].setDetail(&p.Items[i])
				out = append(out, j)
			}
		}
		if p.NextCursor == nil || *p.NextCursor == "" || len(p.Items) == 0 {
			break
		}
		cursor = *p.NextCursor
	}
	return out, nil
}

// failureSet marks the nodes the failures view keeps and returns the
// failed ones, the one that failed first leading (earliest finished_at,
// then layer).
func (s *Server) failureSet(ctx context.Context, g *graph, principal, taskID string, ended bool) (keep []bool, failed []int, err error) {
	var stopped []int // running when the run ended
	if g.Sparse {
		if failed, err = readStates(ctx, s.reads, principal, taskID, g, detail.NodeStateFailed); err != nil {
			return nil, nil, err
		}
		if ended {
			if stopped, err = readStates(ctx, s.reads, principal, taskID, g, detail.NodeStateRunning); err != nil {
				return nil, nil, err
			}
		}
	} else {
		for i := range g.Nodes {
			switch {
			case g.Nodes[i].State == detail.NodeStateFailed:
				failed = append(failed, i)
			case ended && g.Nodes[i].State == detail.NodeStateRunning:
				stopped = append(stopped, i)
			}
		}
	}
	sort.SliceStable(failed, func(a, b int) bool {
		fa, fb := g.Nodes[failed[a]].Finished, g.Nodes[failed[b]].Finished
		if fa != fb && fa != "" && fb != "" {
			return fa < fb // canonical UTC timestamps order as text
		}
		if (fa == "") != (fb == "") {
			return fb == ""
		}
		return failed[a] < failed[b]
	})
	keep = make([]bool, len(g.Nodes))
	in := make([][]int, len(g.Nodes))
	out := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		in[e[1]] = append(in[e[1]], e[0])
		out[e[0]] = append(out[e[0]], e[1])
	}
	queue := append([]int(nil), failed...)
	for _, i := range failed {
		keep[i] = true
	}
	for h := 0; h < len(queue); h++ { // ancestors
		for _, p := range in[queue[h]] {
			if !keep[p] {
				keep[p] = true
				queue = append(queue, p)
			}
		}
	}
	for _, i := range failed { // the nodes each failure stopped
		for _, c := range out[i] {
			keep[c] = true
		}
	}
	for _, i := range stopped {
		keep[i] = true
	}
	return keep, failed, nil
}

// drawFailures fills d with the failures view: the kept nodes' window
// (win, or the first failed node's when 0) and the failed nodes' table.
func (s *Server) drawFailures(ctx context.Context, d *graphData, g *graph, principal string, win int) error {
	keep, failed, err := s.failureSet(ctx, g, principal, d.TaskID, !d.Live)
	if err != nil {
		return err
	}
	kept := 0
	for _, k := range keep {
		if k {
			kept++
		}
	}
	d.Failed = len(failed)
	d.Kept, d.Collapsed = kept, len(g.Nodes)-kept
	if d.Counts != nil && d.Counts.Failed > int64(len(failed)) {
		d.FailedUnshown = d.Counts.Failed - int64(len(failed))
	}
	if len(failed) == 0 {
		return nil
	}
	ws := g.windowsOf(keep)
	if win <= 0 {
		win = 1
		for w, items := range ws {
			for _, it := range items {
				if it.Node == failed[0] {
					win = w + 1
				}
			}
		}
	}
	for _, i := range failed[:min(len(failed), FailedNodesListed)] {
		n := &g.Nodes[i]
		r := failedRow{ID: n.ID, Label: n.Label, Href: nodeHref(d.TaskID, d.Attempt, n.ID), Error: n.Error, Layer: n.Layer}
		r.Started, r.Finished, r.Duration = timing(n.Started, n.Finished)
		if n.Kind == topology.NodeKindMap {
			r.ItemsHref = mapItemsHref(d.TaskID, n.ID, nil)
		}
		d.FailedRows = append(d.FailedRows, r)
	}
	return s.drawItems(ctx, d, g, principal, ws, win)
}

// Timeline geometry (px).
const (
	tlLabelW = 250 // the layer and label column
	tlBarW   = 640 // the time axis
	tlRowH   = 20
	tlTop    = 28 // room for the axis labels
)

// tlRow is one row of the timeline: a node's bar, or a collapsed group.
type tlRow struct {
	Href, Aria, Label, State, ID string
	Layer                        int
	LayerStart                   bool // the first row of its layer
	Y, TY, BarX, BarW            int
	Bar                          bool
}

type tlTick struct {
	X    int
	Text string
}

type timeline struct {
	Width, Height, BarLeft int
	Rows                   []tlRow
	Ticks                  []tlTick
	Span                   string
}

// drawTimeline fills d.Timeline with window win of the graph view's
// windows: each node's bar against the window's time span.
func (s *Server) drawTimeline(ctx context.Context, d *graphData, g *graph, principal string, win int) error {
	ws := g.windows()
	if err := s.drawItems(ctx, d, g, principal, ws, win); err != nil {
		return err
	}
	items := ws[d.Window-1]
	d.Boxes, d.Lines, d.Hidden = nil, nil, 0 // the timeline draws its own rows
	var now time.Time
	if t, err := time.Parse(time.RFC3339Nano, g.Summary.GeneratedAt); err == nil {
		now = t
	}
	type span struct {
		a, b time.Time
		ok   bool
	}
	spans := make([]span, len(items))
	var t0, t1 time.Time
	for k, it := range items {
		if it.Node < 0 {
			continue
		}
		n := &g.Nodes[it.Node]
		a, err := time.Parse(time.RFC3339Nano, n.Started)
		if err != nil {
			continue
		}
		b, err := time.Parse(time.RFC3339Nano, n.Finished)
		if err != nil {
			b = now // running: until the page's read
			if b.Before(a) {
				b = a
			}
		}
		spans[k] = span{a, b, true}
		if t0.IsZero() || a.Before(t0) {
			t0 = a
		}
		if b.After(t1) {
			t1 = b
		}
	}
	total := t1.Sub(t0)
	if total <= 0 {
		total = time.Millisecond
	}
	tl := &timeline{Width: tlLabelW + tlBarW + 2*pad, BarLeft: tlLabelW + pad, Span: durationText(t1.Sub(t0))}
	if t0.IsZero() {
		tl.Span = ""
	}
	for k := 0; k <= 4 && !t0.IsZero(); k++ {
		tl.Ticks = append(tl.Ticks, tlTick{X: tl.BarLeft + k*tlBarW/4, Text: "+" + durationText(total*time.Duration(k)/4)})
	}
	prevLayer := -1
	for k, it := range items {
		y := tlTop + k*tlRowH
		r := tlRow{Layer: it.Layer, LayerStart: it.Layer != prevLayer, Y: y, TY: y + 14}
		prevLayer = it.Layer
		if it.Node < 0 {
			r.ID, r.State = fmt.Sprintf("layer-%d", it.Layer), "GROUP"
			r.Label = fmt.Sprintf("%d more nodes", len(it.Group))
			r.Href = layerHref(d.TaskID, d.Attempt, it.Layer, 0)
			r.Aria = fmt.Sprintf("%d more nodes of layer %d (their timings on the layer's node pages)", len(it.Group), it.Layer)
		} else {
			n := &g.Nodes[it.Node]
			r.ID, r.State, r.Label, r.Href = n.ID, string(n.State), clip(n.Label, 24), nodeHref(d.TaskID, d.Attempt, n.ID)
			start, end, took := timing(n.Started, n.Finished)
			switch {
			case !spans[k].ok:
				r.Aria = fmt.Sprintf("%s: %s, not started", n.Label, n.State)
			case end == "":
				r.Aria = fmt.Sprintf("%s: %s, started %s, running", n.Label, n.State, start)
			default:
				r.Aria = fmt.Sprintf("%s: %s, started %s, finished %s, took %s", n.Label, n.State, start, end, took)
			}
			if sp := spans[k]; sp.ok {
				r.Bar = true
				r.BarX = tl.BarLeft + int(int64(tlBarW)*int64(sp.a.Sub(t0))/int64(total))
				r.BarW = max(2, int(int64(tlBarW)*int64(sp.b.Sub(sp.a))/int64(total)))
				r.BarW = min(r.BarW, tl.BarLeft+tlBarW-r.BarX)
			}
		}
		tl.Rows = append(tl.Rows, r)
	}
	tl.Height = tlTop + len(items)*tlRowH + pad
	d.Timeline = tl
	return nil
}
