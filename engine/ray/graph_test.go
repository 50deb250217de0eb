package ray

import (
	"context"
	"fmt"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

var (
	// diamondFlow: four nodes and four edges (inc -> {inc, double} -> sum).
	diamondFlow = sdk.Then(sdk.Step(Inc), sdk.Then(sdk.Group(sdk.Step(Inc), sdk.Step(Double)), sdk.Step(Sum)))
	chain4Flow  = sdk.Then(sdk.Then(sdk.Step(Inc), sdk.Step(Inc)), sdk.Then(sdk.Step(Inc), sdk.Step(Inc)))
	chain5Flow  = sdk.Then(chain4Flow, sdk.Step(Inc))
)

func edgeList(s *progress.Snapshot) string {
	out := ""
	for _, e := range s.Graph.Edges {
		out += fmt.Sprintf("%s->%s ", e.Source, e.Target)
	}
	return out
}

// The snapshot has the plan's edges and each leaf's real Ray execution
// identity from its STARTED event.
func TestProgressGraph(t *testing.T) {
	needRay(t)
	got, pub, err := runPolicy(context.Background(), diamondFlow, 1, "")
	if err != nil || got != 7 {
		t.Fatalf("got %d, %v", got, err)
	}
	s := pub.Snapshot
	if want := "0.0->0.1.g0 0.0->0.1.g1 0.1.g0->0.2 0.1.g1->0.2 "; edgeList(s) != want {
		t.Errorf("edges %q, want %q", edgeList(s), want)
	}
	if s.Ingress.Rejected != 0 || s.State != "SUCCEEDED" {
		t.Fatalf("state %s, ingress %+v", s.State, s.Ingress)
	}
	for _, n := range s.Graph.Nodes {
		x := n.Execution
		if x == nil || x.RayTaskID == nil || len(*x.RayTaskID) < 16 || x.RayJobID == nil || x.RayNodeID == nil || x.RayWorkerID == nil {
			t.Fatalf("node %s: execution %+v", n.NodeID, x)
		}
		if x.AssignedResources["CPU"] <= 0 {
			t.Errorf("node %s: assigned resources %v", n.NodeID, x.AssignedResources)
		}
	}
	if n := s.Graph.Nodes[len(s.Graph.Nodes)-1]; len(n.Dependencies) != 2 {
		t.Errorf("node %s: dependencies %v", n.NodeID, n.Dependencies)
	}
	t.Logf("execution %s", *s.Graph.Nodes[0].Execution.RayTaskID)
}

// The collector's caps hold on Ray: a profile narrowing v1 to 4 nodes and
// 3 edges takes a 4-node chain exactly, refuses a fifth node, and refuses
// the edge batch that would make a fourth edge.
func TestProgressLimits(t *testing.T) {
	needRay(t)
	prof := limits.ProfileV1
	prof.Name, prof.TopologyNodes, prof.TopologyEdges = "narrow-test", 4, 3
	run := func(f sdk.Flow[int, int]) *progress.Snapshot {
		t.Helper()
		_, pub, err := runPolicy(context.Background(), f, 1, "", sdk.WithProgressLimits(prof))
		if err != nil {
			t.Fatal(err)
		}
		return pub.Snapshot
	}
	at := run(chain4Flow)
	if in := at.Ingress; in.Rejected != 0 || in.RetainedNodes != 4 || in.RetainedEdges != 3 || at.State != "SUCCEEDED" {
		t.Fatalf("at the caps: state %s, ingress %+v", at.State, in)
	}
	overNodes := run(chain5Flow)
	if in := overNodes.Ingress; in.RetainedNodes != 4 || in.RejectedByReason.NodeLimit < 1 || in.RejectedByReason.EdgeLimit != 0 || in.RetainedEdges != 3 {
		t.Fatalf("one node over: ingress %+v", in)
	}
	overEdges := run(diamondFlow)
	if in := overEdges.Ingress; in.RetainedNodes != 4 || in.RejectedByReason.EdgeLimit != 1 || in.RejectedByReason.NodeLimit != 0 || in.RetainedEdges != 0 {
		t.Fatalf("one edge over: ingress %+v", in)
	}
	for _, n := range overEdges.Graph.Nodes {
		if n.State != detail.NodeStateSucceeded {
			t.Errorf("node %s: %s", n.NodeID, n.State)
		}
	}

	// terminal-v1 is accepted as configured.
	_, pub, err := runPolicy(context.Background(), chain4Flow, 1, "", sdk.WithProgressLimits(limits.ProfileTerminalV1))
	if err != nil {
		t.Fatal(err)
	}
	if in := pub.Snapshot.Ingress; in.RetainedNodes != 4 || in.Rejected != 0 {
		t.Fatalf("terminal-v1: %+v", in)
	}
	if name := pub.Summary.LimitsProfile; name != "terminal-v1" {
		t.Fatalf("profile %q", name)
	}
}
