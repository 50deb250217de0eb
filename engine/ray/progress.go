package ray

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"sync"
	"time"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Collector actor bounds: events buffered between drains.
const (
	progressActorEvents = 4096
	progressActorBytes  = 8 << 20
	progressDrainEvery  = 200 * time.Millisecond
)

// actorIngress are the collector actor's counters (what it buffered or
// refused before the run's Collector saw anything).
type actorIngress struct {
	Accepted         int64 `json:"accepted"`
	RejectedSize     int64 `json:"rejected_size"`     // over the 32 KiB wire cap
	RejectedOverflow int64 `json:"rejected_overflow"` // the buffer was full
	Drains           int64 `json:"drains"`
}

// runProgress is one run's Ray side of progress: under the full policy a
// collector actor that buffers the leaves' events and a drain loop that
// moves them into the run's progress.Run (which owns identity, policy,
// limits, the Collector and the publications to the sink). Other policies
// create nothing on Ray.
type runProgress struct {
	e     *Engine
	run   *progress.Run
	actor int64

	mu       sync.Mutex
	actorIn  actorIngress
	actorErr error // the collector actor's creation failed

	stop    chan struct{}
	stopped chan struct{}
}

// startProgress prepares the Ray side of the run's progress: under full it
// creates the collector actor (its handshake is awaited by the drain loop)
// when some leaf of the plan can report to it, that is a step outside every
// map (map items never report: leafSpec); a plan of maps only gets none,
// which spares a worker process per run.
func (e *Engine) startProgress(ctx context.Context, run *progress.Run, root *program.Node) (*runProgress, error) {
	rp := &runProgress{e: e, run: run}
	if !run.Full() || !stepOutsideMaps(root) {
		return rp, nil
	}
	actor, ready, err := e.rt.CreateActor(ctx, actorSpec{Kind: "progress", Options: map[string]any{"num_cpus": 0},
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

// stepOutsideMaps reports whether n has a step that is not inside a map.
func stepOutsideMaps(n *program.Node) bool {
	switch n.Kind {
	case flowgraph.KindStep:
		return true
	case flowgraph.KindMap:
		return false
	}
	for _, c := range n.Children {
		if stepOutsideMaps(c) {
			return true
		}
	}
	return false
}

// leafSpec is what a leaf at node id needs to report (nil: it does not).
func (rp *runProgress) leafSpec(id string, s *flowgraph.Step, mapItem bool) *leafProgressEvent {
	if rp == nil || rp.stop == nil || mapItem || !rp.run.IsNode(id) {
		return nil
	}
	lp := &leafProgressEvent{Actor: rp.actor, Identity: rp.run.Identity(), Label: rp.run.Label(id)}
	if s.Preview != nil {
		lp.Preview = s.Preview.Callable.Name
	}
	return lp
}

func (rp *runProgress) mapProgress(p mapProgress) {
	if rp != nil {
		rp.run.Map(p)
	}
}

func (rp *runProgress) drainLoop(ctx context.Context, ready objHandle) {
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
	rp.e.rt.Release([]objHandle{ready})
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
		debugf("progress drain: call: %v", err)
		return
	}
	defer rp.e.rt.Release([]objHandle{h})
	r := &runner{e: rp.e}
	if err := r.await(ctx, h, "0"); err != nil {
		debugf("progress drain: await: %v", err)
		return
	}
	b, err := r.fetch(ctx, h, "0")
	if err != nil {
		debugf("progress drain: fetch: %v", err)
		return
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return
	}
	var st actorIngress
	debugf("progress drain: %s (%d bytes)", b[:i], len(b))
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
		rp.run.Ingest(b[4 : 4+n])
		b = b[4+n:]
	}
}

// finish ends the Ray side of the run's progress (full): the last drain,
// after every leaf has finished, and the actor's end. The publication of
// the terminal state is the caller's (sdk finishes the Run after Engine.Run returns).
func (rp *runProgress) finish(ctx context.Context) {
	if rp == nil || rp.stop == nil {
		return
	}
	close(rp.stop)
	<-rp.stopped
	rp.drain(ctx)
	rp.e.rt.KillActor(rp.actor)
}

// Actor returns the collector actor's counters and its creation error.
func (rp *runProgress) Actor() (actorIngress, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.actorIn, rp.actorErr
}
