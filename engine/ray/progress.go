package ray

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Collector actor bounds: events buffered between drains.
const (
	progressActorEvents = 4096
	progressActorBytes  = 8 << 20
	progressDrainEvery  = 200 * time.Millisecond
)

// ActorIngress are the collector actor's counters (what it buffered or
// refused before the coordinator's Collector saw anything).
type ActorIngress struct {
	Accepted         int64 `json:"accepted"`
	RejectedSize     int64 `json:"rejected_size"`     // over the 32 KiB wire cap
	RejectedOverflow int64 `json:"rejected_overflow"` // the buffer was full
	Drains           int64 `json:"drains"`
}

// ProgressReport is a run's progress as the coordinator knows it.
type ProgressReport struct {
	Policy common.ReportingPolicy
	// Snapshot is the bounded schema-v2 snapshot (full policy).
	Snapshot *progress.Snapshot
	// Actor has the collector actor's counters (full policy).
	Actor ActorIngress
	// ActorErr is set when the collector actor could not be created (its
	// handshake failed): the run goes on without live progress.
	ActorErr error
	// Summary is the one bounded terminal summary record's canonical bytes
	// (terminal_only, once the run has ended).
	Summary []byte
	// Done is true once the run has ended.
	Done bool
}

// runProgress is one run's progress state in the coordinator.
type runProgress struct {
	e        *Engine
	policy   common.ReportingPolicy
	identity common.RunIdentity
	started  time.Time
	col      *progress.Collector
	enc      *progress.Encoder
	actor    int64
	labels   map[string]string

	mu       sync.Mutex
	actorIn  ActorIngress
	actorErr error // the collector actor's creation failed
	summary  []byte
	done     bool

	stop    chan struct{}
	stopped chan struct{}
}

func newIdentity() common.RunIdentity {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := fmt.Sprintf("%x", b[:])
	id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return common.RunIdentity{SchemaVersion: 1, RunID: id, TaskExecutionPK: 1, AttemptNumber: 1, ExecutionGeneration: 1}
}

// startProgress prepares a run's progress per the engine's policy: under
// full it creates the collector actor (awaiting its handshake), the Go
// Collector and registers the static graph; terminal_only and disabled
// create nothing on Ray.
func (e *Engine) startProgress(ctx context.Context, m *sdk.Materialized) (*runProgress, error) {
	pol := e.policy
	if pol == "" {
		pol = common.ReportingPolicyFull
	}
	rp := &runProgress{e: e, policy: pol, identity: newIdentity(), started: time.Now(), labels: map[string]string{}}
	e.mu.Lock()
	e.last = rp
	e.mu.Unlock()
	if pol != common.ReportingPolicyFull {
		return rp, nil
	}
	var err error
	if rp.col, err = progress.NewCollector(progress.CollectorConfig{Identity: rp.identity, Profile: e.limits}); err != nil {
		return nil, fmt.Errorf("rayflow: ray: progress: %w", err)
	}
	if rp.enc, err = progress.NewEncoder(rp.identity, nil, nil); err != nil {
		return nil, err
	}
	name := "workflow:anonymous"
	if m.Plan != nil && m.Plan.Definition.Name != "" {
		name = m.Plan.Definition.Name
	}
	fp, rev := m.Fingerprint, m.DefinitionRevision
	if fp == "" {
		fp = "sha256:" + strings.Repeat("0", 64)
	}
	if rev == "" {
		rev = fp
	}
	class := event.PlanTopologyClassStatic
	if containsMap(m.Bindings.Root) {
		class = event.PlanTopologyClassDynamic
	}
	var wires [][]byte
	add := func(b []byte, err error) {
		if err == nil {
			wires = append(wires, b)
		}
	}
	var nodes int64
	// The edges are the plan's dependencies: a chain links every exit of
	// one child to every entry of the next; a group's entries and exits are
	// its branches'. Generation stops one past the profile's edge cap (the
	// Collector refuses the batch that crosses it).
	var edges []topology.Edge
	maxEdges := int(rp.col.Profile().TopologyEdges) + 1
	var walk func(n *flowgraph.Node, id string) (entries, exits []string)
	walk = func(n *flowgraph.Node, id string) (entries, exits []string) {
		switch n.Kind {
		case flowgraph.KindStep:
			nodes++
			path := n.Step.Callable.Name
			label := path[strings.LastIndex(path, ".")+1:]
			rp.labels[id] = label
			add(rp.enc.NodeRegistered(id, label, &path, nil, nil))
			return []string{id}, []string{id}
		case flowgraph.KindMap:
			nodes++
			var mc, mi *int64
			if l := n.Map.Limits; l != nil {
				c, i := int64(l.MaxConcurrency), int64(l.MaxItems)
				mc = &c
				if i > 0 {
					mi = &i
				}
			}
			rp.labels[id] = "map"
			add(rp.enc.MapRegistered(id, "map", mc, mi))
			return []string{id}, []string{id}
		}
		for i, c := range n.Children {
			cid := flowgraph.ChildID(n.Kind, id, i)
			en, ex := walk(c, cid)
			switch {
			case n.Kind == flowgraph.KindGroup:
				entries, exits = append(entries, en...), append(exits, ex...)
			case i == 0:
				entries, exits = en, ex
			default:
				for _, s := range exits {
					for _, t := range en {
						if len(edges) < maxEdges {
							edges = append(edges, topology.Edge{Source: s, Target: t})
						}
					}
				}
				if len(en) > 0 {
					exits = ex
				}
			}
		}
		return entries, exits
	}
	walk(m.Bindings.Root, "0")
	if batches, err := rp.enc.EdgesRegistered(edges); err == nil {
		wires = append(wires, batches...)
	}
	init, err := rp.enc.Initialized(event.Plan{PlanFormat: "rayflow.workflow-plan", PlanFormatVersion: 1, Fingerprint: fp,
		DefinitionName: name, DefinitionRevision: rev, TopologyClass: class, NodeCount: nodes})
	if err != nil {
		return nil, fmt.Errorf("rayflow: ray: progress: %w", err)
	}
	rp.col.Ingest(init)
	for _, w := range wires {
		rp.col.Ingest(w)
	}
	actor, ready, err := e.rt.CreateActor(ctx, ActorSpec{Kind: "progress", Options: map[string]any{"num_cpus": 0},
		MaxItems: progressActorEvents, MaxBytes: progressActorBytes})
	if err != nil {
		return nil, err
	}
	rp.actor = actor
	// The handshake is awaited by the drain loop, not here: the actor's
	// worker starts (hundreds of milliseconds) while the run's first leaves
	// are scheduled, and their events queue on the actor meanwhile.
	rp.stop, rp.stopped = make(chan struct{}), make(chan struct{})
	go rp.drainLoop(ctx, ready)
	return rp, nil
}

// leafSpec is what a leaf at node id needs to report (nil: it does not).
func (rp *runProgress) leafSpec(id string, s *flowgraph.Step, mapItem bool) *LeafProgress {
	if rp == nil || rp.col == nil || mapItem {
		return nil
	}
	lp := &LeafProgress{Actor: rp.actor, Identity: rp.identity, Label: rp.labels[id]}
	if s.Preview != nil {
		lp.Preview = s.Preview.Callable.Name
	}
	return lp
}

func (rp *runProgress) mapProgress(p MapProgress) {
	if rp == nil || rp.col == nil {
		return
	}
	if b, err := rp.enc.MapProgress(p.Node, rp.labels[p.Node], int64(p.Admitted), int64(p.Completed), p.Exhausted); err == nil {
		rp.col.Ingest(b)
	}
	if p.Failed {
		if b, err := rp.enc.Failed(p.Node, rp.labels[p.Node], "the map failed"); err == nil {
			rp.col.Ingest(b)
		}
	} else if p.Exhausted && p.InFlight == 0 && p.Completed == p.Admitted {
		if b, err := rp.enc.Completed(p.Node, rp.labels[p.Node]); err == nil {
			rp.col.Ingest(b)
		}
	}
}

func (rp *runProgress) drainLoop(ctx context.Context, ready Handle) {
	defer close(rp.stopped)
	r := &runner{e: rp.e}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		select {
		case <-rp.stop:
			cancel()
		case <-rctx.Done():
		}
	}()
	err := r.await(rctx, ready, "0")
	cancel()
	rp.e.rt.Release([]Handle{ready})
	if err != nil {
		rp.mu.Lock()
		rp.actorErr = err
		rp.mu.Unlock()
		return
	}
	t := time.NewTicker(progressDrainEvery)
	defer t.Stop()
	for {
		select {
		case <-rp.stop:
			return
		case <-t.C:
			rp.drain(ctx)
		}
	}
}

// drain moves the actor's buffered events into the Collector.
func (rp *runProgress) drain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	h, err := rp.e.rt.CallActor(ctx, rp.actor, "drain", nil)
	if err != nil {
		return
	}
	defer rp.e.rt.Release([]Handle{h})
	r := &runner{e: rp.e}
	if r.await(ctx, h, "0") != nil {
		return
	}
	b, err := r.fetch(ctx, h, "0")
	if err != nil {
		return
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return
	}
	var st ActorIngress
	if json.Unmarshal(b[:i], &st) == nil {
		rp.mu.Lock()
		rp.actorIn = st
		rp.mu.Unlock()
	}
	for b = b[i+1:]; len(b) >= 4; {
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			break
		}
		rp.col.Ingest(b[4 : 4+n])
		b = b[4+n:]
	}
	if rp.e.onSnapshot != nil {
		rp.e.onSnapshot(rp.col.Snapshot())
	}
}

// finish ends the run's progress: the last drain and the actor's end
// (full), or the one terminal summary (terminal_only).
func (rp *runProgress) finish(ctx context.Context, runErr error) {
	if rp == nil {
		return
	}
	switch rp.policy {
	case common.ReportingPolicyFull:
		close(rp.stop)
		<-rp.stopped
		rp.drain(ctx)
		rp.e.rt.KillActor(rp.actor)
	case common.ReportingPolicyTerminalOnly:
		out := summary.TerminalStateSucceeded
		if runErr != nil {
			out = summary.TerminalStateFailed
		}
		if _, b, err := progress.TerminalSummary(progress.TerminalInput{Identity: rp.identity, Outcome: out,
			StartedAt: rp.started, FinishedAt: time.Now()}); err == nil {
			rp.mu.Lock()
			rp.summary = b
			rp.mu.Unlock()
		}
	}
	rp.mu.Lock()
	rp.done = true
	rp.mu.Unlock()
}

// Progress reports the progress of the engine's latest run (ok false
// before any run): under full the bounded snapshot with its ingress
// diagnostics and the collector actor's counters, under terminal_only the
// terminal summary once the run has ended.
func (e *Engine) Progress() (ProgressReport, bool) {
	e.mu.Lock()
	rp := e.last
	e.mu.Unlock()
	if rp == nil {
		return ProgressReport{}, false
	}
	rp.mu.Lock()
	rep := ProgressReport{Policy: rp.policy, Actor: rp.actorIn, ActorErr: rp.actorErr, Summary: rp.summary, Done: rp.done}
	rp.mu.Unlock()
	if rp.col != nil {
		s := rp.col.Snapshot()
		rep.Snapshot = &s
	}
	return rep, true
}
