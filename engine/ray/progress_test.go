package ray

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReportFan reports progress and returns n copies of whether it was
// accepted.
func ReportFan(ctx context.Context, n int) ([]int, error) {
	ok := sdk.ReportProgress(ctx, 1, 2, "half way", map[string]any{"items": n})
	time.Sleep(300 * time.Millisecond)
	out := make([]int, n)
	for i := range out {
		out[i] = b2i(ok)
	}
	return out, nil
}

// ReportItem is a map item: ReportProgress must return false in it.
func ReportItem(ctx context.Context, r int) (int, error) {
	return r*10 + b2i(sdk.ReportProgress(ctx, 1, 2, "", nil)), nil
}

var progressFlow = sdk.Then(sdk.Step(ReportFan), sdk.Map(sdk.Step(ReportItem, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}))

// pol materializes under reporting policy p ("" is full).
func pol(p common.ReportingPolicy) sdk.MaterializeOption {
	if p == "" {
		p = common.ReportingPolicyFull
	}
	return sdk.WithReportingPolicy(sdk.ReportingPolicy(p))
}

// runPolicy runs f on the shared engine under reporting policy p and
// returns its result and the run's final publication.
func runPolicy[In, Out any](ctx context.Context, f sdk.Flow[In, Out], in In, p common.ReportingPolicy, opts ...sdk.RunOption) (Out, *progress.Publication, error) {
	sink := &progress.Latest{}
	opts = append([]sdk.RunOption{sdk.WithEngine(testEngine), sdk.WithProgress(sink), sdk.WithPlanOptions(pol(p))}, opts...)
	out, err := sdk.Run(ctx, f, in, opts...)
	last, _ := sink.Last()
	return out, last, err
}

// progressActors counts this process's collector actors (Ray's state
// API; other packages' tests share the cluster).
func progressActors(t *testing.T) (all, alive int) {
	t.Helper()
	acts, err := testBridge.ListActors(context.Background(), "_ProgressActor")
	if err != nil {
		t.Skipf("Ray's state API is not available on this cluster (%v)", err)
	}
	for _, a := range acts {
		if a.State == "ALIVE" {
			alive++
		}
	}
	return len(acts), alive
}

// Full reporting: a collector actor per run (gone after it), leaf
// lifecycle events and application progress, one aggregate map node whose
// items report nothing.
func TestProgressFull(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	before, _ := progressActors(t)
	got, pub, err := runPolicy(ctx, progressFlow, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 10 {
		t.Fatalf("got %v: want ReportProgress true in the step and false in map items", got)
	}
	if pub == nil || pub.Snapshot == nil || !pub.Final {
		t.Fatalf("no final publication: %+v", pub)
	}
	s := pub.Snapshot
	var step, m *progress.Node
	for i := range s.Graph.Nodes {
		switch n := &s.Graph.Nodes[i]; n.NodeID {
		case "0.0":
			step = n
		case "0.1":
			m = n
		}
	}
	if len(s.Graph.Nodes) != 2 || step == nil || m == nil {
		t.Fatalf("nodes %+v", s.Graph.Nodes)
	}
	if step.State != detail.NodeStateSucceeded || step.Progress == nil || step.Progress.Message == nil || *step.Progress.Message != "half way" {
		t.Fatalf("step node %+v (progress %+v)", step, step.Progress)
	}
	if m.Kind != topology.NodeKindMap || m.Fanout == nil || m.Fanout.CompletedItems != 3 || !m.Fanout.InputExhausted || m.State != detail.NodeStateSucceeded {
		t.Fatalf("map node %+v (fanout %+v)", m, m.Fanout)
	}
	if s.Ingress.Rejected != 0 || s.Ingress.AcceptedByKind[progress.KindStarted] != 1 {
		t.Fatalf("ingress %+v", s.Ingress)
	}
	if pub.Summary.State != "SUCCEEDED" || pub.Summary.Detail.Availability != "AVAILABLE" || pub.Summary.NodeCounts.Succeeded != 2 {
		t.Fatalf("summary %+v", pub.Summary)
	}
	t.Logf("revision %d, ingress accepted %d", s.Revision, s.Ingress.Accepted)
	after, alive := progressActors(t)
	if after != before+1 {
		t.Fatalf("%d collector actors before the run, %d after; want one more", before, after)
	}
	testwait.Until(t, 10*time.Second, "no collector actor alive after the run", func() bool {
		_, alive = progressActors(t)
		return alive == 0
	})
}

// terminal_only and disabled create no collector actor and ReportProgress
// returns false; terminal_only yields one terminal summary.
func TestProgressPolicies(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	for _, pol := range []common.ReportingPolicy{common.ReportingPolicyTerminalOnly, common.ReportingPolicyDisabled} {
		before, _ := progressActors(t)
		got, pub, err := runPolicy(ctx, progressFlow, 2, pol)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 0 {
			t.Fatalf("%s: ReportProgress returned true", pol)
		}
		if after, _ := progressActors(t); after != before {
			t.Fatalf("%s: %d collector actors before, %d after", pol, before, after)
		}
		if pub == nil || pub.Snapshot != nil || pub.Nodes != nil || !pub.Final {
			t.Fatalf("%s: publication %+v", pol, pub)
		}
		if s := pub.Summary; s.ReportingPolicy != pol || s.State != "SUCCEEDED" || s.RunIdentity != pub.Identity {
			t.Fatalf("%s: terminal summary %+v", pol, s)
		}
	}
}

// Under full reporting a plan of maps only gets no collector actor (its
// items never report, so the actor would only cost a worker process per
// run); a plan with a step outside its maps gets one. The fake runtime
// records every actor created (and refuses it, which fails the run).
func TestProgressActorOnlyWhenAStepCanReport(t *testing.T) {
	mapOnly := sdk.Map(sdk.Step(ReportItem)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10})
	for _, c := range []struct {
		name   string
		run    func(e *Engine) error
		actors int
	}{
		{"map only", func(e *Engine) error {
			_, err := runOn(context.Background(), e, mapOnly, []int{1, 2, 3}, pol(""))
			return err
		}, 0},
		{"step then map", func(e *Engine) error { _, err := runOn(context.Background(), e, progressFlow, 3, pol("")); return err }, 1},
		{"step then map, terminal_only", func(e *Engine) error {
			_, err := runOn(context.Background(), e, progressFlow, 3, pol(common.ReportingPolicyTerminalOnly))
			return err
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, rt := newFakeEngine()
			if err := c.run(e); err != nil && (c.actors == 0 || !strings.Contains(err.Error(), "no actors")) {
				t.Fatal(err)
			}
			n := 0
			for _, a := range rt.actors {
				if a.Kind == "progress" {
					n++
				}
			}
			if n != c.actors {
				t.Fatalf("%d collector actors created, want %d", n, c.actors)
			}
		})
	}
}
