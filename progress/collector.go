package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/rt"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// collectorConfig configures a Collector.
type collectorConfig struct {
	// Identity is the exact run fence; required.
	Identity common.RunIdentity
	// Profile bounds the retained state: limits.ProfileV1 (the zero value
	// means v1) or limits.ProfileTerminalV1, or any profile that narrows v1.
	Profile limits.Profile
	// Now and CPU are the clocks (default time.Now and the process CPU time).
	Now func() time.Time
	CPU func() time.Duration
}

// Outcome is the verdict on one ingested event.
type Outcome struct {
	Accepted bool
	// Truncated: accepted, and either the envelope was marked truncated by
	// its producer or the collector dropped part of it (edges whose
	// endpoint was not retained because of the node limit).
	Truncated bool
	// Kind is the event kind when the bytes decoded.
	Kind Kind
	// Reason (docs/contracts.md#live-events) and Bucket (the ingress rejected_by_reason key) say why
	// a rejected event was refused; Err has the detail.
	Reason event.ErrorReason
	Bucket Bucket
	Err    error
}

// collector holds the bounded graph state of one run identity. It is safe
// for concurrent use.
type collector struct {
	now  func() time.Time
	cpu  func() time.Duration
	prof limits.Profile

	mu       sync.Mutex
	disabled bool
	id       common.RunIdentity
	plan     *event.Plan
	revision int64
	started  time.Time
	updated  time.Time

	nodes       map[string]*nodeState
	edges       map[topology.Edge]struct{}
	nodeLimit   bool // a registration was refused for the node limit
	topoBytes   int64
	detailBytes int64
	recent      []RecentEvent // ring of at most prof.RecentEvents
	recentHead  int

	ing Ingress
}

type nodeState struct {
	n           Node
	topoBytes   int64
	detailBytes int64
}

// newCollector returns a collector fenced to cfg.Identity.
func newCollector(cfg collectorConfig) (*collector, error) {
	if err := cfg.Identity.Validate(); err != nil {
		return nil, fmt.Errorf("progress: run identity: %w", err)
	}
	prof := cfg.Profile
	if prof.Name == "" {
		prof = limits.ProfileV1
	}
	if err := prof.Validate(); err != nil {
		return nil, fmt.Errorf("progress: limits profile: %w", err)
	}
	c := &collector{now: cfg.Now, cpu: cfg.CPU, prof: prof}
	if c.now == nil {
		c.now = time.Now
	}
	if c.cpu == nil {
		c.cpu = processCPU
	}
	c.resetLocked(cfg.Identity)
	return c, nil
}

// Reset starts over for a new run identity: the graph, the ingress
// counters and the revision restart (clients reset on a new run id,
// attempt or generation).
func (c *collector) Reset(id common.RunIdentity) error {
	if err := id.Validate(); err != nil {
		return fmt.Errorf("progress: run identity: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked(id)
	return nil
}

func (c *collector) resetLocked(id common.RunIdentity) {
	c.disabled = false
	c.id = id
	c.plan = nil
	c.revision = 0
	c.started = c.now()
	c.updated = c.started
	c.nodes = make(map[string]*nodeState)
	c.edges = make(map[topology.Edge]struct{})
	c.nodeLimit = false
	c.topoBytes, c.detailBytes = 0, 0
	c.recent, c.recentHead = nil, 0
	c.ing = Ingress{
		AcceptedByKind: newKindCounts(),
		Cost:           Cost{SchemaVersion: 1, Ingest: CostIngest{DecodedByKind: newKindCounts()}},
	}
}

// Disable stops mutation (the run lost its fence or ended): later calls are
// only counted as post_disable_calls and refused as fence_mismatch.
func (c *collector) Disable() {
	c.mu.Lock()
	c.disabled = true
	c.mu.Unlock()
}

// Identity returns the current fence.
func (c *collector) Identity() common.RunIdentity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Revision returns the current revision (0 before any accepted event).
func (c *collector) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revision
}

// Profile returns the limits profile in force.
func (c *collector) Profile() limits.Profile { return c.prof }

func (c *collector) add(x *int64, d int64) {
	if satAdd(x, d) {
		c.ing.Cost.Saturated = true
	}
}

func (c *collector) addMax(total, maxv *int64, d int64) {
	c.add(total, d)
	if d > *maxv {
		*maxv = d
	}
}

// Ingest processes one encoded event as drained from the collector actor.
func (c *collector) Ingest(wire []byte) Outcome {
	t0, cpu0 := c.now(), c.cpu()
	out, ev := c.decode(wire)
	return c.ingest(t0, cpu0, wire, out, ev)
}

// ingestOwn processes an event this process's Encoder built: wire is its
// canonical encoding and ev exactly its decoded form, so the strict decode
// and the canonical check are skipped; the fence, the rules, the limits
// and the accounting are Ingest's.
func (c *collector) ingestOwn(wire []byte, ev event.Event) Outcome {
	t0, cpu0 := c.now(), c.cpu()
	if int64(len(wire)) > c.prof.EventWireBytes {
		return c.ingest(t0, cpu0, wire, reject(kindOf(ev), event.ErrorReasonLimitExceeded, BucketProtocolError,
			fmt.Errorf("event is %d bytes, more than %d", len(wire), c.prof.EventWireBytes)), nil)
	}
	return c.ingest(t0, cpu0, wire, Outcome{Kind: kindOf(ev)}, ev)
}

// ingestEvent is ingestOwn when ev is set, else Ingest.
func (c *collector) ingestEvent(wire []byte, ev event.Event) Outcome {
	if ev == nil {
		return c.Ingest(wire)
	}
	return c.ingestOwn(wire, ev)
}

func (c *collector) ingest(t0 time.Time, cpu0 time.Duration, wire []byte, out Outcome, ev event.Event) Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	ig := &c.ing.Cost.Ingest
	c.add(&ig.CallsReceived, 1)
	c.add(&ig.WireBytesReceived, int64(len(wire)))
	if c.disabled {
		c.add(&ig.PostDisableCalls, 1)
		return Outcome{Kind: out.Kind, Reason: event.ErrorReasonFenceMismatch, Bucket: BucketFenceMismatch, Err: errors.New("collector disabled")}
	}
	if out.Err == nil {
		env := envelopeOf(ev)
		if env.RunIdentity != c.id {
			out = reject(out.Kind, event.ErrorReasonFenceMismatch, BucketFenceMismatch, errors.New("run identity does not match the fence"))
		} else {
			c.add(&ig.DecodedCalls, 1)
			c.addKind(ig.DecodedByKind, out.Kind)
			out = c.apply(ev, env)
			if out.Accepted {
				c.delay(env.OccurredAt)
			}
		}
	}
	if out.Accepted {
		c.add(&c.ing.Accepted, 1)
		c.addKind(c.ing.AcceptedByKind, out.Kind)
		if out.Truncated {
			c.add(&c.ing.Truncated, 1)
		}
		c.revision++
		c.updated = c.now()
	} else {
		c.add(&c.ing.Rejected, 1)
		c.add(c.bucket(out.Bucket), 1)
	}
	wall, cpu := c.now().Sub(t0).Nanoseconds(), (c.cpu() - cpu0).Nanoseconds()
	wall, cpu = max(wall, 0), max(cpu, 0)
	c.addMax(&ig.HandlerWallNSTotal, &ig.HandlerWallNSMax, wall)
	c.addMax(&ig.HandlerCPUNSTotal, &ig.HandlerCPUNSMax, cpu)
	if out.Accepted && out.Kind == KindInitialized {
		c.ing.Cost.Initialization = CostInitialization{WireBytes: int64(len(wire)), HandlerWallNS: wall, HandlerCPUNS: cpu}
	}
	return out
}

func (c *collector) addKind(m map[Kind]int64, k Kind) {
	v := m[k]
	c.add(&v, 1)
	m[k] = v
}

func (c *collector) bucket(b Bucket) *int64 {
	r := &c.ing.RejectedByReason
	switch b {
	case BucketFenceMismatch:
		return &r.FenceMismatch
	case BucketUnexpectedInitialized:
		return &r.UnexpectedInitialized
	case BucketNodeLimit:
		return &r.NodeLimit
	case BucketEdgeLimit:
		return &r.EdgeLimit
	case BucketRetainedBytesLimit:
		return &r.RetainedBytesLimit
	}
	return &r.ProtocolError
}

func reject(k Kind, r event.ErrorReason, b Bucket, err error) Outcome {
	return Outcome{Kind: k, Reason: r, Bucket: b, Err: err}
}

// decode applies the byte caps, the strict decoder and the canonical check.
func (c *collector) decode(wire []byte) (Outcome, event.Event) {
	if int64(len(wire)) > c.prof.EventWireBytes {
		return reject("", event.ErrorReasonLimitExceeded, BucketProtocolError, fmt.Errorf("event is %d bytes, more than %d", len(wire), c.prof.EventWireBytes)), nil
	}
	ev, err := event.DecodeEvent(wire)
	if err != nil {
		var ve *rt.ValidationError
		if errors.As(err, &ve) {
			for _, x := range ve.Errors {
				if x.Path == "/payload" && x.Code == rt.CodeMaxBytes || x.Code == rt.CodeTooLarge ||
					x.Path == "/payload/edges" && x.Code == rt.CodeMaxItems {
					return reject(kindOf(ev), event.ErrorReasonLimitExceeded, BucketProtocolError, err), nil
				}
			}
		}
		return reject(kindOf(ev), event.ErrorReasonProtocolError, BucketProtocolError, err), nil
	}
	k := kindOf(ev)
	canon, err := canonical.NoFold.Transform(wire)
	if err != nil || !bytes.Equal(canon, wire) {
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, errors.New("event bytes are not canonical")), nil
	}
	return Outcome{Kind: k}, ev
}

// delay samples the processed delivery delay of an accepted event.
func (c *collector) delay(occurredAt string) {
	t, ok := parseTimestamp(occurredAt)
	if !ok {
		return
	}
	d := &c.ing.Cost.DeliveryDelay
	us := c.now().Sub(t).Microseconds()
	if us < 0 {
		c.add(&d.NegativeClockSamples, 1)
		return
	}
	c.add(&d.Samples, 1)
	c.addMax(&d.TotalUS, &d.MaxUS, us)
}

// apply runs one fenced, decoded event against the graph. Every check
// happens before any mutation, so a rejected event changes nothing.
func (c *collector) apply(ev event.Event, env envelope) Outcome {
	k := env.Kind
	ok := Outcome{Accepted: true, Kind: k, Truncated: env.Truncated}
	at, _ := parseTimestamp(env.OccurredAt)
	switch x := ev.(type) {
	case *event.Initialized:
		if c.plan != nil {
			return reject(k, event.ErrorReasonProtocolError, BucketUnexpectedInitialized, errors.New("run already initialized"))
		}
		p := x.Payload.Plan
		c.plan = &p
		return ok
	case *event.NodeRegistered:
		n := Node{NodeID: x.Payload.NodeID, Kind: topology.NodeKindTask, Label: x.Payload.Label,
			CallablePath: x.Payload.CallablePath, RuntimeEnv: x.Payload.RuntimeEnv, RayOptions: x.Payload.RayOptions}
		return c.register(n, ok, env)
	case *event.MapRegistered:
		n := Node{NodeID: x.Payload.NodeID, Kind: topology.NodeKindMap, Label: x.Payload.Label,
			Fanout: &detail.NodeFanout{MaxConcurrency: x.Payload.MaxConcurrency, MaxItems: x.Payload.MaxItems}}
		return c.register(n, ok, env)
	case *event.EdgesRegistered:
		return c.addEdges(x.Payload.Edges, ok)
	case *event.ProducerReport:
		c.aggregate(&x.Payload)
		return ok
	}

	nodeID := nodeIDOf(ev)
	ns := c.nodes[nodeID]
	if ns == nil {
		if c.nodeLimit {
			return reject(k, event.ErrorReasonLimitExceeded, BucketNodeLimit, fmt.Errorf("node %q was not retained (node limit)", nodeID))
		}
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("node %q is not registered", nodeID))
	}
	n := ns.n // the candidate; committed only if the byte limits hold
	ts := epochSeconds(at)
	terminal := n.State == detail.NodeStateSucceeded || n.State == detail.NodeStateFailed
	switch x := ev.(type) {
	case *event.Submitted:
		e := detail.NodeExecution{AssignedResources: map[string]float64{}}
		if n.Execution != nil {
			e = *n.Execution
		}
		id := x.Payload.RayTaskID
		e.RayTaskID = &id
		n.Execution = &e
	case *event.Started:
		e := x.Payload.Execution
		n.Execution = &e
		if !terminal {
			n.State = detail.NodeStateRunning
			n.StartedAt = &ts
		}
	case *event.ApplicationProgress:
		if n.Kind != topology.NodeKindTask {
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("node %q is a map: its items do not report", nodeID))
		}
		if terminal {
			break // a late value never rewrites a settled node
		}
		p := x.Payload
		n.Progress = &detail.NodeProgress{Current: p.Current, Total: p.Total, Percent: roundPercent(p.Current / p.Total * 100),
			Message: p.Message, Metrics: p.Metrics, UpdatedAt: &env.OccurredAt}
	case *event.MapProgress:
		p := x.Payload
		f := n.Fanout
		switch {
		case n.Kind != topology.NodeKindMap || f == nil:
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("node %q is not a map", nodeID))
		case f.MaxItems != nil && p.Submitted > *f.MaxItems:
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, errors.New("submitted exceeds max_items"))
		case p.Submitted < f.SubmittedItems || p.Completed < f.CompletedItems || f.InputExhausted && !p.InputExhausted ||
			f.ReusedItems != nil && (p.Reused == nil || *p.Reused < *f.ReusedItems):
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, errors.New("map counters went backwards"))
		case p.Reused != nil && *p.Reused > p.Completed:
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, errors.New("reused exceeds completed"))
		}
		n.Fanout = &detail.NodeFanout{MaxConcurrency: f.MaxConcurrency, MaxItems: f.MaxItems, SubmittedItems: p.Submitted,
			CompletedItems: p.Completed, InFlightItems: p.Submitted - p.Completed, InputExhausted: p.InputExhausted, ReusedItems: p.Reused}
		if n.State == detail.NodeStatePending && p.Submitted > 0 {
			n.State = detail.NodeStateRunning
			n.StartedAt = &ts
		}
	case *event.OutputPreview:
		pv := x.Payload.OutputPreview
		n.OutputPreview = &pv
	case *event.Completed:
		if n.State == detail.NodeStateFailed {
			break // the first terminal outcome wins; node_settled may override
		}
		c.settle(&n, detail.NodeStateSucceeded, ts, nil)
	case *event.Failed:
		if n.State == detail.NodeStateSucceeded {
			break
		}
		e := x.Payload.Error
		c.settle(&n, detail.NodeStateFailed, ts, &e)
	case *event.NodeSettled:
		p := x.Payload
		c.settle(&n, detail.NodeState(p.State), ts, p.Error)
		if p.Execution != nil {
			e := *p.Execution
			n.Execution = &e
		}
		if p.Progress != nil {
			pr := *p.Progress
			n.Progress = &pr
		}
		pv := p.OutputPreview
		n.OutputPreview = &pv
	default:
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, errors.New("unknown event"))
	}
	n.Truncated = n.Truncated || env.Truncated
	db, err := detailSize(&n)
	if err != nil {
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, err)
	}
	if o, bad := c.checkBytes(k, 0, db-ns.detailBytes); bad {
		return o
	}
	c.detailBytes += db - ns.detailBytes
	ns.n, ns.detailBytes = n, db
	c.pushRecent(k, &n, env.OccurredAt)
	return ok
}

// settle moves a node to a terminal state.
func (c *collector) settle(n *Node, s detail.NodeState, ts float64, errText *string) {
	n.State = s
	n.FinishedAt = &ts
	if n.StartedAt == nil {
		n.StartedAt = &ts
	}
	n.Error = nil
	if errText != nil {
		e := *errText
		n.Error = &e
	}
	if s == detail.NodeStateSucceeded && n.Progress != nil && n.Progress.Percent != 100 {
		p := *n.Progress
		p.Current, p.Percent = p.Total, 100
		n.Progress = &p
	}
}

// checkBytes checks the retained-byte limits after adding dTopo and
// dDetail bytes.
func (c *collector) checkBytes(k Kind, dTopo, dDetail int64) (Outcome, bool) {
	topo, det := c.topoBytes+dTopo, c.detailBytes+dDetail
	if topo > c.prof.TopologyEncodedBytes || det > c.prof.DetailEncodedBytes || topo+det > c.prof.CombinedEncodedBytes {
		return reject(k, event.ErrorReasonLimitExceeded, BucketRetainedBytesLimit,
			fmt.Errorf("retained bytes would be %d topology + %d detail", topo, det)), true
	}
	return Outcome{}, false
}

func (c *collector) register(n Node, ok Outcome, env envelope) Outcome {
	k := ok.Kind
	if _, dup := c.nodes[n.NodeID]; dup {
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("node %q registered twice", n.NodeID))
	}
	if int64(len(c.nodes)) >= min(c.prof.TopologyNodes, c.prof.DetailRows) {
		c.nodeLimit = true
		return reject(k, event.ErrorReasonLimitExceeded, BucketNodeLimit, fmt.Errorf("more than %d nodes", c.prof.TopologyNodes))
	}
	n.State = detail.NodeStatePending
	n.Truncated = env.Truncated
	if n.RuntimeEnv == nil {
		n.RuntimeEnv = map[string]json.RawMessage{}
	}
	if n.RayOptions == nil {
		n.RayOptions = map[string]json.RawMessage{}
	}
	tb, err := topologySize(&n)
	if err != nil {
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, err)
	}
	db, err := detailSize(&n)
	if err != nil {
		return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, err)
	}
	if o, bad := c.checkBytes(k, tb, db); bad {
		return o
	}
	c.topoBytes += tb
	c.detailBytes += db
	c.nodes[n.NodeID] = &nodeState{n: n, topoBytes: tb, detailBytes: db}
	c.pushRecent(k, &n, env.OccurredAt)
	return ok
}

func (c *collector) addEdges(edges []topology.Edge, ok Outcome) Outcome {
	k := ok.Kind
	var fresh []topology.Edge
	var bytesAdded int64
	for _, e := range edges {
		if e.Source == e.Target {
			return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("edge %q -> itself", e.Source))
		}
		_, okS := c.nodes[e.Source]
		_, okT := c.nodes[e.Target]
		if !okS || !okT {
			if !c.nodeLimit {
				return reject(k, event.ErrorReasonProtocolError, BucketProtocolError, fmt.Errorf("edge %q -> %q names an unregistered node", e.Source, e.Target))
			}
			ok.Truncated = true // its endpoint was dropped by the node limit
			continue
		}
		if _, dup := c.edges[e]; dup {
			continue
		}
		fresh = append(fresh, e)
		bytesAdded += edgeSize(e)
	}
	if int64(len(c.edges)+len(fresh)) > c.prof.TopologyEdges {
		return reject(k, event.ErrorReasonLimitExceeded, BucketEdgeLimit, fmt.Errorf("more than %d edges", c.prof.TopologyEdges))
	}
	if o, bad := c.checkBytes(k, bytesAdded, 0); bad {
		return o
	}
	for _, e := range fresh {
		c.edges[e] = struct{}{}
	}
	c.topoBytes += bytesAdded
	return ok
}

func (c *collector) aggregate(r *event.ProducerReportPayload) {
	a := c.ing.Producer
	if a == nil {
		a = &ProducerAggregate{SchemaVersion: 1, TerminalHandoff: map[string]int64{}}
		for _, h := range event.TerminalHandoffValues {
			a.TerminalHandoff[string(h)] = 0
		}
		c.ing.Producer = a
	}
	sat := false
	for _, p := range []struct {
		dst *int64
		v   int64
	}{{&a.Reports, 1}, {&a.Offered, r.Offered}, {&a.Submitted, r.Submitted}, {&a.Superseded, r.Superseded},
		{&a.LocallyDropped, r.LocallyDropped}, {&a.Acknowledged, r.Acknowledged}, {&a.ActorRejected, r.ActorRejected},
		{&a.AckFailed, r.AckFailed}, {&a.PendingAcknowledgements, r.PendingAcknowledgements}} {
		sat = satAdd(p.dst, p.v) || sat
	}
	h := a.TerminalHandoff[string(r.TerminalHandoff)]
	sat = satAdd(&h, 1) || sat
	a.TerminalHandoff[string(r.TerminalHandoff)] = h
	a.Saturated = a.Saturated || sat || r.Saturated
}

func (c *collector) pushRecent(k Kind, n *Node, occurredAt string) {
	e := RecentEvent{Event: detail.NodeEventKind(k), Label: n.Label, NodeID: n.NodeID, State: n.State, Timestamp: occurredAt}
	if int64(len(c.recent)) < c.prof.RecentEvents {
		c.recent = append(c.recent, e)
		return
	}
	c.recent[c.recentHead] = e
	c.recentHead = (c.recentHead + 1) % len(c.recent)
}

// topologySize is the canonical size of a node's topology record (docs/contracts.md#topology-pages-and-manifest).
func topologySize(n *Node) (int64, error) {
	b, err := canonical.NoFold.Marshal(topology.Node{NodeID: n.NodeID, Kind: n.Kind, Label: n.Label,
		CallablePath: n.CallablePath, RuntimeEnv: n.RuntimeEnv, RayOptions: n.RayOptions})
	return int64(len(b)), err
}

// nodeDetail is the mutable part of a node whose canonical size counts
// against the detail bytes.
type nodeDetail struct {
	State         detail.NodeState      `json:"state"`
	Progress      *detail.NodeProgress  `json:"progress"`
	Execution     *detail.NodeExecution `json:"execution"`
	Fanout        *detail.NodeFanout    `json:"fanout"`
	StartedAt     *float64              `json:"started_at"`
	FinishedAt    *float64              `json:"finished_at"`
	Error         *string               `json:"error"`
	OutputPreview *detail.OutputPreview `json:"output_preview"`
	Truncated     bool                  `json:"truncated"`
}

func detailSize(n *Node) (int64, error) {
	b, err := canonical.NoFold.Marshal(nodeDetail{State: n.State, Progress: n.Progress, Execution: n.Execution, Fanout: n.Fanout,
		StartedAt: n.StartedAt, FinishedAt: n.FinishedAt, Error: n.Error, OutputPreview: n.OutputPreview, Truncated: n.Truncated})
	return int64(len(b)), err
}

// edgeSize is the canonical size of {"source":…,"target":…}.
func edgeSize(e topology.Edge) int64 {
	b, _ := canonical.NoFold.Marshal(e)
	return int64(len(b))
}

// Snapshot returns the schema-v2 snapshot of the retained state.
func (c *collector) Snapshot() Snapshot {
	t0, cpu0 := c.now(), c.cpu()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		SchemaVersion: 2,
		WorkflowID:    "rayflow:" + strconv.FormatInt(c.id.TaskExecutionPK, 10),
		RunIdentity:   c.id,
		Revision:      c.revision,
		StartedAt:     epochSeconds(c.started),
		UpdatedAt:     epochSeconds(c.updated),
		RecentEvents:  make([]RecentEvent, 0, len(c.recent)),
	}
	if c.plan != nil {
		p := *c.plan
		s.Plan = &p
	}
	deps := make(map[string][]string)
	s.Graph.Edges = make([]topology.Edge, 0, len(c.edges))
	for e := range c.edges {
		s.Graph.Edges = append(s.Graph.Edges, e)
		deps[e.Target] = append(deps[e.Target], e.Source)
	}
	slices.SortFunc(s.Graph.Edges, func(a, b topology.Edge) int {
		if a.Source != b.Source {
			return strings.Compare(a.Source, b.Source)
		}
		return strings.Compare(a.Target, b.Target)
	})
	ids := slices.Sorted(maps.Keys(c.nodes))
	s.Graph.Nodes = make([]Node, 0, len(ids))
	for _, id := range ids {
		n := c.nodes[id].n
		d := deps[id]
		slices.Sort(d)
		if d == nil {
			d = []string{}
		}
		n.Dependencies = d
		switch n.State {
		case detail.NodeStateSucceeded:
			s.CompletedNodes++
		case detail.NodeStateFailed:
			s.FailedNodes++
		case detail.NodeStateRunning:
			s.RunningNodes++
		default:
			s.PendingNodes++
		}
		s.Graph.Nodes = append(s.Graph.Nodes, n)
	}
	s.TotalNodes = int64(len(ids))
	terminal := s.CompletedNodes + s.FailedNodes
	switch {
	case s.FailedNodes > 0:
		s.State = StateFailed
	case s.TotalNodes > 0 && terminal == s.TotalNodes:
		s.State = StateSucceeded
	default:
		s.State = StateRunning
	}
	if s.TotalNodes > 0 {
		s.ProgressPercent = roundPercent(float64(terminal) / float64(s.TotalNodes) * 100)
	}
	s.RecentEvents = append(s.RecentEvents, c.recent[c.recentHead:]...)
	s.RecentEvents = append(s.RecentEvents, c.recent[:c.recentHead]...)

	ing := c.ing
	ing.RetainedBytes = c.topoBytes + c.detailBytes
	ing.RetainedNodes = int64(len(c.nodes))
	ing.RetainedEdges = int64(len(c.edges))
	ing.AcceptedByKind = maps.Clone(c.ing.AcceptedByKind)
	ing.Cost.Ingest.DecodedByKind = maps.Clone(c.ing.Cost.Ingest.DecodedByKind)
	if c.ing.Producer != nil {
		p := *c.ing.Producer
		p.TerminalHandoff = maps.Clone(p.TerminalHandoff)
		ing.Producer = &p
	}
	s.Ingress = ing

	sc := &c.ing.Cost.Snapshot
	c.add(&sc.Calls, 1)
	c.addMax(&sc.BuildWallNSTotal, &sc.BuildWallNSMax, max(c.now().Sub(t0).Nanoseconds(), 0))
	c.addMax(&sc.BuildCPUNSTotal, &sc.BuildCPUNSMax, max((c.cpu()-cpu0).Nanoseconds(), 0))
	return s
}

// Diagnostics returns the ingress diagnostics alone.
func (c *collector) Diagnostics() Ingress { return c.Snapshot().Ingress }
