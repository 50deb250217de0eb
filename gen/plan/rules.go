// Hand-written, not generated: the cross-field rules of #PlanSelection
// (docs/contracts.md#plan-selection) that tools/cuegen cannot translate. The same rules are
// written in CUE in schema/plan_selection.cue, each marked
// @rayflow(rule=ID); schema/differential_test.go breaks each once.

package plan

import (
	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/rt"
)

func ruleSelectedIsEligible(x *Selection, p *rt.Path, e *rt.Errors) {
	for _, s := range x.EligibleStrategies {
		if s == x.SelectedStrategy {
			return
		}
	}
	e.Add(p.Key("selected_strategy"), CodeRuleSelectedIsEligible, "selected_strategy is not among eligible_strategies")
}

func ruleTotalCoversRejections(x *Selection, p *rt.Path, e *rt.Errors) {
	if x.TotalRejections < int64(len(x.Rejections)) {
		e.Add(p.Key("total_rejections"), CodeRuleTotalCoversRejections, "total_rejections is less than the number of rejections")
	}
}

func ruleTruncatedIffMore(x *Selection, p *rt.Path, e *rt.Errors) {
	if x.RejectionsTruncated != (x.TotalRejections > int64(len(x.Rejections))) {
		e.Add(p.Key("rejections_truncated"), CodeRuleTruncatedIffMore, "rejections_truncated must be true exactly when total_rejections exceeds the kept rejections")
	}
}

func ruleLocalReportsNothing(x *Selection, p *rt.Path, e *rt.Errors) {
	if x.SelectedStrategy == "local" && x.ReportingPolicy != common.ReportingPolicyDisabled {
		e.Add(p.Key("reporting_policy"), CodeRuleLocalReportsNothing, "the local strategy requires reporting_policy disabled")
	}
}
