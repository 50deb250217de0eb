// Hand-written, not generated: the cross-field rules of the node-detail
// payload and the output preview envelope (docs/contracts.md#node-detail, docs/contracts.md#metrics-and-metadata, docs/contracts.md#output-previews) that
// tools/cuegen cannot translate. The same rules are written in CUE in
// schema/detail.cue, each marked @rayflow(rule=ID); schema/differential_test.go
// breaks every rule once and checks that CUE and this file agree.

package detail

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/rayflow/rayflow/gen/rt"
)

// previewScan walks a preview value: the deepest container nesting (a
// top-level container is depth 1) and whether the marker occurs as a string
// or a key at any depth.
func previewScan(raw json.RawMessage) (depth int, marked bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return 0, false // the strict parser already accepted raw
	}
	var walk func(v any, d int)
	walk = func(v any, d int) {
		switch x := v.(type) {
		case string:
			marked = marked || x == PreviewMarker
		case []any:
			depth = max(depth, d+1)
			for _, y := range x {
				walk(y, d+1)
			}
		case map[string]any:
			depth = max(depth, d+1)
			for k, y := range x {
				marked = marked || k == PreviewMarker
				walk(y, d+1)
			}
		}
	}
	walk(v, 0)
	return depth, marked
}

func carries(a PreviewAvailability) bool {
	return a == PreviewAvailabilityAvailable || a == PreviewAvailabilityRedacted
}

func rulePreviewValueOnlyWhenCarried(x *OutputPreview, p *rt.Path, e *rt.Errors) {
	if !carries(x.Availability) && !bytes.Equal(x.Value, []byte("null")) {
		e.Add(p.Key("value"), CodeRulePreviewValueOnlyWhenCarried, "only AVAILABLE and REDACTED previews carry a value (null otherwise)")
	}
}

func ruleRedactedHasMarker(x *OutputPreview, p *rt.Path, e *rt.Errors) {
	if x.Availability == PreviewAvailabilityRedacted {
		if _, m := previewScan(x.Value); !m {
			e.Add(p.Key("value"), CodeRuleRedactedHasMarker, "a REDACTED preview must contain %q", PreviewMarker)
		}
	}
}

func ruleAvailableHasNoMarker(x *OutputPreview, p *rt.Path, e *rt.Errors) {
	if x.Availability == PreviewAvailabilityAvailable {
		if _, m := previewScan(x.Value); m {
			e.Add(p.Key("value"), CodeRuleAvailableHasNoMarker, "an AVAILABLE preview must not contain %q", PreviewMarker)
		}
	}
}

func rulePreviewValueDepth(x *OutputPreview, p *rt.Path, e *rt.Errors) {
	if d, _ := previewScan(x.Value); d > PreviewMaxDepth {
		e.Add(p.Key("value"), CodeRulePreviewValueDepth, "preview value nests %d containers, more than %d", d, PreviewMaxDepth)
	}
}

func ruleProgressPercentMatches(x *NodeProgress, p *rt.Path, e *rt.Errors) {
	ok := true
	switch {
	case x.Total == 0:
		ok = x.Percent == 100
	case x.Current <= x.Total:
		r := x.Current / x.Total * 100
		ok = x.Percent-r <= 0.05 && r-x.Percent <= 0.05
	}
	if !ok {
		e.Add(p.Key("percent"), CodeRuleProgressPercentMatches, "percent must be 100 when total is 0, else round(current/total*100, 1)")
	}
}

func ruleProgressCurrentLeTotal(x *NodeProgress, p *rt.Path, e *rt.Errors) {
	if x.Total > 0 && x.Current > x.Total {
		e.Add(p.Key("current"), CodeRuleProgressCurrentLeTotal, "current exceeds total")
	}
}

func ruleMetricsShape(x *NodeProgress, p *rt.Path, e *rt.Errors) {
	CheckMetrics(x.Metrics, p.Key("metrics"), e, CodeRuleMetricsShape)
}

// MetricValueOK reports whether one metrics entry has the shape of docs/contracts.md#metrics-and-metadata: key
// 1–64 UTF-8 bytes; value null, bool, an int64 literal, a finite number, or
// a string of at most 256 UTF-8 bytes.
func MetricValueOK(k string, raw json.RawMessage) bool {
	if len(k) < 1 || len(k) > 64 || len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case 'n', 't', 'f':
		return true
	case '{', '[':
		return false
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return false
		}
		return len(s) <= 256
	}
	if rt.IsIntLiteral(string(raw)) {
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return true // finite: the strict parser rejects overflow
}

// CheckMetrics reports the first malformed entry of a metrics object (keys
// in sorted order) under code.
func CheckMetrics(m map[string]json.RawMessage, p *rt.Path, e *rt.Errors, code string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !MetricValueOK(k, m[k]) {
			e.Add(p.Key(k), code, "metric %q: keys are 1-64 bytes; values null, bool, int64, finite number or a string of at most 256 bytes", k)
			return
		}
	}
}

func ruleFanoutInFlight(x *NodeFanout, p *rt.Path, e *rt.Errors) {
	if x.InFlightItems != x.SubmittedItems-x.CompletedItems {
		e.Add(p.Key("in_flight_items"), CodeRuleFanoutInFlight, "in_flight_items must equal submitted_items - completed_items")
	}
}

func ruleFanoutWithinMaxItems(x *NodeFanout, p *rt.Path, e *rt.Errors) {
	if x.MaxItems != nil && x.SubmittedItems > *x.MaxItems {
		e.Add(p.Key("submitted_items"), CodeRuleFanoutWithinMaxItems, "submitted_items exceeds max_items")
	}
}

func rulePendingNotStarted(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStatePending && (x.StartedAt != nil || x.FinishedAt != nil || x.Error != nil) {
		e.Add(p.Key("state"), CodeRulePendingNotStarted, "a PENDING node has no started_at, finished_at or error")
	}
}

func ruleRunningStartedNotFinished(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStateRunning && (x.StartedAt == nil || x.FinishedAt != nil || x.Error != nil) {
		e.Add(p.Key("state"), CodeRuleRunningStartedNotFinished, "a RUNNING node has started_at and no finished_at or error")
	}
}

func ruleSucceededFinishedWithoutError(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStateSucceeded && (x.StartedAt == nil || x.FinishedAt == nil || x.Error != nil) {
		e.Add(p.Key("state"), CodeRuleSucceededFinishedWithoutError, "a SUCCEEDED node has started_at and finished_at and no error")
	}
}

func ruleSucceededProgressComplete(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStateSucceeded && x.Progress != nil && x.Progress.Percent != 100 {
		e.Add(p.Key("progress").Key("percent"), CodeRuleSucceededProgressComplete, "a SUCCEEDED node's progress is 100")
	}
}

func ruleSucceededFanoutDrained(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStateSucceeded && x.Fanout != nil && (x.Fanout.InFlightItems != 0 || !x.Fanout.InputExhausted) {
		e.Add(p.Key("fanout"), CodeRuleSucceededFanoutDrained, "a SUCCEEDED map has no items in flight and its input exhausted")
	}
}

func ruleFailedFinishedWithError(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.State == NodeStateFailed && (x.FinishedAt == nil || x.Error == nil) {
		e.Add(p.Key("state"), CodeRuleFailedFinishedWithError, "a FAILED node has finished_at and an error")
	}
}

func ruleTerminalPreviewNotPending(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if (x.State == NodeStateSucceeded || x.State == NodeStateFailed) && x.OutputPreview.Availability == PreviewAvailabilityPending {
		e.Add(p.Key("output_preview").Key("availability"), CodeRuleTerminalPreviewNotPending, "a terminal node's preview is not PENDING")
	}
}

func rulePreviewValueOnlyOnSuccess(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if carries(x.OutputPreview.Availability) && x.State != NodeStateSucceeded {
		e.Add(p.Key("output_preview").Key("availability"), CodeRulePreviewValueOnlyOnSuccess, "only a SUCCEEDED node carries a preview value")
	}
}

// PreviewMaxSafeInteger is 2^53−1, the integer bound of preview values.
const PreviewMaxSafeInteger = 1<<53 - 1

// previewShapeOK checks the docs/contracts.md#output-previews shape limits of a preview value: at most 32
// items in all containers together, 16 per list, 15 entries per object,
// keys 1–64 UTF-8 bytes, strings ≤ 256 UTF-8 bytes, integer literals within
// ±(2^53−1). (Floats are finite: the strict parser has no others.)
func previewShapeOK(raw json.RawMessage) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return true // the strict parser already accepted raw
	}
	items := 0
	var ok func(v any) bool
	ok = func(v any) bool {
		switch x := v.(type) {
		case string:
			return len(x) <= 256
		case json.Number:
			if !rt.IsIntLiteral(string(x)) {
				return true
			}
			n, err := strconv.ParseInt(string(x), 10, 64)
			return err == nil && n >= -PreviewMaxSafeInteger && n <= PreviewMaxSafeInteger
		case []any:
			items += len(x)
			if len(x) > 16 {
				return false
			}
			for _, y := range x {
				if !ok(y) {
					return false
				}
			}
		case map[string]any:
			items += len(x)
			if len(x) > 15 {
				return false
			}
			for k, y := range x {
				if len(k) < 1 || len(k) > 64 || !ok(y) {
					return false
				}
			}
		}
		return true
	}
	return ok(v) && items <= 32
}

func rulePreviewValueShape(x *OutputPreview, p *rt.Path, e *rt.Errors) {
	if !previewShapeOK(x.Value) {
		e.Add(p.Key("value"), CodeRulePreviewValueShape, "preview value exceeds the v1 shape limits (32 items, 16 per list, 15 per object, keys 1-64 bytes, strings 256 bytes, integers within 2^53-1)")
	}
}

// notAfter compares canonical timestamps in time order; an unparseable one
// (a calendar-invalid date) fails, as CUE's time.ToUnix does.
func notAfter(a, b string) bool {
	ta, err1 := time.ParseInLocation(time.RFC3339Nano, a, time.UTC)
	tb, err2 := time.ParseInLocation(time.RFC3339Nano, b, time.UTC)
	return err1 == nil && err2 == nil && !ta.After(tb)
}

func ruleStartedNotAfterFinished(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	if x.StartedAt != nil && x.FinishedAt != nil && !notAfter(*x.StartedAt, *x.FinishedAt) {
		e.Add(p.Key("finished_at"), CodeRuleStartedNotAfterFinished, "finished_at must not be before started_at")
	}
}

func ruleRecentEventsOrdered(x *NodeDetail, p *rt.Path, e *rt.Errors) {
	for i := 1; i < len(x.RecentEvents); i++ {
		if !notAfter(x.RecentEvents[i-1].Timestamp, x.RecentEvents[i].Timestamp) {
			e.Add(p.Key("recent_events").Index(i), CodeRuleRecentEventsOrdered, "recent events must be in time order")
			return
		}
	}
}
