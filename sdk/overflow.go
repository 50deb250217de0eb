package sdk

import (
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Detailed-snapshot bounds (docs/contracts.md#snapshot-bounds-and-the-overflow-form).
const (
	maxSchemaList     = 1024 // entry ports, edges, callables, map admission
	maxByNodeEnvs     = 256
	maxIdentifierRune = 2048
)

// overflowReasons lists why p cannot be stored in detail; fullBytes is the
// length of its complete canonical form.
func (mz *materializer) overflowReasons(p *plan.Plan, fullBytes int) []plan.OverflowReason {
	var reasons []plan.OverflowReason
	if len(p.Nodes) > plan.MaxPlanNodes {
		reasons = append(reasons, plan.OverflowReasonNodeLimit)
	}
	if len(p.Topology.EntryPorts) > maxSchemaList || len(p.Edges) > maxSchemaList || len(p.Callables) > maxSchemaList ||
		len(mz.mapLimits) > maxSchemaList || len(p.Environments.ByNode) > maxByNodeEnvs {
		reasons = append(reasons, plan.OverflowReasonSchemaLimit)
	}
	long := func(s string) bool { return utf8.RuneCountInString(s) > maxIdentifierRune }
	idTooLong := false
	for n := range mz.prog.All() {
		idTooLong = idTooLong || long(n.ID)
	}
	for _, e := range p.Edges {
		idTooLong = idTooLong || long(e.Source) || long(e.Target)
	}
	for _, r := range p.Topology.ResultPorts {
		idTooLong = idTooLong || long(r)
	}
	if idTooLong {
		reasons = append(reasons, plan.OverflowReasonIdentifierLimit)
	}
	if len(reasons) == 0 && fullBytes > plan.MaxPlanBytes {
		reasons = append(reasons, plan.OverflowReasonByteLimit)
	}
	return reasons
}

// overflow compacts p into the overflow form, keeping a digest of the
// complete manifest (hashed without caps) so the two stay bound.
func (mz *materializer) overflow(p *plan.Plan, reasons []plan.OverflowReason, full []byte) *plan.Plan {
	o := *p
	entries, results := int64(len(p.Topology.EntryPorts)), int64(len(p.Topology.ResultPorts))
	o.Topology = plan.Topology{Class: p.Topology.Class, EntryPorts: []string{}, ResultPorts: []string{}, EntryPortCount: &entries, ResultPortCount: &results}
	o.Nodes, o.Callables, o.Edges = []plan.Node{}, []plan.Callable{}, []plan.Edge{}
	pt := p.PhysicalTopology
	if len(pt.Stages) > 0 || len(pt.Actors) > 0 || len(pt.PlacementRelationships) > 0 {
		var buffers, folds int64
		for _, a := range pt.Actors {
			if _, ok := a.(*plan.ResultFoldActor); ok {
				folds++
			} else {
				buffers++
			}
		}
		sum := &plan.PhysicalOverflowSummary{StageCount: int64(len(pt.Stages)), ActorCount: int64(len(pt.Actors)),
			ResultBufferActorCount: buffers, PlacementRelationshipCount: int64(len(pt.PlacementRelationships)), DetailsOmitted: true}
		if folds > 0 {
			sum.ResultFoldActorCount = &folds
		}
		o.PhysicalTopology = plan.PhysicalTopology{NodeModel: pt.NodeModel, Stages: []plan.Stage{}, Actors: []plan.Actor{},
			PlacementRelationships: []plan.PlacementRelationship{}, OverflowSummary: sum}
	}
	maps := int64(len(mz.mapLimits))
	bounded := !mz.unboundedMap
	o.Capabilities.Admission = plan.Admission{MapCount: &maps, AllMapsBounded: &bounded, MaximumBufferedResults: p.Capabilities.Admission.MaximumBufferedResults}
	o.Environments = plan.Environments{Outer: p.Environments.Outer, ByNode: map[string]plan.EnvironmentRef{}}
	o.Snapshot = &plan.Snapshot{State: "overflow", Reasons: reasons, SourceDigest: canonical.DomainPlan.Sum(full).String(),
		ObservedNodeCount: int64(len(p.Nodes)), ObservedEdgeCount: int64(len(p.Edges)),
		ObservedCallableCount: int64(len(p.Callables)), ObservedCanonicalBytes: int64(len(full))}
	return &o
}
