package flowgraph

import "strconv"

// RootID is the node id of a plan's root.
const RootID = "0"

// ChildID is the node id of child i of the node id of kind parent: "id.i"
// for a chain's children, "id.gi" for a group's branches (docs/contracts.md#the-effective-plan).
// This and ItemID are the only places the id scheme is spelled; the
// materializer, both engines and progress use them.
func ChildID(parent Kind, id string, i int) string {
	if parent == KindGroup {
		return id + ".g" + strconv.Itoa(i)
	}
	return id + "." + strconv.Itoa(i)
}

// ItemID is the node id of the body of item i of the map id ("id.m3"); a
// negative i gives the plan's template id of every item ("id.m*").
func ItemID(id string, i int) string {
	if i < 0 {
		return id + ".m*"
	}
	return id + ".m" + strconv.Itoa(i)
}
