package ray

import (
	"context"
	"fmt"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// sink is a bounded map's result-buffer or fold actor, seen from the
// coordinator: one transition at a time, each completely resolved (its
// small acknowledgement) before the next is issued; payloads are never
// fetched.
type sink struct {
	r     *runner
	kind  string // "buffer" or "fold"
	node  string
	actor int64
}

// actorOptions are the Ray options of a buffer or fold actor from its
// validated options (the fixed protocol options are set by the bridge).
func actorOptions(a flowgraph.ActorOptions) map[string]any {
	o := map[string]any{"num_cpus": a.NumCPUs, "memory": a.Memory}
	if len(a.Resources) > 0 {
		o["resources"] = a.Resources
	}
	if a.SchedulingStrategy != "" {
		o["scheduling_strategy"] = a.SchedulingStrategy
	}
	return o
}

// openSink creates the map's actor and waits for its readiness handshake
// (a missing custom resource leaves it pending; cancellation stays live).
// It returns nil when the map has neither a buffer nor a fold.
func (r *runner) openSink(ctx context.Context, m *flowgraph.Map, id string) (*sink, error) {
	var spec actorSpec
	switch {
	case m.Buffer != nil:
		spec = actorSpec{Kind: "buffer", Options: actorOptions(m.Buffer.Actor), MaxBytes: m.Buffer.MaxSerializedBytes, MaxItems: m.Limits.MaxItems}
	case m.Fold != nil:
		init, err := m.Fold.Initial()
		if err != nil {
			return nil, fmt.Errorf("rayflow: map %s: %w", id, err)
		}
		b, err := r.e.codec.Marshal(init)
		if err != nil {
			return nil, fmt.Errorf("rayflow: map %s: encoding the initial accumulator: %w", id, err)
		}
		opts := actorOptions(m.Fold.Actor)
		if env := m.Fold.Reducer.RuntimeEnv; env != "" {
			// The reducer runs in the actor's leaf process.
			opts["runtime_env"] = r.envs[env]
		}
		spec = actorSpec{Kind: "fold", Options: opts, MaxBytes: m.Fold.MaxSerializedBytes,
			Exe: r.e.exe, Callable: m.Fold.Reducer.Callable.Name, Node: id + ".reducer", Digest: r.digest, Identity: r.ident, Bootstrap: m.Fold.Reducer.Bootstrap,
			Initial: b, MaxRetained: max(0, min(m.Limits.MaxItems-1, m.Limits.MaxConcurrency-1))}
	default:
		return nil, nil
	}
	actor, ready, err := r.e.rt.CreateActor(ctx, spec)
	if err != nil {
		return nil, err
	}
	s := &sink{r: r, kind: spec.Kind, node: id, actor: actor}
	err = r.await(ctx, ready, id)
	r.e.rt.Release([]objHandle{ready})
	if err != nil {
		s.kill()
		return nil, s.wrap(err)
	}
	return s, nil
}

func (s *sink) wrap(err error) error {
	if le, ok := err.(*TaskError); ok && le.Kind == kindActorLimit {
		le.Node = s.node
		le.Actor = map[string]string{"buffer": "result buffer", "fold": "fold"}[s.kind]
	}
	return err
}

// add hands item index (its result handle) to the actor and waits for the
// acknowledgement. A fold's actor incorporates the items in input order
// itself (the executor returns a window slot once an item and every item
// before it were added: executor.Limits.Ordered).
func (s *sink) add(ctx context.Context, index int, h objHandle) error {
	ch, err := s.r.e.rt.CallActor(ctx, s.actor, "add", []any{index, taskArg{Handle: h}})
	if err != nil {
		return err
	}
	err = s.r.await(ctx, ch, s.node)
	s.r.e.rt.Release([]objHandle{ch})
	if err != nil {
		return s.wrap(err)
	}
	return nil
}

// finalize returns the payload handle (the ordered list or the
// accumulator) once its acknowledgement has resolved, and kills the actor.
func (s *sink) finalize(ctx context.Context, n int) (objHandle, error) {
	h, err := s.r.e.rt.CallActor(ctx, s.actor, "finalize", []any{n})
	if err != nil {
		return 0, err
	}
	if err := s.r.await(ctx, h, s.node); err != nil {
		s.r.e.rt.Release([]objHandle{h})
		return 0, s.wrap(err)
	}
	s.kill()
	return h, nil
}

func (s *sink) kill() { s.r.e.rt.KillActor(s.actor) }

// checkFold rejects, before any submission, a fold this engine cannot run.
func checkFold(f *flowgraph.Fold, id string) error {
	c := f.Reducer.Callable
	if !c.Resolvable {
		return &sdk.DefinitionError{Path: id + ".reducer", Code: sdk.CodeNotAStep,
			Msg: fmt.Sprintf("reducer %s is not resolvable by name (a closure, method value or generic instantiation) and cannot run in a Ray fold actor", c.Name)}
	}
	if _, ok := sdkrt.LookupReducer(c.Name); !ok {
		return &sdk.DefinitionError{Path: id + ".reducer", Code: sdk.CodeNotAStep,
			Msg: fmt.Sprintf("reducer %s is not registered for Ray: call sdk.RegisterReducer(%s) at package initialization", c.Name, c.Name)}
	}
	return nil
}
