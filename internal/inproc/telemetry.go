package inproc

import (
	"context"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

// Telemetry of a local run: every plan node runs in a span of its own
// (telemetry.SpanNode; a map item's body in a telemetry.SpanItem) under
// the run's span, so a step's context carries its node's span and the
// application's spans nest under it; errors and cancellations set the
// span's status. A step is also a leaf (rayflow_leaves_*_total{engine=
// "local"}), and a bounded map's window counts in
// rayflow_map_window_slots and rayflow_map_items_in_flight.

const engineName = "local"

// itemMark marks the context of a map item's body (node id, item index).
type itemMark struct {
	id    string
	index int
}

type itemKey struct{}

// withItem marks ctx as running the body of item index (node id id), when
// its spans record.
func withItem(ctx context.Context, id string, index int) context.Context {
	if !telemetry.Recording(ctx) {
		return ctx
	}
	return context.WithValue(ctx, itemKey{}, itemMark{id, index})
}

// The local engine's leaf counters.
var leaves = telemetry.Leaves(engineName)

// exec runs node n (id) in its span.
func (r *runner) exec(ctx context.Context, n *program.Node, id string, in any, f frame) (any, error) {
	item := -1
	if m, ok := ctx.Value(itemKey{}).(itemMark); ok && m.id == id {
		item = m.index
	}
	ctx, span := telemetry.StartNode(ctx, id, n.Kind.String(), item)
	if n.Kind == flowgraph.KindStep {
		leaves.Submitted()
	}
	out, err := r.execNode(ctx, n, id, in, f)
	if n.Kind == flowgraph.KindStep {
		leaves.Finished(err)
	}
	telemetry.End(span, err)
	return out, err
}

// item runs item index of map b (input v) in its item span, holding a
// slot of the map's window in rayflow_map_items_in_flight. A one-step
// body of a map whose context records no span takes the hot path: what
// exec and execNode do for it, with the item's scope from the map
// (telemetry.Items: one allocation) and its node id spelled only when an
// error or a log record needs it.
func (r *runner) item(ctx context.Context, b *mapBackend, index int, v any) (any, error) {
	b.mw.ItemStarted()
	defer b.mw.ItemDone()
	if b.items == nil {
		bid := program.ItemID(b.id, index)
		return r.exec(withItem(ctx, bid, index), b.body, bid, v, b.item)
	}
	ctx = b.items.Context(ctx, index)
	leaves.Submitted()
	var out any
	err := flowgraph.Canceled(ctx)
	if err == nil {
		out, err = r.step(ctx, b.body.Step, nodeRef{id: b.id, item: index, bare: !b.hide}, v, b.item.external)
	}
	leaves.Finished(err)
	return out, err
}
