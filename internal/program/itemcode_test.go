package program

import (
	"testing"

	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// vstep is a step with a declared code version ("" for none).
func vstep(name, version string) *flowgraph.Node {
	n := step(name)
	n.Step.Version = version
	return n
}

func resumable(body *flowgraph.Node) *flowgraph.Node {
	return mapOf(body, &flowgraph.Map{Resume: &flowgraph.Resume{MaxResultBytes: 64}})
}

func chainOf(children ...*flowgraph.Node) *flowgraph.Node {
	return &flowgraph.Node{Kind: flowgraph.KindChain, Children: children}
}

// versions are the declared versions of a flow
// build → map(body) → merge → map(post) → groupOf(side, map(branch)).
type versions struct{ build, body, merge, post, side, branch string }

func versionedFlow(v versions) *flowgraph.Node {
	return chainOf(vstep("Build", v.build), resumable(vstep("Body", v.body)), vstep("Merge", v.merge),
		resumable(vstep("Post", v.post)),
		&flowgraph.Node{Kind: flowgraph.KindGroup, Children: []*flowgraph.Node{vstep("Side", v.side), resumable(vstep("Branch", v.branch))}})
}

// codes returns the item code identities of the flow's resumable maps, by
// node id.
func codes(p *Program) map[string][32]byte {
	out := map[string][32]byte{}
	for n := range p.All() {
		if n.Kind == flowgraph.KindMap {
			out[n.ID] = n.ItemCode
		}
	}
	return out
}

// A resumable map's item code identity covers the steps before it and the
// steps of its body, each by its declared version, else by the build:
// unchanged versions keep it across builds, a changed version upstream or
// in the body changes it (and every resumable map's after it), a change
// after the map or in a parallel branch does not.
func TestItemCodeIdentity(t *testing.T) {
	all := versions{"1", "1", "1", "1", "1", "1"}
	base := codes(CompileFor(versionedFlow(all), "build-a"))
	for id, c := range base {
		if c == [32]byte{} {
			t.Fatalf("map %s has no item code identity", id)
		}
	}
	if base["0.1"] == base["0.3"] || base["0.3"] == base["0.4.g1"] {
		t.Fatal("two maps with different bodies share an item code identity")
	}
	// changed lists, per case, which maps' identities differ from base.
	cases := []struct {
		name    string
		v       versions
		build   string
		changed []string
	}{
		{"same versions, another build", all, "build-b", nil},
		{"same versions, same build", all, "build-a", nil},
		{"body version", versions{"1", "2", "1", "1", "1", "1"}, "build-a", []string{"0.1", "0.3", "0.4.g1"}},
		{"upstream of every map", versions{"2", "1", "1", "1", "1", "1"}, "build-a", []string{"0.1", "0.3", "0.4.g1"}},
		{"between the maps", versions{"1", "1", "2", "1", "1", "1"}, "build-a", []string{"0.3", "0.4.g1"}},
		{"second map's body", versions{"1", "1", "1", "2", "1", "1"}, "build-a", []string{"0.3", "0.4.g1"}},
		{"a parallel branch", versions{"1", "1", "1", "1", "2", "1"}, "build-a", nil},
		{"the last map's body", versions{"1", "1", "1", "1", "1", "2"}, "build-a", []string{"0.4.g1"}},
		{"an undeclared body version, same build", versions{"1", "", "1", "1", "1", "1"}, "build-a", []string{"0.1", "0.3", "0.4.g1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := codes(CompileFor(versionedFlow(c.v), c.build))
			want := map[string]bool{}
			for _, id := range c.changed {
				want[id] = true
			}
			for _, id := range []string{"0.1", "0.3", "0.4.g1"} {
				if differs := got[id] != base[id]; differs != want[id] {
					t.Errorf("map %s: identity changed = %v, want %v", id, differs, want[id])
				}
			}
		})
	}
	// Without declared versions the build decides.
	none := versions{}
	a, b := codes(CompileFor(versionedFlow(none), "build-a")), codes(CompileFor(versionedFlow(none), "build-b"))
	again := codes(CompileFor(versionedFlow(none), "build-a"))
	for _, id := range []string{"0.1", "0.3", "0.4.g1"} {
		if a[id] == b[id] {
			t.Errorf("map %s: unversioned steps keep their identity across builds", id)
		}
		if a[id] != again[id] {
			t.Errorf("map %s: the same build gives another identity", id)
		}
	}
	// An unknown build stands for this process: stable within it.
	first, second := codes(Compile(versionedFlow(none))), codes(Compile(versionedFlow(none)))
	if first["0.1"] != second["0.1"] {
		t.Error("Compile gives two identities to the same flow in one process")
	}
	// A map without resume has none.
	plain := Compile(chainOf(step("Build"), mapOf(step("Body"), &flowgraph.Map{})))
	if n, _ := plain.Node("0.1"); n.ItemCode != [32]byte{} {
		t.Error("a map without resume has an item code identity")
	}
}
