package ray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// Telemetry on Ray. The coordinator starts a span per plan node (it
// covers the node's submission; a map's covers its whole admission loop)
// and per map item (its submission and completion); each leaf request
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

// exec runs node n (id) in its span.
func (r *runner) exec(ctx context.Context, n *flowgraph.Node, id string, in value, sc *scope) (value, error) {
	item := -1
	if m, ok := ctx.Value(itemKey{}).(itemMark); ok && m.id == id {
		item = m.index
	}
	ctx, span := telemetry.StartNode(ctx, id, n.Kind.String(), item)
	v, err := r.execNode(ctx, n, id, in, sc)
	telemetry.End(span, err)
	return v, err
}

// item submits a map item's body (index, of map id) and awaits it, in
// the item's span, holding a slot of the map's window.
func (r *runner) item(ctx context.Context, mw *telemetry.MapWindow, body *flowgraph.Node, id string, index int, in value, sc *scope) (value, error) {
	node := flowgraph.ItemID(id, index)
	mw.ItemStarted()
	defer mw.ItemDone()
	if telemetry.Recording(ctx) {
		ctx = context.WithValue(ctx, itemKey{}, itemMark{node, index})
	}
	v, err := r.exec(ctx, body, node, in, sc)
	if err == nil {
		err = r.await(ctx, v.h, node)
	}
	return v, err
}

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
