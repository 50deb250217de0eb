package reader

import (
	"fmt"
	"testing"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

func TestRecordCacheBudget(t *testing.T) {
	c := newRecordCache(100)
	for i := range 10 {
		c.put(fmt.Sprint(i), 30, i)
	}
	if c.len() != 3 || c.used != 90 {
		t.Fatalf("%d entries, %d bytes", c.len(), c.used)
	}
	if _, ok := c.get("6"); ok {
		t.Fatal("an evicted entry is still there")
	}
	c.get("7") // 7 becomes the most recent: 8 goes first
	c.put("x", 30, "x")
	if _, ok := c.get("8"); ok {
		t.Fatal("least recently used kept")
	}
	if _, ok := c.get("7"); !ok {
		t.Fatal("recently used evicted")
	}
	c.put("huge", 101, 0) // over the whole budget: not cached
	if _, ok := c.get("huge"); ok {
		t.Fatal("an entry over the budget was cached")
	}
	var off *recordCache
	off.put("a", 1, 1)
	if _, ok := off.get("a"); ok {
		t.Fatal("a nil cache caches")
	}
}

// TestFitSizesMatchesTheListMeasurement: the sum of the items' sizes plus
// the separators is the measured size of the list, so admitting by sizes
// admits exactly what measuring the encoded list admits, at the cap and
// one byte over.
func TestFitSizesMatchesTheListMeasurement(t *testing.T) {
	var items []topology.Node
	var sizes []int64
	for i := range 50 {
		path := "pkg.step"
		n := topology.Node{NodeID: fmt.Sprintf("n%06d", i), Kind: "task", Label: fmt.Sprintf("label é \u2028 %d", i), CallablePath: &path}
		items = append(items, n)
		s, err := canonical.ASCIISize(&n, true)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, s)
	}
	list, err := canonical.ASCIISize(items, true)
	if err != nil {
		t.Fatal(err)
	}
	sum := int64(2 * (len(sizes) - 1))
	for _, s := range sizes {
		sum += s
	}
	if sum != list-2 {
		t.Fatalf("items %d + separators, list %d - 2", sum, list)
	}
	for _, slack := range []int64{0, -1} {
		f := &fitter{size: 1<<19 - sum - slack} // exactly at the cap (slack 0), or one over
		k := fitSizes(f, sizes)
		want := len(sizes)
		if slack < 0 {
			want--
		}
		if k != want {
			t.Errorf("slack %d: %d of %d fit", slack, k, len(sizes))
		}
	}
}

// TestValidateDetailPage: the envelope checks that replace validating the
// items again reject each broken invariant, and the generated validator
// still sees the rest of the envelope.
func TestValidateDetailPage(t *testing.T) {
	rev, sum := int64(1), int64(1)
	tok, long := "t", string(make([]byte, read.MaxCursorBytes+1))
	good := func() *read.DetailPage {
		return &read.DetailPage{SchemaVersion: 1, GeneratedAt: "2026-01-01T00:00:00Z", TaskID: "00000000-0000-4000-8000-000000000000",
			RunIdentity:  common.PublicRunIdentity{SchemaVersion: 1, RunID: "00000000-0000-4000-8000-000000000001", AttemptNumber: 1},
			Publication:  read.Publication{SummaryRevision: &sum, TopologyVersion: &rev, DetailRevision: &rev},
			Availability: summary.DetailAvailabilityAvailable, Complete: true, Schema: SchemaPage,
			Collection: string(read.CollectionNodeDetails), Items: []detail.NodeDetail{{}}, ReturnedCount: 1, NextCursor: &tok}
	}
	if err := validateDetailPage(good()); err != nil {
		t.Fatal(err)
	}
	for name, broken := range map[string]func(p *read.DetailPage){
		"count":         func(p *read.DetailPage) { p.ReturnedCount = 2 },
		"unreadable":    func(p *read.DetailPage) { p.Availability, p.Complete = summary.DetailAvailabilityMissing, false },
		"no revision":   func(p *read.DetailPage) { p.Publication.DetailRevision = nil },
		"cursor, empty": func(p *read.DetailPage) { p.Items, p.ReturnedCount = []detail.NodeDetail{}, 0 },
		"empty cursor":  func(p *read.DetailPage) { e := ""; p.NextCursor = &e },
		"long cursor":   func(p *read.DetailPage) { p.NextCursor = &long },
		"envelope":      func(p *read.DetailPage) { p.Schema = "x" },
	} {
		p := good()
		broken(p)
		if err := validateDetailPage(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
