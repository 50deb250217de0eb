// Hand-written, not generated: the cross-field rules of the read-service
// envelopes and cursor payloads (docs/contracts.md#reads-cursors-and-error-codes) that tools/cuegen cannot
// translate. The same rules are written in CUE in schema/read.cue, each
// marked @rayflow(rule=ID); schema/differential_test.go breaks every rule
// once and checks that CUE and this file agree.

package read

import (
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/rt"
	"github.com/rayflow/rayflow/gen/summary"
)

// envelope is every record that embeds #ReadEnvelope: the envelope rules
// are declared once in CUE and run on each of them.
type envelope interface {
	base() (pub *Publication, avail summary.DetailAvailability, complete bool)
}

func (x *Envelope) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *Summary) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *PageCommon) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *NodePage) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *EdgePage) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *DetailPage) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}
func (x *Node) base() (*Publication, summary.DetailAvailability, bool) {
	return &x.Publication, x.Availability, x.Complete
}

func ruleReadCompleteIffAvailable(x envelope, p *rt.Path, e *rt.Errors) {
	_, avail, complete := x.base()
	if complete != (avail == summary.DetailAvailabilityAvailable) {
		e.Add(p.Key("complete"), CodeRuleReadCompleteIffAvailable, "complete must be true exactly when availability is AVAILABLE")
	}
}

func ruleReadDetailRevisionNeedsTopologyVersion(x envelope, p *rt.Path, e *rt.Errors) {
	pub, _, _ := x.base()
	if pub.DetailRevision != nil && pub.TopologyVersion == nil {
		e.Add(p.Key("publication").Key("detail_revision"), CodeRuleReadDetailRevisionNeedsTopologyVersion, "a detail revision needs a topology version")
	}
}

// readable: rows are only served from an AVAILABLE or TRUNCATED publication.
func readable(a summary.DetailAvailability) bool {
	return a == summary.DetailAvailabilityAvailable || a == summary.DetailAvailabilityTruncated
}

func eqPtr(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func ruleSummaryIffSource(x *Summary, p *rt.Path, e *rt.Errors) {
	if (x.Summary == nil) != (x.SourceSchemaVersion == nil) {
		e.Add(p.Key("summary"), CodeRuleSummaryIffSource, "summary must be null exactly when source_schema_version is null")
	}
}

func ruleSummaryMatchesEnvelope(x *Summary, p *rt.Path, e *rt.Errors) {
	s := x.Summary
	if s == nil {
		return
	}
	ri := s.RunIdentity
	ok := ri.RunID == x.RunIdentity.RunID && ri.AttemptNumber == x.RunIdentity.AttemptNumber &&
		ri.ExecutionGeneration == x.RunIdentity.ExecutionGeneration &&
		x.Publication.SummaryRevision != nil && s.SummaryRevision == *x.Publication.SummaryRevision &&
		eqPtr(s.TopologyVersion, x.Publication.TopologyVersion) && eqPtr(s.DetailRevision, x.Publication.DetailRevision) &&
		s.Detail.Availability == x.Availability
	if !ok {
		e.Add(p.Key("summary"), CodeRuleSummaryMatchesEnvelope, "the summary must have the envelope's run identity, publication and availability")
	}
}

func pageCount(n int64, items int, code string, p *rt.Path, e *rt.Errors) {
	if n != int64(items) {
		e.Add(p.Key("returned_count"), code, "returned_count must equal the number of items")
	}
}

func pageReadable(items int, avail summary.DetailAvailability, epoch *int64, code string, p *rt.Path, e *rt.Errors) {
	if items > 0 && !(readable(avail) && epoch != nil) {
		e.Add(p.Key("items"), code, "items need an AVAILABLE or TRUNCATED publication with its revision")
	}
}

func pageCursor(items int, next *string, code string, p *rt.Path, e *rt.Errors) {
	if next != nil && items == 0 {
		e.Add(p.Key("next_cursor"), code, "a next cursor follows a non-empty page")
	}
}

func ruleNodePageCount(x *NodePage, p *rt.Path, e *rt.Errors) {
	pageCount(x.ReturnedCount, len(x.Items), CodeRuleNodePageCount, p, e)
}

func ruleNodePageReadable(x *NodePage, p *rt.Path, e *rt.Errors) {
	pageReadable(len(x.Items), x.Availability, x.Publication.TopologyVersion, CodeRuleNodePageReadable, p, e)
}

func ruleNodePageCursorAfterItems(x *NodePage, p *rt.Path, e *rt.Errors) {
	pageCursor(len(x.Items), x.NextCursor, CodeRuleNodePageCursorAfterItems, p, e)
}

// ruleNodePageSorted: node ids strictly increase (byte order = code point order).
func ruleNodePageSorted(x *NodePage, p *rt.Path, e *rt.Errors) {
	for i := 1; i < len(x.Items); i++ {
		if !(x.Items[i-1].NodeID < x.Items[i].NodeID) {
			e.Add(p.Key("items").Index(i), CodeRuleNodePageSorted, "items must be sorted by node_id without duplicates")
			return
		}
	}
}

func ruleEdgePageCount(x *EdgePage, p *rt.Path, e *rt.Errors) {
	pageCount(x.ReturnedCount, len(x.Items), CodeRuleEdgePageCount, p, e)
}

func ruleEdgePageReadable(x *EdgePage, p *rt.Path, e *rt.Errors) {
	pageReadable(len(x.Items), x.Availability, x.Publication.TopologyVersion, CodeRuleEdgePageReadable, p, e)
}

func ruleEdgePageCursorAfterItems(x *EdgePage, p *rt.Path, e *rt.Errors) {
	pageCursor(len(x.Items), x.NextCursor, CodeRuleEdgePageCursorAfterItems, p, e)
}

// ruleEdgePageSorted: (source, target) strictly increases.
func ruleEdgePageSorted(x *EdgePage, p *rt.Path, e *rt.Errors) {
	for i := 1; i < len(x.Items); i++ {
		a, b := x.Items[i-1], x.Items[i]
		if !(a.Source < b.Source || a.Source == b.Source && a.Target < b.Target) {
			e.Add(p.Key("items").Index(i), CodeRuleEdgePageSorted, "items must be sorted by (source, target) without duplicates")
			return
		}
	}
}

func ruleDetailPageCount(x *DetailPage, p *rt.Path, e *rt.Errors) {
	pageCount(x.ReturnedCount, len(x.Items), CodeRuleDetailPageCount, p, e)
}

func ruleDetailPageReadable(x *DetailPage, p *rt.Path, e *rt.Errors) {
	pageReadable(len(x.Items), x.Availability, x.Publication.DetailRevision, CodeRuleDetailPageReadable, p, e)
}

func ruleDetailPageCursorAfterItems(x *DetailPage, p *rt.Path, e *rt.Errors) {
	pageCursor(len(x.Items), x.NextCursor, CodeRuleDetailPageCursorAfterItems, p, e)
}

func ruleFoundIffItem(x *Node, p *rt.Path, e *rt.Errors) {
	if x.Found != (x.Item != nil) {
		e.Add(p.Key("found"), CodeRuleFoundIffItem, "found must be true exactly when item is not null")
	}
}

func ruleFoundNodeReadable(x *Node, p *rt.Path, e *rt.Errors) {
	if x.Found && !(readable(x.Availability) && x.Publication.DetailRevision != nil) {
		e.Add(p.Key("availability"), CodeRuleFoundNodeReadable, "a found node needs an AVAILABLE or TRUNCATED publication with a detail revision")
	}
}

// cursorOffset: the offset within a topology page is below the page item cap.
func cursorOffset(pos []int64, code string, p *rt.Path, e *rt.Errors) {
	if len(pos) == 2 && pos[1] >= 256 {
		e.Add(p.Key("position").Index(1), code, "the offset within a topology page must be below 256")
	}
}

func ruleNodeCursorPosition(x *NodeCursor, p *rt.Path, e *rt.Errors) {
	cursorOffset(x.Position, CodeRuleNodeCursorPosition, p, e)
}

func ruleEdgeCursorPosition(x *EdgeCursor, p *rt.Path, e *rt.Errors) {
	cursorOffset(x.Position, CodeRuleEdgeCursorPosition, p, e)
}

// ruleDetailCursorFilters: each filter is ["state", <node state>].
func ruleDetailCursorFilters(x *DetailCursor, p *rt.Path, e *rt.Errors) {
	for i, f := range x.Filters {
		if len(f) != 2 || f[0] != "state" || !detail.NodeState(f[1]).Valid() {
			e.Add(p.Key("filters").Index(i), CodeRuleDetailCursorFilters, "a filter is [\"state\", PENDING|RUNNING|SUCCEEDED|FAILED]")
			return
		}
	}
}
