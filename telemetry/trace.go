package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/rayflow/rayflow/internal/program"
)

// ScopeName is the instrumentation scope of every rayflow span.
const ScopeName = "github.com/rayflow/rayflow"

// Span names.
const (
	SpanAttempt = "rayflow.attempt" // one durable task attempt
	SpanRun     = "rayflow.run"     // one run of a plan (any engine)
	SpanNode    = "rayflow.node"    // one plan node (chain, group, map, step)
	SpanItem    = "rayflow.item"    // one map item (its body's run)
	SpanLeaf    = "rayflow.leaf"    // one leaf call in the process that runs it (a Ray leaf process)
)

// Attribute keys.
const (
	AttrRunID       = attribute.Key("rayflow.run.id")
	AttrTaskPK      = attribute.Key("rayflow.task.pk")
	AttrTaskID      = attribute.Key("rayflow.task.id")
	AttrAttempt     = attribute.Key("rayflow.attempt")
	AttrGeneration  = attribute.Key("rayflow.execution_generation")
	AttrFingerprint = attribute.Key("rayflow.plan.fingerprint")
	AttrFlow        = attribute.Key("rayflow.flow")
	AttrQueue       = attribute.Key("rayflow.queue")
	AttrStrategy    = attribute.Key("rayflow.strategy")
	AttrEngine      = attribute.Key("rayflow.engine")
	AttrNodeID      = attribute.Key("rayflow.node.id")
	AttrNodeKind    = attribute.Key("rayflow.node.kind")
	AttrCallable    = attribute.Key("rayflow.callable")
	AttrItemIndex   = attribute.Key("rayflow.map.item")
	AttrRayTaskID   = attribute.Key("rayflow.ray.task_id")
	AttrCancelled   = attribute.Key("rayflow.cancelled")
)

// Tracer is rayflow's tracer (the global provider's: a no-op until Setup
// or the application configures one).
func Tracer() trace.Tracer { return tracer }

// tracer is the global provider's tracer: it follows a provider set later.
var tracer = otel.Tracer(ScopeName)

// RunInfo is what a run's spans and log records carry.
type RunInfo struct {
	RunID       string
	TaskPK      int64 // 0 outside a durable task
	Attempt     int64
	Generation  int64
	Fingerprint string
	Flow        string // the definition name
	Strategy    string
	Engine      string
}

func (r *RunInfo) attrs() []attribute.KeyValue {
	a := []attribute.KeyValue{AttrRunID.String(r.RunID), AttrFingerprint.String(r.Fingerprint),
		AttrAttempt.Int64(r.Attempt), AttrGeneration.Int64(r.Generation)}
	if r.TaskPK != 0 {
		a = append(a, AttrTaskPK.Int64(r.TaskPK))
	}
	if r.Flow != "" {
		a = append(a, AttrFlow.String(r.Flow))
	}
	if r.Strategy != "" {
		a = append(a, AttrStrategy.String(r.Strategy))
	}
	if r.Engine != "" {
		a = append(a, AttrEngine.String(r.Engine))
	}
	return a
}

// scope is what a context knows of its run and node (for logs and spans).
type scope struct {
	run  *RunInfo
	node string
	task string // the durable task id (an attempt's context)
}

type scopeKey struct{}

// scopeCtx carries a scope in one allocation (context.WithValue would
// take two: the context and the boxed scope).
type scopeCtx struct {
	context.Context
	s scope
}

func (c *scopeCtx) Value(key any) any {
	if key == (scopeKey{}) {
		return &c.s
	}
	return c.Context.Value(key)
}

func withScope(ctx context.Context, s scope) context.Context { return &scopeCtx{ctx, s} }

func scopeOf(ctx context.Context) scope {
	switch p := ctx.Value(scopeKey{}).(type) {
	case *scope:
		return *p
	case *itemCtx:
		s := p.items.s
		s.node = program.ItemID(p.items.mapID, p.index)
		return s
	}
	return scope{}
}

// Items is the scope of a bounded map's items, taken once per map: its
// Context gives each item's body the context StartNode would give it
// without a span, in one allocation and without spelling the item's node
// id, which is derived only when a log record or Node asks for it. It is
// for a map whose context does not record (see Recording): under a
// recording span every item's body starts its own item span (StartNode).
type Items struct {
	s     scope
	mapID string
}

// MapItems returns the item scope of map mapID, whose context ctx is (or
// has the same scope as the contexts its items are derived from).
func MapItems(ctx context.Context, mapID string) *Items {
	return &Items{s: scopeOf(ctx), mapID: mapID}
}

// Context returns ctx (the context of one of the map's items) marked as
// running the body of item index: Node and log records name the item's
// node (program.ItemID of the map's id and index) and carry the map's
// run.
func (is *Items) Context(ctx context.Context, index int) context.Context {
	return &itemCtx{Context: ctx, items: is, index: index}
}

// itemCtx is an item's context: its scope is its map's, with the item's
// node id spelled on demand.
type itemCtx struct {
	context.Context
	items *Items
	index int
}

func (c *itemCtx) Value(key any) any {
	if key == (scopeKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// Run returns the run a context belongs to (nil outside a run).
func Run(ctx context.Context) *RunInfo { return scopeOf(ctx).run }

// Node returns the plan node id a context runs (empty outside a node).
func Node(ctx context.Context) string { return scopeOf(ctx).node }

// AttemptInfo is one durable task attempt.
type AttemptInfo struct {
	TaskID     string
	TaskPK     int64
	Flow       string
	Queue      string
	Attempt    int64
	Generation int64
	RunID      string
}

// StartAttempt starts the span of a durable task attempt.
func StartAttempt(ctx context.Context, a AttemptInfo) (context.Context, trace.Span) {
	s := scopeOf(ctx)
	s.task = a.TaskID
	s.run = &RunInfo{RunID: a.RunID, TaskPK: a.TaskPK, Attempt: a.Attempt, Generation: a.Generation, Flow: a.Flow}
	ctx = withScope(ctx, s)
	return Tracer().Start(ctx, SpanAttempt, trace.WithAttributes(AttrTaskID.String(a.TaskID), AttrTaskPK.Int64(a.TaskPK),
		AttrFlow.String(a.Flow), AttrQueue.String(a.Queue), AttrAttempt.Int64(a.Attempt), AttrGeneration.Int64(a.Generation),
		AttrRunID.String(a.RunID)))
}

// StartRun starts the span of one run; its context carries the run for
// the node spans and log records below it.
func StartRun(ctx context.Context, r RunInfo) (context.Context, trace.Span) {
	s := scopeOf(ctx)
	s.run, s.node = &r, ""
	ctx = withScope(ctx, s)
	return Tracer().Start(ctx, SpanRun, trace.WithAttributes(r.attrs()...))
}

// StartNode starts the span of plan node id (kind: step, chain, group,
// map); item ≥ 0 marks the body of a map's item (a SpanItem span). A node
// span follows its parent's sampling: under a span that does not record
// (tracing off, or the run sampled out) it starts none, and the context
// only carries the node id for the log records (one allocation).
func StartNode(ctx context.Context, id, kind string, item int) (context.Context, trace.Span) {
	s := scopeOf(ctx)
	s.node = id
	ctx = withScope(ctx, s)
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	name := SpanNode
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, AttrNodeID.String(id), AttrNodeKind.String(kind))
	if item >= 0 {
		name = SpanItem
		attrs = append(attrs, AttrItemIndex.Int(item))
	}
	if s.run != nil {
		attrs = append(attrs, AttrRunID.String(s.run.RunID))
	}
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// noSpan is a span that records nothing (ending it does nothing).
var noSpan = trace.SpanFromContext(context.Background())

// Recording reports whether ctx's span records (tracing is on for it).
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// LeafInfo is one leaf call in the process that runs it.
type LeafInfo struct {
	RunID     string
	Node      string
	Callable  string
	RayTaskID string
}

// StartLeaf starts the span of a leaf call (in a Ray leaf process, from
// the trace context its request carried: see Extract).
func StartLeaf(ctx context.Context, l LeafInfo) (context.Context, trace.Span) {
	s := scopeOf(ctx)
	if l.RunID != "" && s.run == nil {
		s.run = &RunInfo{RunID: l.RunID}
	}
	s.node = l.Node
	ctx = withScope(ctx, s)
	attrs := []attribute.KeyValue{AttrNodeID.String(l.Node), AttrCallable.String(l.Callable)}
	if l.RunID != "" {
		attrs = append(attrs, AttrRunID.String(l.RunID))
	}
	if l.RayTaskID != "" {
		attrs = append(attrs, AttrRayTaskID.String(l.RayTaskID))
	}
	return Tracer().Start(ctx, SpanLeaf, trace.WithAttributes(attrs...))
}

// End ends span with err's status: an error sets Error and records it; a
// cancellation (context.Canceled or DeadlineExceeded in the chain) sets
// Error with the description "cancelled" and rayflow.cancelled=true.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			span.SetAttributes(AttrCancelled.Bool(true))
			span.SetStatus(codes.Error, "cancelled")
		} else {
			span.RecordError(err)
			span.SetStatus(codes.Error, truncate(err.Error(), 256))
		}
	}
	span.End()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Inject returns the W3C trace context of ctx's span ("" when none), to
// send with a leaf request.
func Inject(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// Extract returns ctx with the remote span of a W3C traceparent (ctx
// itself when traceparent is empty or malformed).
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
