// Hand-written, not generated: the cross-field rules of the live progress
// events (docs/contracts.md#live-events, docs/contracts.md#metrics-and-metadata) that tools/cuegen cannot translate. The same
// rules are written in CUE in schema/event.cue, each marked
// @rayflow(rule=ID); schema/differential_test.go breaks every rule once and
// checks that CUE and this file agree.

package event

import (
	"math/bits"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/rt"
	"github.com/rayflow/rayflow/gen/topology"
)

func ruleEdgesUnique(x *EdgesRegisteredPayload, p *rt.Path, e *rt.Errors) {
	for j := range x.Edges {
		for i := range j {
			if x.Edges[i] == x.Edges[j] {
				e.Add(p.Key("edges").Index(j), CodeRuleEdgesUnique, "edge repeated")
				return
			}
		}
	}
}

func ruleApplicationCurrentLeTotal(x *ApplicationProgressPayload, p *rt.Path, e *rt.Errors) {
	if x.Current > x.Total {
		e.Add(p.Key("current"), CodeRuleApplicationCurrentLeTotal, "current exceeds total")
	}
}

func ruleApplicationMetricsShape(x *ApplicationProgressPayload, p *rt.Path, e *rt.Errors) {
	detail.CheckMetrics(x.Metrics, p.Key("metrics"), e, CodeRuleApplicationMetricsShape)
}

func ruleMapCompletedLeSubmitted(x *MapProgressPayload, p *rt.Path, e *rt.Errors) {
	if x.Completed > x.Submitted {
		e.Add(p.Key("completed"), CodeRuleMapCompletedLeSubmitted, "completed exceeds submitted")
	}
}

func ruleSettledErrorIffFailed(x *NodeSettledPayload, p *rt.Path, e *rt.Errors) {
	if (x.State == SettledStateFailed) != (x.Error != nil) {
		e.Add(p.Key("error"), CodeRuleSettledErrorIffFailed, "error is set exactly when state is FAILED")
	}
}

func ruleSettledFailedPreviewWithoutValue(x *NodeSettledPayload, p *rt.Path, e *rt.Errors) {
	a := x.OutputPreview.Availability
	if x.State == SettledStateFailed && (a == detail.PreviewAvailabilityAvailable || a == detail.PreviewAvailabilityRedacted || a == detail.PreviewAvailabilityPending) {
		e.Add(p.Key("output_preview").Key("availability"), CodeRuleSettledFailedPreviewWithoutValue, "a FAILED node's preview carries no value and is not PENDING")
	}
}

func ruleSettledSucceededPreviewNotPending(x *NodeSettledPayload, p *rt.Path, e *rt.Errors) {
	if x.State == SettledStateSucceeded && x.OutputPreview.Availability == detail.PreviewAvailabilityPending {
		e.Add(p.Key("output_preview").Key("availability"), CodeRuleSettledSucceededPreviewNotPending, "a settled node's preview is not PENDING")
	}
}

// sumEq reports whether the exact sum of non-negative int64 parts equals want.
func sumEq(want int64, parts ...int64) bool {
	var s, carry uint64
	for _, v := range parts {
		var c uint64
		s, c = bits.Add64(s, uint64(v), 0)
		carry += c
	}
	return carry == 0 && s == uint64(want)
}

func ruleProducerOfferedSum(x *ProducerReportPayload, p *rt.Path, e *rt.Errors) {
	if !x.Saturated && !sumEq(x.Offered, x.Submitted, x.Superseded, x.LocallyDropped) {
		e.Add(p.Key("offered"), CodeRuleProducerOfferedSum, "offered must equal submitted + superseded + locally_dropped")
	}
}

func ruleProducerSubmittedSum(x *ProducerReportPayload, p *rt.Path, e *rt.Errors) {
	if !x.Saturated && !sumEq(x.Submitted, x.Acknowledged, x.ActorRejected, x.AckFailed, x.PendingAcknowledgements) {
		e.Add(p.Key("submitted"), CodeRuleProducerSubmittedSum, "submitted must equal acknowledged + actor_rejected + ack_failed + pending_acknowledgements")
	}
}

func ruleRegisteredMetadataDepth(x *NodeRegisteredPayload, p *rt.Path, e *rt.Errors) {
	if topology.MetadataDepth(x.RuntimeEnv) > topology.MetadataMaxDepth {
		e.Add(p.Key("runtime_env"), CodeRuleRegisteredMetadataDepth, "metadata nests more than %d containers", topology.MetadataMaxDepth)
	}
	if topology.MetadataDepth(x.RayOptions) > topology.MetadataMaxDepth {
		e.Add(p.Key("ray_options"), CodeRuleRegisteredMetadataDepth, "metadata nests more than %d containers", topology.MetadataMaxDepth)
	}
}
