package ray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// Telemetry on Ray. The coordinator starts a span per plan node and per
// map item; each covers the node's execution until its result (or
// failure) is known, as a local run's spans do. Submission is pipelined:
// a node whose result is still a Ray future when it has been submitted
// keeps its span open until that future is ready (nodeSpans: a goroutine
// awaits it, and the future stays referenced meanwhile); a map item's span
// awaits its result itself. Each leaf request
// carries its node span's W3C trace context, and the leaf process starts
// the leaf's span (telemetry.SpanLeaf, with the Ray task id) from it, so a
// leaf is a child of its node across machines and the step code's spans
// nest under it. The coordinator forwards its OTEL_* and
// RAYFLOW_TRACES_FILE variables to the job's workers (the job runtime
// environment's env_vars, unless set there), and a leaf process sets
// tracing up from them once (tracing.Setup).

const engineName = "ray"

// rayLeaves are the Ray engine's leaf counters.
var rayLeaves = telemetry.Leaves(engineName)

// itemMark marks the context of a map item's body (node id, item index).
type itemMark struct {
	id    string
	index int
}

type itemKey struct{}

// exec submits node n (id) in its span, which ends when the node's
// result is known (see nodeSpans).
func (r *runner) exec(ctx context.Context, n *program.Node, id string, in value, sc *scope) (value, error) {
	return r.execIn(ctx, n, id, in, sc, false)
}

// execIn is exec; with await it also awaits the node's result (a map
// item's body), in its span.
func (r *runner) execIn(ctx context.Context, n *program.Node, id string, in value, sc *scope, await bool) (value, error) {
	item := -1
	if m, ok := ctx.Value(itemKey{}).(itemMark); ok && m.id == id {
		item = m.index
	}
	ctx, span := telemetry.StartNode(ctx, id, n.Kind.String(), item)
	v, err := r.execNode(ctx, n, id, in, sc)
	if err == nil && await {
		err = r.await(ctx, v.h, id)
	}
	if err == nil && !await && r.spans != nil && span.IsRecording() && !v.local && v.raw == nil {
		r.spans.endWhenReady(span, v.h, id)
		return v, nil
	}
	telemetry.End(span, err)
	return v, err
}

// item submits a map item's body (index, of map id) and awaits it, in
// the item's span, holding a slot of the map's window.
func (r *runner) item(ctx context.Context, mw *telemetry.MapWindow, body *program.Node, id string, index int, in value, sc *scope) (value, error) {
	node := program.ItemID(id, index)
	mw.ItemStarted()
	defer mw.ItemDone()
	if telemetry.Recording(ctx) {
		ctx = context.WithValue(ctx, itemKey{}, itemMark{node, index})
	}
	return r.execIn(ctx, body, node, in, sc, true)
}

// nodeSpans ends the spans of a run's nodes whose results were still Ray
// futures when they had been submitted, each when its future is ready,
// with its failure. It is the run's scopes' runtime: a scope's release of
// such a future waits until its span has ended (the bridge stops watching
// a released future, whose ready event would then never come).
type nodeSpans struct {
	rayRuntime
	codec  sdk.Codec
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	held   map[objHandle]*heldFuture
}

// heldFuture is a future that open spans wait for.
type heldFuture struct {
	spans    []openSpan // waiting, innermost first (a chain's last node's before the chain's)
	released bool       // its scope released it meanwhile
}

type openSpan struct {
	span trace.Span
	id   string
}

func newNodeSpans(ctx context.Context, rt rayRuntime, codec sdk.Codec) *nodeSpans {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &nodeSpans{rayRuntime: rt, codec: codec, ctx: ctx, cancel: cancel, held: map[objHandle]*heldFuture{}}
}

// endWhenReady ends span (of node id) when h is ready. The spans waiting
// for one future end in the order they began waiting, so that a node's
// span ends before its parent's.
func (s *nodeSpans) endWhenReady(span trace.Span, h objHandle, id string) {
	s.mu.Lock()
	hf := s.held[h]
	if hf != nil {
		hf.spans = append(hf.spans, openSpan{span, id})
		s.mu.Unlock()
		return
	}
	hf = &heldFuture{spans: []openSpan{{span, id}}}
	s.held[h] = hf
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ready, err := s.rayRuntime.Await(s.ctx, h)
		if err != nil && s.ctx.Err() != nil {
			// Closed: the result may have come meanwhile (the bridge keeps
			// it for a future not yet released).
			ready, err = s.rayRuntime.Await(s.ctx, h)
		}
		for {
			s.mu.Lock()
			spans := hf.spans
			hf.spans = nil
			if len(spans) == 0 {
				delete(s.held, h)
				release := hf.released
				s.mu.Unlock()
				if release {
					s.rayRuntime.Release([]objHandle{h})
				}
				return
			}
			s.mu.Unlock()
			for _, o := range spans {
				serr := err
				if serr == nil && ready.Err != nil {
					serr = ready.Err.toError(s.codec, o.id, ready.Value)
				}
				telemetry.End(o.span, serr)
			}
		}
	}()
}

// Release releases hs, but a future that a span waits for only once the
// span has ended.
func (s *nodeSpans) Release(hs []objHandle) {
	now := make([]objHandle, 0, len(hs))
	s.mu.Lock()
	for _, h := range hs {
		if hf := s.held[h]; hf != nil {
			hf.released = true
			continue
		}
		now = append(now, h)
	}
	s.mu.Unlock()
	s.rayRuntime.Release(now)
}

// close ends the spans still open when the run's result is known: with
// wait (the run succeeded, so every node's future is ready and its event
// is on its way) after their results, within spanCloseWait; else at once,
// with the results that have come.
func (s *nodeSpans) close(wait bool) {
	if s == nil {
		return
	}
	if wait {
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(spanCloseWait):
		}
	}
	s.cancel()
	s.wg.Wait()
}

// spanCloseWait bounds how long a succeeded run waits for its node spans'
// ready events (they are normally there already).
const spanCloseWait = 10 * time.Second

// telemetryEnv returns env (a job runtime environment) with this
// process's tracing variables (tracing.Forwarded: OTEL_* but not the
// credential-bearing *_HEADERS, and RAYFLOW_TRACES_FILE) added to its
// env_vars (those env already sets win); env itself is not changed. In a
// Ray Job's driver (a rayflow job coordinator) the variables the job's
// own runtime_env sets are left out: the job's workers inherit them, and
// Ray refuses a driver runtime_env that sets a key of the job's again.
func telemetryEnv(env map[string]any) map[string]any {
	inJob := jobEnvVars()
	vars := map[string]any{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := inJob[k]; !dup && tracing.Forwarded(k) {
			vars[k] = v
		}
	}
	if len(vars) == 0 {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]any{}
	}
	switch have := out["env_vars"].(type) {
	case map[string]any:
		maps.Copy(vars, have)
	case map[string]string:
		for k, v := range have {
			vars[k] = v
		}
	}
	out["env_vars"] = vars
	return out
}

// jobEnvVars returns the env_vars of the runtime_env of the Ray Job this
// process is the entrypoint of (Ray's RAY_JOB_CONFIG_JSON_ENV_VAR), nil
// outside a job.
func jobEnvVars() map[string]any {
	raw := os.Getenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
	if raw == "" {
		return nil
	}
	var cfg struct {
		RuntimeEnv struct {
			EnvVars map[string]any `json:"env_vars"`
		} `json:"runtime_env"`
	}
	if json.Unmarshal([]byte(raw), &cfg) != nil {
		return nil
	}
	return cfg.RuntimeEnv.EnvVars
}

// leafSpan starts a leaf's span in the leaf process, from its request's
// trace context; end ends it with the leaf's failure (nil: success).
func leafSpan(ctx context.Context, req leafRequest) (context.Context, func(*errorInfo)) {
	if req.Trace == "" {
		return ctx, func(*errorInfo) {}
	}
	l := telemetry.LeafInfo{Node: req.Node, Callable: req.Name, RayTaskID: req.RayTaskID}
	if req.Progress != nil {
		l.RunID = req.Progress.Identity.RunID
	}
	ctx, span := telemetry.StartLeaf(telemetry.Extract(ctx, req.Trace), l)
	return ctx, func(info *errorInfo) {
		if info == nil {
			telemetry.End(span, nil)
			return
		}
		telemetry.End(span, leafFailure{info})
	}
}

// leafFailure is a failed leaf as a span error.
type leafFailure struct{ info *errorInfo }

func (f leafFailure) Error() string { return f.info.Type + ": " + f.info.Message }

// leafSubmitted counts a leaf task (a batch is one) and remembers its
// handle until its ready event.
func (b *rayBridge) leafSubmitted(h objHandle) {
	rayLeaves.Submitted()
	b.mu.Lock()
	b.leaves[h] = true
	b.mu.Unlock()
}

// leafFinishedLocked counts a leaf task's end (b.mu held).
func (b *rayBridge) leafFinishedLocked(r readyRef) {
	if b.leaves[r.Handle] {
		delete(b.leaves, r.Handle)
		if r.Err != nil {
			rayLeaves.Finished(errLeafFailed)
		} else {
			rayLeaves.Finished(nil)
		}
	}
}

var errLeafFailed = errors.New("leaf failed")

// leafTracing sets a leaf process's tracing up from its environment (the
// coordinator's OTEL_* and RAYFLOW_TRACES_FILE variables, forwarded by
// the job's runtime environment); the returned function flushes it.
func leafTracing() func() {
	shutdown, err := tracing.Setup(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "rayflow leaf: tracing:", err)
		return func() {}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	}
}
