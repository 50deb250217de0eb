package flowgraph

import "testing"

func TestIDs(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ChildID(KindChain, RootID, 1), "0.1"},
		{ChildID(KindGroup, "0.1", 0), "0.1.g0"},
		{ChildID(KindMap, "0", 0), "0.0"},
		{ItemID("0.2", 3), "0.2.m3"},
		{ItemID("0.2", -1), "0.2.m*"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
