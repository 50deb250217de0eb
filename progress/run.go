package progress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// DefaultFlushInterval is how often a run publishes to its sink at most.
const DefaultFlushInterval = time.Second

// PlanInfo is what progress records about the run's materialized plan.
type PlanInfo struct {
	Fingerprint        string // "sha256:<hex>"
	DefinitionName     string // "workflow:…"
	DefinitionRevision string
	SelectedStrategy   string // "local", "dynamic_tasks", …
}

// RunConfig configures a Run.
type RunConfig struct {
	// Identity is the run's fence; required and valid.
	Identity common.RunIdentity
	// Policy is the plan's reporting policy; "" means full.
	Policy common.ReportingPolicy
	// Profile bounds the retained state under full; the zero value is
	// limits.ProfileV1.
	Profile limits.Profile
	// Plan describes the materialized plan; Program is the compiled flow
	// it records, whose topology the run registers.
	Plan    PlanInfo
	Program *program.Program
	// Root is a builder graph to compile when Program is nil (tests and
	// tools that hold a graph and no program).
	Root *flowgraph.Node
	// Sink receives the publications (nil: none; the state stays readable
	// with Snapshot).
	Sink Sink
	// FlushInterval spaces the publications (0: DefaultFlushInterval).
	FlushInterval time.Duration
	// OnStale is called once, from the publishing goroutine, when the sink
	// reports a stale fence (sdk.Run cancels the run with the error).
	OnStale func(error)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives sink errors (default slog.Default()).
	Logger *slog.Logger
	// Discard, with no Sink, says nothing reads the run's state (no
	// Snapshot, Ingest or Final): under full the in-process leaves still
	// get producers, so progress.Report answers as it would, but their
	// events are dropped instead of collected (no Collector is built).
	Discard bool
}

// MapCounters is one aggregate report of a bounded map's fan-out.
type MapCounters struct {
	Node      string // the map's node id
	Admitted  int    // items read and started
	Completed int    // items finished successfully
	InFlight  int    // items holding a window slot
	Exhausted bool   // the input has no more items
	Failed    bool   // the map failed
	Reused    int    // completed items whose recorded result was reused (a resumable map)
}

// Run is one run's progress: its identity, reporting policy and limits
// profile, its Collector (full policy), the producers of its leaves and
// the publications to its sink. Both engines drive it the same way: Start
// registers the plan's graph, leaves report through Producer (in process)
// or through events the engine hands to Ingest (Ray), maps report their
// counters with Map, and Finish publishes the terminal state. A nil *Run
// is valid and reports nothing. Its methods are safe for concurrent use.
type Run struct {
	id       common.RunIdentity
	policy   common.ReportingPolicy
	plan     PlanInfo
	sink     Sink
	every    time.Duration
	onStale  func(error)
	now      func() time.Time
	log      *slog.Logger
	started  time.Time
	full     bool
	col      *collector // nil unless full and collecting
	enc      *Encoder   // nil unless full
	labels   map[string]string
	maps     map[string]*mapSlot // the map nodes' counters
	slots    []*mapSlot          // the same, in registration order
	declared struct {
		static       bool
		nodes, edges int64
	}

	pubMu     sync.Mutex // serializes publications
	pubs      int64
	lastRev   int64
	lastTopo  int64 // retained nodes+edges at the last topology version
	topoVer   int64
	updated   time.Time
	staleErr  error
	finalDone bool

	stop    chan struct{}
	stopped chan struct{}
}

// Start begins a run's progress: under full it creates the Collector and
// registers the plan (initialized, every step and map node, the edges);
// with a sink it starts the periodic publication. terminal_only and
// disabled keep nothing until Finish.
func Start(ctx context.Context, cfg RunConfig) (*Run, error) {
	if err := cfg.Identity.Validate(); err != nil {
		return nil, fmt.Errorf("progress: run identity: %w", err)
	}
	pol := cfg.Policy
	if pol == "" {
		pol = common.ReportingPolicyFull
	}
	switch pol {
	case common.ReportingPolicyFull, common.ReportingPolicyTerminalOnly, common.ReportingPolicyDisabled:
	default:
		return nil, fmt.Errorf("progress: reporting policy %q is not executable", pol)
	}
	r := &Run{id: cfg.Identity, policy: pol, plan: cfg.Plan, sink: cfg.Sink, every: cfg.FlushInterval,
		onStale: cfg.OnStale, now: cfg.Now, log: cfg.Logger, labels: map[string]string{}, maps: map[string]*mapSlot{}}
	if r.every <= 0 {
		r.every = DefaultFlushInterval
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.started = r.now()
	r.updated = r.started
	prog := cfg.Program
	if prog == nil && cfg.Root != nil {
		prog = program.Compile(cfg.Root)
	}
	if prog != nil {
		r.register(prog)
	}
	if pol == common.ReportingPolicyFull && cfg.Discard && cfg.Sink == nil {
		// The profile is checked as the Collector would.
		if prof := cfg.Profile; prof.Name != "" {
			if err := prof.Validate(); err != nil {
				return nil, fmt.Errorf("progress: limits profile: %w", err)
			}
		}
		r.full = true
		var err error
		if r.enc, err = NewEncoder(r.id, r.now, nil); err != nil {
			return nil, err
		}
		return r, nil
	}
	if pol == common.ReportingPolicyFull {
		r.full = true
		var err error
		if r.col, err = newCollector(collectorConfig{Identity: r.id, Profile: cfg.Profile, Now: r.now}); err != nil {
			return nil, err
		}
		if r.enc, err = NewEncoder(r.id, r.now, nil); err != nil {
			return nil, err
		}
		if prog != nil {
			if err := r.initialize(prog); err != nil {
				return nil, err
			}
		}
		if r.sink != nil {
			r.stop, r.stopped = make(chan struct{}), make(chan struct{})
			go r.loop(context.WithoutCancel(ctx))
		}
	}
	return r, nil
}

// Identity is the run's identity (the fence of every event).
func (r *Run) Identity() common.RunIdentity { return r.id }

// Policy is the run's reporting policy ("" for a nil Run).
func (r *Run) Policy() common.ReportingPolicy {
	if r == nil {
		return ""
	}
	return r.policy
}

// Full reports whether leaves report live events (the full policy).
func (r *Run) Full() bool { return r != nil && r.full }

// errDiscarding: the run was started with Discard.
var errDiscarding = errors.New("progress: the run discards its events (RunConfig.Discard)")

// Label is the label of graph node id ("" when it is not a node: a map
// item's step, a nil Run).
func (r *Run) Label(id string) string {
	if r == nil {
		return ""
	}
	return r.labels[id]
}

// IsNode reports whether id is a registered graph node (a step outside
// any map, or a map).
func (r *Run) IsNode(id string) bool {
	if r == nil {
		return false
	}
	_, ok := r.labels[id]
	return ok
}

// Ingest folds one encoded event from a leaf (on Ray, drained from the
// collector actor) into the run's state.
func (r *Run) Ingest(wire []byte) Outcome {
	if !r.Full() {
		return Outcome{Err: errors.New("progress: the run collects no events")}
	}
	if r.col == nil {
		return Outcome{Err: errDiscarding}
	}
	return r.col.Ingest(wire)
}

// Send implements Sender for leaves in this process: the event is
// ingested at once and acknowledged (or rejected) at once.
func (r *Run) Send(wire []byte) (<-chan error, error) {
	return r.sendOwn(wire, nil)
}

// sendOwn is Send for an event an Encoder of this process built, with its
// decoded form ev (nil: decode wire as Send does).
func (r *Run) sendOwn(wire []byte, ev event.Event) (<-chan error, error) {
	if !r.Full() {
		return nil, ErrActorUnavailable
	}
	ch := make(chan error, 1)
	if r.col == nil {
		ch <- nil // dropped: nothing reads it
	} else if o := r.col.ingestEvent(wire, ev); !o.Accepted {
		ch <- fmt.Errorf("%w: %s: %v", ErrActorRejected, o.Reason, o.Err)
	} else {
		ch <- nil
	}
	return ch, nil
}

// Producer returns the progress session of an in-process leaf at node id,
// or nil when it does not report (not full; id is not a step node, e.g. a
// map item's step).
func (r *Run) Producer(id string) *Producer {
	if !r.Full() || !r.IsNode(id) || r.maps[id] != nil {
		return nil
	}
	p, err := NewProducer(ProducerConfig{Encoder: r.enc, NodeID: id, Label: r.labels[id], Sender: r, Policy: r.policy})
	if err != nil {
		return nil
	}
	return p
}

// Map records a bounded map's counters; Failed or a drained, exhausted
// input also settles the map node. A map's first and final counters
// become map_progress events at once; the ones in between only update the
// map's counters (a few atomic operations: engines call Map once per
// finished item), which become an event at most once per flush interval
// and whenever the state is read (see mapcounters.go).
func (r *Run) Map(p MapCounters) {
	if !r.Full() || r.col == nil {
		return
	}
	s := r.maps[p.Node]
	if s == nil {
		return
	}
	s.store(p)
	if p.Failed || p.Exhausted && p.InFlight == 0 && p.Completed == p.Admitted {
		r.fold(s, &p)
	} else if !s.begun.Load() {
		r.fold(s, nil)
	}
}

// Snapshot returns the schema-v2 snapshot (ok false unless full), with
// the maps' latest counters.
func (r *Run) Snapshot() (Snapshot, bool) {
	if !r.Full() || r.col == nil {
		return Snapshot{}, false
	}
	r.flushMaps()
	return r.col.Snapshot(), true
}

// Err returns the sink's stale-fence error once one was reported.
func (r *Run) Err() error {
	if r == nil {
		return nil
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	return r.staleErr
}

// Finish ends the run's progress: it stops the periodic publication and
// publishes the terminal state once (SUCCEEDED when runErr is nil,
// CANCELLED when it is a cancellation, FAILED otherwise). It returns the
// final publication's error (nil without a sink). Later calls do nothing.
func (r *Run) Finish(ctx context.Context, runErr error) error {
	if r == nil {
		return nil
	}
	if r.stop != nil {
		select {
		case <-r.stop:
		default:
			close(r.stop)
		}
		<-r.stopped
	}
	r.flushMaps()
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if r.finalDone {
		return nil
	}
	r.finalDone = true
	if r.sink == nil || r.staleErr != nil {
		return r.staleErr
	}
	p, err := r.publication(true, outcomeOf(runErr))
	if err != nil {
		return err
	}
	return r.publishLocked(context.WithoutCancel(ctx), p)
}

// Final builds the terminal publication without publishing it (what
// Finish would publish for runErr); for tests and tools.
func (r *Run) Final(runErr error) (*Publication, error) {
	if r.full && r.col == nil {
		return nil, errDiscarding
	}
	r.flushMaps()
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	return r.publication(true, outcomeOf(runErr))
}

// outcomeOf is the terminal state of a run that returned err.
func outcomeOf(err error) summary.TerminalState {
	switch {
	case err == nil:
		return summary.TerminalStateSucceeded
	case errors.Is(err, context.Canceled):
		return summary.TerminalStateCancelled
	}
	return summary.TerminalStateFailed
}

func (r *Run) loop(ctx context.Context) {
	defer close(r.stopped)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.flushMaps()
		r.pubMu.Lock()
		if r.staleErr == nil && r.col.Revision() != r.lastRev {
			if p, err := r.publication(false, ""); err == nil {
				_ = r.publishLocked(ctx, p)
			} else {
				r.log.Warn("rayflow: progress publication", "run_id", r.id.RunID, "err", err)
			}
		}
		stale := r.staleErr
		r.pubMu.Unlock()
		if stale != nil {
			if r.onStale != nil {
				r.onStale(stale)
			}
			return
		}
	}
}

// publishLocked hands p to the sink and records a stale fence.
func (r *Run) publishLocked(ctx context.Context, p *Publication) error {
	err := r.sink.Publish(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, ErrStaleFence):
		r.staleErr = fmt.Errorf("rayflow: progress: %w", err)
		return r.staleErr
	default:
		r.log.Warn("rayflow: progress sink", "run_id", r.id.RunID, "final", p.Final, "err", err)
	}
	return err
}

// register records the labels of the graph's nodes and the declared counts.
func (r *Run) register(p *program.Program) {
	walkGraph(p, func(id, label string, n *program.Node) {
		r.labels[id] = label
		if n.Kind == flowgraph.KindMap {
			s := &mapSlot{node: id, label: label}
			r.maps[id] = s
			r.slots = append(r.slots, s)
		}
	}, nil, int(^uint(0)>>1))
	r.declared.static = !p.HasMap
	var edges int64
	walkGraph(p, func(string, string, *program.Node) { r.declared.nodes++ }, func(topology.Edge) { edges++ }, int(^uint(0)>>1))
	r.declared.edges = edges
}

// initialize ingests the plan, its nodes and its edges.
func (r *Run) initialize(p *program.Program) error {
	name, fp, rev := r.plan.DefinitionName, r.plan.Fingerprint, r.plan.DefinitionRevision
	if name == "" {
		name = "workflow:anonymous"
	}
	if fp == "" {
		fp = "sha256:" + strings.Repeat("0", 64)
	}
	if rev == "" {
		rev = fp
	}
	class := event.PlanTopologyClassStatic
	if !r.declared.static {
		class = event.PlanTopologyClassDynamic
	}
	var wires [][]byte
	var evs []event.Event
	var edges []topology.Edge
	walkGraph(p, func(id, label string, n *program.Node) {
		var b []byte
		var ev event.Event
		var err error
		if n.Kind == flowgraph.KindMap {
			var mc, mi *int64
			if l := n.Map.Limits; l != nil {
				c, i := int64(l.MaxConcurrency), int64(l.MaxItems)
				mc = &c
				if i > 0 {
					mi = &i
				}
			}
			b, ev, err = r.enc.mapRegisteredEv(id, label, mc, mi)
		} else {
			path := n.Step.Callable.Name
			b, ev, err = r.enc.nodeRegisteredEv(id, label, &path, nil, nil)
		}
		if err == nil {
			wires, evs = append(wires, b), append(evs, ev)
		}
	}, func(e topology.Edge) { edges = append(edges, e) }, int(r.col.Profile().TopologyEdges)+1)
	if batches, bevs, err := r.enc.edgesRegisteredEv(edges); err == nil {
		wires, evs = append(wires, batches...), append(evs, bevs...)
	}
	init, iev, err := r.enc.initializedEv(event.Plan{PlanFormat: "rayflow.workflow-plan", PlanFormatVersion: 1, Fingerprint: fp,
		DefinitionName: name, DefinitionRevision: rev, TopologyClass: class, NodeCount: r.declared.nodes})
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	r.col.ingestEvent(init, iev)
	for i, w := range wires {
		r.col.ingestEvent(w, evs[i])
	}
	return nil
}

// walkGraph visits the program's topology (program.Program.Topology):
// every step outside a map and every map is a node, labelled with its
// Label or else its function's name ("map" for a map). Edge generation
// stops at maxEdges.
func walkGraph(p *program.Program, node func(id, label string, n *program.Node), edge func(topology.Edge), maxEdges int) {
	emitted := 0
	var emit func(s, t *program.Node) bool
	if edge != nil {
		emit = func(s, t *program.Node) bool {
			if emitted >= maxEdges {
				return false
			}
			emitted++
			edge(topology.Edge{Source: s.ID, Target: t.ID})
			return emitted < maxEdges
		}
	}
	p.Topology(func(n *program.Node) {
		label := "map"
		if n.Kind == flowgraph.KindStep {
			path := n.Step.Callable.Name
			label = path[strings.LastIndex(path, ".")+1:]
		}
		if n.Label != "" {
			label = n.Label
		}
		node(n.ID, label, n)
	}, emit)
}

// publication builds the run's publication (pubMu held): the summary v3,
// and under full the topology and the node detail rows.
func (r *Run) publication(final bool, outcome summary.TerminalState) (*Publication, error) {
	now := r.now()
	if now.Before(r.updated) {
		now = r.updated
	}
	r.updated = now
	if r.policy != common.ReportingPolicyFull {
		if !final {
			return nil, errors.New("progress: only a full run publishes before its end")
		}
		return r.summaryOnly(outcome, now)
	}
	snap := r.col.Snapshot()
	p := &Publication{Identity: r.id, Final: final, Snapshot: &snap}
	p.Nodes = make([]topology.Node, 0, len(snap.Graph.Nodes))
	p.Details = make([]detail.NodeDetail, 0, len(snap.Graph.Nodes))
	events := map[string][]detail.NodeRecentEvent{}
	for _, e := range snap.RecentEvents {
		events[e.NodeID] = append(events[e.NodeID], detail.NodeRecentEvent{Event: e.Event, Label: e.Label, State: e.State, Timestamp: e.Timestamp})
	}
	for _, n := range snap.Graph.Nodes {
		p.Nodes = append(p.Nodes, topology.Node{NodeID: n.NodeID, Kind: n.Kind, Label: n.Label, CallablePath: n.CallablePath,
			RuntimeEnv: nonNil(n.RuntimeEnv), RayOptions: nonNil(n.RayOptions)})
		ev := events[n.NodeID]
		slices.SortStableFunc(ev, func(a, b detail.NodeRecentEvent) int {
			ta, _ := parseTimestamp(a.Timestamp)
			tb, _ := parseTimestamp(b.Timestamp)
			return ta.Compare(tb)
		})
		if ev == nil {
			ev = []detail.NodeRecentEvent{}
		}
		d := detail.NodeDetail{SchemaVersion: 2, NodeID: n.NodeID, State: n.State, Error: n.Error, Execution: n.Execution,
			Fanout: n.Fanout, Progress: n.Progress, StartedAt: epochText(n.StartedAt), FinishedAt: epochText(n.FinishedAt),
			RecentEvents: ev, Truncated: n.Truncated,
			OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: []byte("null")}}
		if n.OutputPreview != nil {
			d.OutputPreview = *n.OutputPreview
		}
		p.Details = append(p.Details, d)
	}
	p.Edges = slices.Clone(snap.Graph.Edges)
	if p.Edges == nil {
		p.Edges = []topology.Edge{}
	}

	retained := int64(len(p.Nodes)) + int64(len(p.Edges))
	if retained > 0 && (r.topoVer == 0 || retained != r.lastTopo) {
		r.topoVer++
		r.lastTopo = retained
		p.TopologyChanged = true
	}
	s := summary.Summary{SchemaVersion: 3, StorageProtocolVersion: 1, RunIdentity: r.id, ReportingPolicy: r.policy,
		SelectedStrategy: optional(r.plan.SelectedStrategy), PlanFingerprint: optional(r.plan.Fingerprint),
		LimitsProfile: r.col.Profile().Name, State: summary.StateRunning,
		Detail:     summary.Detail{TruncationReasons: []summary.TruncationReason{}},
		Storage:    summary.Storage{Kind: "database"},
		Retention:  summary.Retention{DetailDays: DefaultRetentionDays},
		Timestamps: summary.Timestamps{StartedAt: FormatTimestamp(r.started), UpdatedAt: FormatTimestamp(now)},
	}
	if r.declared.static {
		n, e := r.declared.nodes, r.declared.edges
		s.NodeCounts.Declared, s.EdgeCounts.Declared = &n, &e
	}
	c := &s.NodeCounts
	c.Discovered, c.RetainedTopology, c.RetainedDetail = snap.TotalNodes, snap.TotalNodes, snap.TotalNodes
	c.Pending, c.Running, c.Succeeded, c.Failed = snap.PendingNodes, snap.RunningNodes, snap.CompletedNodes, snap.FailedNodes
	s.EdgeCounts.Discovered, s.EdgeCounts.RetainedTopology = int64(len(p.Edges)), int64(len(p.Edges))
	if s.NodeCounts.Declared != nil && c.Discovered > *s.NodeCounts.Declared {
		c.Discovered = *s.NodeCounts.Declared // cannot happen: registration follows the plan
	}
	s.ProgressPercent = snap.ProgressPercent

	var reasons []summary.TruncationReason
	ing := snap.Ingress
	if ing.RejectedByReason.NodeLimit > 0 {
		reasons = append(reasons, summary.TruncationReasonNodeCountLimit)
	}
	if ing.RejectedByReason.EdgeLimit > 0 {
		reasons = append(reasons, summary.TruncationReasonEdgeCountLimit)
	}
	if ing.RejectedByReason.RetainedBytesLimit > 0 {
		reasons = append(reasons, summary.TruncationReasonDetailEncodedBytes)
	}
	if ing.Truncated > 0 {
		reasons = append(reasons, summary.TruncationReasonRecordSizeLimit)
	}
	if final {
		fin := FormatTimestamp(now)
		o := outcome
		s.State = summary.State(outcome)
		s.Timestamps.FinishedAt, s.Terminal = &fin, summary.Terminal{Outcome: &o, FinishedAt: &fin}
		s.SummaryRevision = summary.ReservedRevision
		if outcome == summary.TerminalStateSucceeded {
			if c.Succeeded != c.Discovered {
				// The run succeeded before every node's terminal event
				// arrived (docs/contracts.md#publication: success marks every discovered
				// node succeeded).
				reasons = append(reasons, summary.TruncationReasonTerminalStateUnreported)
				c.Pending, c.Running, c.Failed, c.Succeeded = 0, 0, 0, c.Discovered
			}
			s.ProgressPercent = 100
		}
	} else {
		r.pubs++
		s.SummaryRevision = r.pubs
	}
	if r.topoVer > 0 {
		v := r.topoVer
		s.TopologyVersion = &v
		m := r.id.RunID + "-t" + strconv.FormatInt(v, 10)
		s.Storage.ManifestID = &m
		d := max(r.col.Revision(), 1)
		s.DetailRevision = &d
		s.Detail.Availability = summary.DetailAvailabilityAvailable
		if len(reasons) > 0 {
			slices.Sort(reasons)
			s.Detail.Availability, s.Detail.TruncationReasons = summary.DetailAvailabilityTruncated, slices.Compact(reasons)
		}
		if final {
			exp := FormatTimestamp(now.Add(time.Duration(s.Retention.DetailDays) * 24 * time.Hour))
			s.Retention.DetailExpiresAt = &exp
		}
	} else {
		s.Detail.Availability = summary.DetailAvailabilityNotReported
		c.RetainedTopology, c.RetainedDetail = 0, 0
		s.EdgeCounts.RetainedTopology = 0
	}
	s.Detail.Complete = s.Detail.Availability == summary.DetailAvailabilityAvailable
	if err := checkSummary(&s); err != nil {
		return nil, err
	}
	p.Summary = s
	r.lastRev = r.col.Revision()
	return p, nil
}

// summaryOnly is the one terminal publication of a terminal_only or
// disabled run: the summary alone.
func (r *Run) summaryOnly(outcome summary.TerminalState, now time.Time) (*Publication, error) {
	in := terminalInput{Identity: r.id, SelectedStrategy: optional(r.plan.SelectedStrategy), PlanFingerprint: optional(r.plan.Fingerprint),
		Outcome: outcome, StartedAt: r.started, FinishedAt: now}
	if r.declared.static {
		n, e := r.declared.nodes, r.declared.edges
		in.DeclaredNodes, in.DeclaredEdges = &n, &e
	}
	s, _, err := terminalSummary(in)
	if err != nil {
		return nil, err
	}
	if r.policy == common.ReportingPolicyDisabled {
		s.ReportingPolicy, s.Detail.Availability = common.ReportingPolicyDisabled, summary.DetailAvailabilityDisabled
		if err := checkSummary(s); err != nil {
			return nil, err
		}
	}
	return &Publication{Identity: r.id, Final: true, Summary: *s}, nil
}

// checkSummary validates s and its 16 KiB canonical bound.
func checkSummary(s *summary.Summary) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("progress: summary: %w", err)
	}
	b, err := canonical.NoFold.Marshal(s)
	if err != nil {
		return err
	}
	if len(b) > summary.MaxBytes {
		return fmt.Errorf("progress: summary is %d bytes, more than %d", len(b), summary.MaxBytes)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// epochText turns the collector's epoch seconds into a canonical timestamp.
func epochText(f *float64) *string {
	if f == nil {
		return nil
	}
	s := FormatTimestamp(time.UnixMicro(int64(math.Round(*f * 1e6))))
	return &s
}
