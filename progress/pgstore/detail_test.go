package pgstore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
)

func details(n, eventsEach int) []detail.NodeDetail {
	ds := make([]detail.NodeDetail, n)
	for i := range ds {
		ds[i] = detail.NodeDetail{SchemaVersion: 2, NodeID: fmt.Sprintf("n%07d", i), State: detail.NodeStatePending, RecentEvents: []detail.NodeRecentEvent{},
			OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: []byte("null")}}
		for j := range eventsEach {
			ds[i].RecentEvents = append(ds[i].RecentEvents, detail.NodeRecentEvent{Event: detail.NodeEventKindSubmitted, Label: "x", State: detail.NodeStatePending,
				Timestamp: fmt.Sprintf("2026-12-01T10:%02d:%02dZ", j, i%60)})
		}
	}
	return ds
}

func TestDetailCaps(t *testing.T) {
	top, err := PrepareTopology(testID, 1, "m-1", nodes(100, "x"), chainEdges(100), V1())
	if err != nil {
		t.Fatal(err)
	}
	one, _, _ := prepareDetail(details(1, 0), top, V1())
	rowBytes := int64(len(one[0].payload))
	cases := []struct {
		name   string
		n      int
		lim    func(*Limits)
		rows   int
		reason summary.TruncationReason
	}{
		{"rows at cap", 10, func(l *Limits) { l.DetailRows = 10 }, 10, ""},
		{"rows one over", 11, func(l *Limits) { l.DetailRows = 10 }, 10, summary.TruncationReasonDetailCountLimit},
		{"bytes at cap", 10, func(l *Limits) { l.DetailBytes = 10 * rowBytes }, 10, ""},
		{"bytes one over", 10, func(l *Limits) { l.DetailBytes = 10*rowBytes - 1 }, 9, summary.TruncationReasonDetailEncodedBytes},
		{"record at cap", 1, func(l *Limits) { l.RecordBytes = int(rowBytes) }, 1, ""},
		{"record one over", 1, func(l *Limits) { l.RecordBytes = int(rowBytes) - 1 }, 0, summary.TruncationReasonRecordSizeLimit},
		{"combined at cap", 10, func(l *Limits) { l.CombinedBytes = top.EncodedBytes + 10*rowBytes }, 10, ""},
		{"combined one over", 10, func(l *Limits) { l.CombinedBytes = top.EncodedBytes + 10*rowBytes - 1 }, 9, summary.TruncationReasonDetailEncodedBytes},
		{"not in the topology", 101, func(*Limits) {}, 100, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := V1()
			c.lim(&l)
			rows, reasons, err := prepareDetail(details(c.n, 0), top, l)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != c.rows || (c.reason == "") != (len(reasons) == 0) || c.reason != "" && !reasons[c.reason] {
				t.Fatalf("%d rows, reasons %v; want %d, %q", len(rows), reasons, c.rows, c.reason)
			}
		})
	}
}

func TestRecentEventsCap(t *testing.T) {
	top, _ := PrepareTopology(testID, 1, "m-1", nodes(100, "x"), chainEdges(100), V1())
	for _, c := range []struct{ nodes, each, kept, truncated int }{{16, 2, 32, 0}, {11, 3, 32, 1}} { // 32 and 33 events
		rows, _, err := prepareDetail(details(c.nodes, c.each), top, V1())
		if err != nil {
			t.Fatal(err)
		}
		kept, truncated := 0, 0
		for _, r := range rows {
			kept += r.events
			if r.truncated {
				truncated++
			}
		}
		if kept != c.kept || truncated != c.truncated {
			t.Fatalf("%d×%d events: kept %d, %d rows truncated", c.nodes, c.each, kept, truncated)
		}
		// The oldest event went: node 0's first (10:00:00).
		if c.truncated == 1 && !slices.ContainsFunc(rows, func(r detailRow) bool { return r.truncated && r.nodeID == "n0000000" }) {
			t.Fatal("the dropped event was not the oldest")
		}
	}
}
