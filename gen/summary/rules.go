// Hand-written, not generated: the cross-field rules of #Summary
// (docs/contracts.md#summary-v3) that tools/cuegen cannot translate. The same rules are written in CUE
// in schema/summary.cue, each marked @rayflow(rule=ID); the generated code
// calls one function per ID (a missing one fails to compile), and
// schema/differential_test.go breaks every rule once and checks that CUE and
// this file agree.

package summary

import (
	"math/bits"
	"sort"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/rt"
)

func (x *Summary) active() bool { return x.State == StateRunning || x.State == StateCancelling }

func ruleNodeDiscoveredLeDeclared(x *Summary, p *rt.Path, e *rt.Errors) {
	if d := x.NodeCounts.Declared; d != nil && x.NodeCounts.Discovered > *d {
		e.Add(p.Key("node_counts").Key("discovered"), CodeRuleNodeDiscoveredLeDeclared, "discovered nodes exceed declared nodes")
	}
}

func ruleEdgeDiscoveredLeDeclared(x *Summary, p *rt.Path, e *rt.Errors) {
	if d := x.EdgeCounts.Declared; d != nil && x.EdgeCounts.Discovered > *d {
		e.Add(p.Key("edge_counts").Key("discovered"), CodeRuleEdgeDiscoveredLeDeclared, "discovered edges exceed declared edges")
	}
}

func ruleNodeRetainedTopologyLeDiscovered(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.NodeCounts.RetainedTopology > x.NodeCounts.Discovered {
		e.Add(p.Key("node_counts").Key("retained_topology"), CodeRuleNodeRetainedTopologyLeDiscovered, "retained topology nodes exceed discovered nodes")
	}
}

func ruleRetainedDetailLeRetainedTopology(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.NodeCounts.RetainedDetail > x.NodeCounts.RetainedTopology {
		e.Add(p.Key("node_counts").Key("retained_detail"), CodeRuleRetainedDetailLeRetainedTopology, "retained detail nodes exceed retained topology nodes")
	}
}

func ruleEdgeRetainedTopologyLeDiscovered(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.EdgeCounts.RetainedTopology > x.EdgeCounts.Discovered {
		e.Add(p.Key("edge_counts").Key("retained_topology"), CodeRuleEdgeRetainedTopologyLeDiscovered, "retained topology edges exceed discovered edges")
	}
}

func ruleRetainedTopologyNeedsTopologyVersion(x *Summary, p *rt.Path, e *rt.Errors) {
	if (x.NodeCounts.RetainedTopology > 0 || x.EdgeCounts.RetainedTopology > 0) && x.TopologyVersion == nil {
		e.Add(p.Key("topology_version"), CodeRuleRetainedTopologyNeedsTopologyVersion, "retained topology needs a topology_version")
	}
}

func ruleRetainedDetailNeedsDetailRevision(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.NodeCounts.RetainedDetail > 0 && x.DetailRevision == nil {
		e.Add(p.Key("detail_revision"), CodeRuleRetainedDetailNeedsDetailRevision, "retained detail needs a detail_revision")
	}
}

func ruleStateCountsSumToDiscovered(x *Summary, p *rt.Path, e *rt.Errors) {
	c := x.NodeCounts
	// exact sum of four non-negative int64 values
	s, c1 := bits.Add64(uint64(c.Pending), uint64(c.Running), 0)
	s, c2 := bits.Add64(s, uint64(c.Succeeded), 0)
	s, c3 := bits.Add64(s, uint64(c.Failed), 0)
	if c1+c2+c3 != 0 || s != uint64(c.Discovered) {
		e.Add(p.Key("node_counts"), CodeRuleStateCountsSumToDiscovered, "pending+running+succeeded+failed must equal discovered")
	}
}

func ruleSucceededIsComplete(x *Summary, p *rt.Path, e *rt.Errors) {
	c := x.NodeCounts
	if x.State == StateSucceeded && (c.Pending != 0 || c.Running != 0 || c.Failed != 0 || c.Succeeded != c.Discovered || x.ProgressPercent != 100) {
		e.Add(p.Key("state"), CodeRuleSucceededIsComplete, "SUCCEEDED needs every discovered node succeeded and progress 100")
	}
}

func hasRevision(a DetailAvailability) bool {
	switch a {
	case DetailAvailabilityAvailable, DetailAvailabilityTruncated, DetailAvailabilityExpired, DetailAvailabilityMissing, DetailAvailabilityCorrupt:
		return true
	}
	return false
}

func ruleAvailabilityMatchesDetailRevision(x *Summary, p *rt.Path, e *rt.Errors) {
	if hasRevision(x.Detail.Availability) != (x.DetailRevision != nil) {
		e.Add(p.Key("detail").Key("availability"), CodeRuleAvailabilityMatchesDetailRevision, "availability %s does not match detail_revision", x.Detail.Availability)
	}
}

func ruleCompleteIffAvailable(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.Detail.Complete != (x.Detail.Availability == DetailAvailabilityAvailable) {
		e.Add(p.Key("detail").Key("complete"), CodeRuleCompleteIffAvailable, "complete must be true exactly when availability is AVAILABLE")
	}
}

func ruleReasonsIffTruncated(x *Summary, p *rt.Path, e *rt.Errors) {
	if (len(x.Detail.TruncationReasons) > 0) != (x.Detail.Availability == DetailAvailabilityTruncated) {
		e.Add(p.Key("detail").Key("truncation_reasons"), CodeRuleReasonsIffTruncated, "truncation reasons must be given exactly when availability is TRUNCATED")
	}
}

func ruleDisabledIffPolicyDisabled(x *Summary, p *rt.Path, e *rt.Errors) {
	if (x.ReportingPolicy == common.ReportingPolicyDisabled) != (x.Detail.Availability == DetailAvailabilityDisabled) {
		e.Add(p.Key("detail").Key("availability"), CodeRuleDisabledIffPolicyDisabled, "availability DISABLED exactly when reporting_policy is disabled")
	}
}

func ruleOmittedNeedsSummaryOnlyPolicy(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.Detail.Availability == DetailAvailabilityOmittedByPolicy && x.ReportingPolicy != common.ReportingPolicySampled && x.ReportingPolicy != common.ReportingPolicyTerminalOnly {
		e.Add(p.Key("detail").Key("availability"), CodeRuleOmittedNeedsSummaryOnlyPolicy, "OMITTED_BY_POLICY needs reporting_policy sampled or terminal_only")
	}
}

func ruleManifestIffTopologyVersion(x *Summary, p *rt.Path, e *rt.Errors) {
	if (x.Storage.ManifestID != nil) != (x.TopologyVersion != nil) {
		e.Add(p.Key("storage").Key("manifest_id"), CodeRuleManifestIffTopologyVersion, "manifest_id must be set exactly when topology_version is")
	}
}

func ruleExpiredOnlyTerminal(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.Detail.Availability == DetailAvailabilityExpired && x.active() {
		e.Add(p.Key("detail").Key("availability"), CodeRuleExpiredOnlyTerminal, "EXPIRED only in a terminal state")
	}
}

func ruleDetailRevisionNeedsTopologyVersion(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.DetailRevision != nil && x.TopologyVersion == nil {
		e.Add(p.Key("topology_version"), CodeRuleDetailRevisionNeedsTopologyVersion, "detail_revision needs a topology_version")
	}
}

func ruleAvailableRetainsAllDetail(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.Detail.Availability == DetailAvailabilityAvailable && x.NodeCounts.RetainedDetail != x.NodeCounts.Discovered {
		e.Add(p.Key("node_counts").Key("retained_detail"), CodeRuleAvailableRetainsAllDetail, "AVAILABLE needs retained_detail equal to discovered")
	}
}

func ruleExpiryNeedsDetailRevision(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.Retention.DetailExpiresAt != nil && x.DetailRevision == nil {
		e.Add(p.Key("retention").Key("detail_expires_at"), CodeRuleExpiryNeedsDetailRevision, "an expiry needs a detail_revision")
	}
}

func ruleTerminalOutcomeIffTerminalState(x *Summary, p *rt.Path, e *rt.Errors) {
	if (x.Terminal.Outcome == nil) != x.active() {
		e.Add(p.Key("terminal").Key("outcome"), CodeRuleTerminalOutcomeIffTerminalState, "outcome must be null exactly in a non-terminal state")
	}
}

func ruleActiveHasNoFinishOrExpiry(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.active() && (x.Timestamps.FinishedAt != nil || x.Terminal.FinishedAt != nil || x.Retention.DetailExpiresAt != nil) {
		e.Add(p.Key("state"), CodeRuleActiveHasNoFinishOrExpiry, "a non-terminal summary has no finished_at and no detail_expires_at")
	}
}

func eqPtr(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func ruleTerminalMatchesState(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.active() {
		return
	}
	if x.Terminal.Outcome == nil || string(*x.Terminal.Outcome) != string(x.State) || x.Timestamps.FinishedAt == nil || !eqPtr(x.Terminal.FinishedAt, x.Timestamps.FinishedAt) {
		e.Add(p.Key("terminal"), CodeRuleTerminalMatchesState, "terminal outcome must equal state and terminal.finished_at must equal timestamps.finished_at")
	}
}

func parseTS(s string) (time.Time, bool) {
	t, err := time.ParseInLocation(time.RFC3339Nano, s, time.UTC)
	return t, err == nil
}

// maxTimestamp is datetime.max - 30 days.
var maxTimestamp, _ = parseTS(MaxTimestamp)

func ruleTerminalExpiryExact(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.active() || x.DetailRevision == nil || x.Timestamps.FinishedAt == nil {
		return
	}
	fp := p.Key("retention").Key("detail_expires_at")
	if x.Retention.DetailExpiresAt == nil {
		e.Add(fp, CodeRuleTerminalExpiryExact, "a terminal summary with detail needs detail_expires_at")
		return
	}
	exp, ok1 := parseTS(*x.Retention.DetailExpiresAt)
	fin, ok2 := parseTS(*x.Timestamps.FinishedAt)
	if !ok1 || !ok2 {
		return // reported by timestamps_valid
	}
	if exp.Unix() != fin.Unix()+x.Retention.DetailDays*86400 || exp.Nanosecond() != fin.Nanosecond() {
		e.Add(fp, CodeRuleTerminalExpiryExact, "detail_expires_at must be finished_at + detail_days exactly")
	}
}

func ruleTimestampsValid(x *Summary, p *rt.Path, e *rt.Errors) {
	check := func(s *string, fp *rt.Path, bounded bool) {
		if s == nil {
			return
		}
		t, ok := parseTS(*s)
		if !ok || bounded && t.Unix() > maxTimestamp.Unix() {
			e.Add(fp, CodeRuleTimestampsValid, "not a valid canonical UTC timestamp within range")
		}
	}
	check(&x.Timestamps.StartedAt, p.Key("timestamps").Key("started_at"), true)
	check(&x.Timestamps.UpdatedAt, p.Key("timestamps").Key("updated_at"), true)
	check(x.Timestamps.FinishedAt, p.Key("timestamps").Key("finished_at"), true)
	check(x.Terminal.FinishedAt, p.Key("terminal").Key("finished_at"), true)
	check(x.Retention.DetailExpiresAt, p.Key("retention").Key("detail_expires_at"), false)
}

func ruleTimestampsNonDecreasing(x *Summary, p *rt.Path, e *rt.Errors) {
	s, ok1 := parseTS(x.Timestamps.StartedAt)
	u, ok2 := parseTS(x.Timestamps.UpdatedAt)
	if ok1 && ok2 && s.After(u) {
		e.Add(p.Key("timestamps").Key("updated_at"), CodeRuleTimestampsNonDecreasing, "updated_at is before started_at")
	}
	if x.Timestamps.FinishedAt != nil {
		f, ok3 := parseTS(*x.Timestamps.FinishedAt)
		if ok2 && ok3 && u.After(f) {
			e.Add(p.Key("timestamps").Key("finished_at"), CodeRuleTimestampsNonDecreasing, "finished_at is before updated_at")
		}
	}
}

func ruleReservedRevisionTerminal(x *Summary, p *rt.Path, e *rt.Errors) {
	if x.SummaryRevision == ReservedRevision && x.active() {
		e.Add(p.Key("summary_revision"), CodeRuleReservedRevisionTerminal, "summary_revision 2^63-1 is reserved for terminal states")
	}
}

func ruleTruncationReasonsSorted(x *Summary, p *rt.Path, e *rt.Errors) {
	r := x.Detail.TruncationReasons
	if !sort.SliceIsSorted(r, func(i, j int) bool { return r[i] < r[j] }) {
		e.Add(p.Key("detail").Key("truncation_reasons"), CodeRuleTruncationReasonsSorted, "truncation reasons must be sorted")
	}
}

func ruleUnreportedRequiresSuccess(x *Summary, p *rt.Path, e *rt.Errors) {
	for _, r := range x.Detail.TruncationReasons {
		if r == TruncationReasonTerminalStateUnreported {
			if x.State != StateSucceeded || x.Terminal.Outcome == nil || *x.Terminal.Outcome != TerminalStateSucceeded {
				e.Add(p.Key("detail").Key("truncation_reasons"), CodeRuleUnreportedRequiresSuccess, "terminal_state_unreported needs state and outcome SUCCEEDED")
			}
			return
		}
	}
}
