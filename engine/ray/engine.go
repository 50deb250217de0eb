package ray

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/plan"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/telemetry"
)

// Options configure a Ray engine.
type Options struct {
	// Address is the cluster: "local" (or "") starts a private local
	// cluster owned by the engine; anything else ("127.0.0.1:6379",
	// "ray://host:10001") connects to an existing one.
	Address string
	// Python is the interpreter with ray[default]==2.60.0; default
	// $RAYFLOW_PYTHON, else .venv-ray/bin/python in this or a parent
	// directory.
	Python string
	// Executable is the leaf binary every Ray worker starts in leaf mode;
	// default this process's executable. On a remote cluster it must exist
	// at this path on every node (see the package documentation).
	Executable string
	// LeafLibrary (Linux, experimental) is the application built as a
	// c-shared library with the rayflow_leaflib tag (go build
	// -tags rayflow_leaflib -buildmode=c-shared): Ray workers load it and
	// run plain leaves and batches in their own process, without the leaf
	// process and its pipe. Leaves that report progress or are traced keep
	// the leaf process.
	LeafLibrary string
	// Stderr receives the bridge's logs (and Ray's worker logs); nil:
	// os.Stderr.
	Stderr io.Writer
	// NumCPUs and ObjectStoreMemory size a private local cluster.
	NumCPUs           int
	ObjectStoreMemory int64
	// ConnectTimeout bounds connecting to the cluster (default 2 min).
	ConnectTimeout time.Duration
	// RuntimeEnv is the job-wide Ray runtime_env. To ship the leaf binary
	// to a remote cluster without baking it into the image, put it in a
	// directory, pass {"working_dir": dir} and set Executable to its path
	// relative to that directory ("./app"); the leaf starter restores the
	// executable bit that Ray's upload drops.
	RuntimeEnv map[string]any
	// CloseTimeout bounds Close: runs in flight are cancelled and the
	// bridge ended within it (default 1 s).
	CloseTimeout time.Duration
	// WarmTimeout bounds the warm-up in New: one Ray worker and its leaf
	// process are started, so that a Run's first leaf does not wait for
	// them (default 10 s; negative: no warm-up). The warm-up is best
	// effort: a failure (or the timeout) only leaves the first leaf to
	// start them, and to report what is wrong.
	WarmTimeout time.Duration
}

// mapProgress is one aggregate progress report of a bounded map.
type mapProgress = progress.MapCounters

// Engine runs materialized plans on Ray. It implements sdk.Engine.
//
// Progress is per run: sdk.Run (or sdkhost.RunPlan) hands each run its own
// progress.Run in the RunSpec, under the plan's reporting policy; two
// concurrent runs on one engine never share progress state.
type Engine struct {
	rt    rayRuntime
	exe   string
	lib   string // Options.LeafLibrary
	codec sdk.Codec

	life         runs // runs in flight, for Close
	closeTimeout time.Duration
}

var _ sdk.Engine = (*Engine)(nil)

// New starts the bridge and connects it to the cluster. Setup problems
// (no Ray, a version mismatch, an unreachable cluster) are *SetupError,
// returned before anything is submitted.
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Python == "" {
		o.Python = rayenv.Python()
	}
	exe := o.Executable
	digested := make(chan struct{})
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("rayflow: ray: the leaf binary: %w", err)
		}
		// The leaf processes run this binary: its digest, cached while
		// the bridge starts, spares each of them hashing it.
		go func() { _, _ = selfDigest(); close(digested) }()
	} else {
		close(digested)
	}
	b, err := startBridge(ctx, bridgeOptions{Python: o.Python, Stderr: o.Stderr, Address: o.Address,
		NumCPUs: o.NumCPUs, ObjectStoreMemory: o.ObjectStoreMemory, ConnectTimeout: o.ConnectTimeout, RuntimeEnv: telemetryEnv(o.RuntimeEnv)})
	if err != nil {
		return nil, err
	}
	e := newWithRuntime(b, exe)
	e.lib = o.LeafLibrary
	e.closeTimeout = o.CloseTimeout
	if o.WarmTimeout >= 0 {
		<-digested
		e.warm(ctx, b, cmp.Or(o.WarmTimeout, 10*time.Second))
	}
	return e, nil
}

// warm starts a worker and its leaf process and waits for them (at most
// timeout; best effort).
func (e *Engine) warm(ctx context.Context, b *rayBridge, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	h, err := b.Warm(ctx, e.exe, e.lib)
	if err != nil {
		debugf("warm-up: %v", err)
		return
	}
	defer b.Release([]objHandle{h})
	r, err := b.Await(ctx, h)
	if err == nil && r.Err != nil {
		err = r.Err.toError(e.codec, "warm-up", r.Value)
	}
	debugf("warm-up in %v: %v", time.Since(start), err)
}

// newWithRuntime makes an engine over any rayRuntime (the tests' fake).
func newWithRuntime(rt rayRuntime, exe string) *Engine {
	return &Engine{rt: rt, exe: exe, codec: sdk.DefaultCodec}
}

// bridgeRuntime returns the engine's runtime (the bridge).
func (e *Engine) bridgeRuntime() rayRuntime { return e.rt }

// Name is "ray".
func (e *Engine) Name() string { return "ray" }

// Runs is true for sdk.StrategyDynamicTasks: every leaf a Ray task.
func (e *Engine) Runs(s sdk.Strategy) bool { return s == sdk.StrategyDynamicTasks }

// Run executes one run (sdk.Run and sdkhost.RunPlan call it) and returns its
// result still encoded (the final value's codec bytes;
// sdkrt.DecodeResult turns it into the flow's output type). Leaf events go
// to spec.Progress, fenced by spec.Identity, under the plan's reporting
// policy. A closed engine (ErrClosed), or one whose cluster is lost
// (ErrClusterLost) or whose bridge is gone, fails at once.
func (e *Engine) Run(ctx context.Context, spec sdkrt.RunSpec) (_ any, err error) {
	ctx, end, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = end(err) }()
	m, input := spec.Plan, spec.Input
	bind := spec.Bindings
	if bind == nil || bind.Program == nil {
		return nil, errors.New("rayflow: ray: no plan bindings")
	}
	if spec.Progress == nil {
		return nil, errors.New("rayflow: ray: the run has no progress handle (call sdk.Run or sdkhost.RunPlan)")
	}
	if err := e.check(bind.Root); err != nil {
		return nil, err
	}
	if e.lib != "" && planDigest(m) != "" {
		return nil, &SetupError{Problem: "Options.LeafLibrary needs a build revision, and the plan's code identity is this executable's digest, which a library cannot have",
			Fix: "build from an unmodified VCS checkout, or set " + buildid.EnvBuildRevision}
	}
	rp, err := e.startProgress(ctx, spec.Progress, bind.Root)
	if err != nil {
		return nil, err
	}
	r := &runner{e: e, rt: e.rt, bound: map[*flowgraph.Step][]byte{}, rp: rp, digest: planDigest(m), envs: bind.RuntimeEnvs}
	r.libRev = libraryPlanRevision(m)
	if id, err := json.Marshal(spec.Progress.Identity()); err == nil {
		r.ident = string(id)
	}
	if telemetry.Recording(ctx) {
		r.spans = newNodeSpans(ctx, e.rt, e.codec)
		r.rt = r.spans // the scopes' releases wait for the spans
	}
	root := &scope{rt: r.rt}
	defer root.releaseAll()
	v, err := r.exec(ctx, bind.Root, bind.Root.ID, value{local: true, v: input}, root)
	if err == nil && !v.local {
		// Every leaf has finished (and its events reached the actor)
		// before the last drain.
		err = r.await(ctx, v.h, "0")
	}
	defer rp.finish(ctx)
	if err != nil {
		// Stop whatever is still running (a failed map has already
		// cancelled its own items).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if pending, err := settle(cctx, e.rt, root.all(), cancelGrace); err == nil {
			_ = e.rt.Cancel(cctx, pending)
		}
		cancel()
		r.spans.close(false)
		return nil, err
	}
	r.spans.close(true)
	if v.local {
		b, err := e.codec.Marshal(v.v)
		if err != nil {
			return nil, err
		}
		return &sdkrt.EncodedResult{Codec: e.codec, Bytes: b}, nil
	}
	b, err := r.fetch(ctx, v.h, "0")
	if err != nil {
		return nil, err
	}
	return &sdkrt.EncodedResult{Codec: e.codec, Bytes: b}, nil
}

// libraryPlanRevision is the plan's build revision when it is a VCS
// revision, which a leaf library must also carry; "" for an environment
// revision (the user vouches for the build, as for leaf processes).
func libraryPlanRevision(p *plan.Plan) string {
	if p == nil || p.Definition.BuildRevision == nil || !strings.HasPrefix(*p.Definition.BuildRevision, buildid.VCSPrefix) {
		return ""
	}
	return *p.Definition.BuildRevision
}

// planDigest is the executable digest the plan's code identity names
// ("" when it is a revision).
func planDigest(p *plan.Plan) string {
	if p == nil || p.Definition.BuildRevision == nil {
		return ""
	}
	rev := *p.Definition.BuildRevision
	if !strings.HasPrefix(rev, buildid.Prefix) {
		return ""
	}
	return strings.TrimPrefix(rev, buildid.Prefix)
}

// check rejects, before any submission, what this engine cannot run.
func (e *Engine) check(n *program.Node) error {
	id := n.ID
	switch n.Kind {
	case flowgraph.KindStep:
		if !n.Step.Callable.Resolvable {
			return &sdk.DefinitionError{Path: id, Code: sdk.CodeNotAStep,
				Msg: fmt.Sprintf("step %s is not resolvable by name (a closure, method value or generic instantiation) and cannot run on Ray", n.Step.Callable.Name)}
		}
		if _, ok := sdkrt.LookupLeaf(n.Step.Callable.Name); !ok {
			return &sdk.DefinitionError{Path: id, Code: sdk.CodeNotAStep, Msg: fmt.Sprintf("step %s is not registered", n.Step.Callable.Name)}
		}
		return nil
	case flowgraph.KindMap:
		if n.Map.Fold != nil {
			if err := checkFold(n.Map.Fold, id); err != nil {
				return err
			}
		}
		if e.codec.Name() != "json" {
			return &sdk.DefinitionError{Path: id, Code: sdk.CodeNotAMap, Msg: "maps on Ray need the JSON codec"}
		}
		return e.check(n.Body())
	}
	for _, c := range n.Children {
		if err := e.check(c); err != nil {
			return err
		}
	}
	return nil
}

// value is a node's result: an in-process Go value (the run's input) or a
// handle to encoded bytes in the object store.
type value struct {
	local bool
	v     any
	h     objHandle
	raw   []byte // inline encoded bytes (a map item)
}

// scope records the handles a subtree created. With retain set (a map
// item) nothing is released before the scope ends, so that cancellation
// can reach every physical task of the item.
type scope struct {
	rt      rayRuntime
	retain  bool
	mu      sync.Mutex
	handles []objHandle
}

func (s *scope) add(h objHandle) {
	s.mu.Lock()
	s.handles = append(s.handles, h)
	s.mu.Unlock()
}

// release drops h now unless the scope retains its handles.
func (s *scope) release(h objHandle) {
	if s.retain {
		return
	}
	s.mu.Lock()
	for i, x := range s.handles {
		if x == h {
			s.handles = append(s.handles[:i], s.handles[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.rt.Release([]objHandle{h})
}

// releaseMany drops hs now (one message) unless the scope retains its
// handles. It sorts hs in place: the scope's handles are filtered by a
// binary search in it, without a set the size of a chunk.
func (s *scope) releaseMany(hs []objHandle) {
	if s.retain || len(hs) == 0 {
		return
	}
	slices.Sort(hs)
	s.mu.Lock()
	kept := s.handles[:0]
	for _, h := range s.handles {
		if _, found := slices.BinarySearch(hs, h); !found {
			kept = append(kept, h)
		}
	}
	s.handles = kept
	s.mu.Unlock()
	s.rt.Release(hs)
}

func (s *scope) all() []objHandle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]objHandle(nil), s.handles...)
}

// releaseExcept releases every handle but keep.
func (s *scope) releaseExcept(keep objHandle) {
	s.mu.Lock()
	var drop []objHandle
	for _, h := range s.handles {
		if h != keep {
			drop = append(drop, h)
		}
	}
	s.handles = s.handles[:0]
	if keep != 0 {
		s.handles = append(s.handles, keep)
	}
	s.mu.Unlock()
	s.rt.Release(drop)
}

func (s *scope) releaseAll() { s.releaseExcept(0) }

type runner struct {
	e      *Engine
	rt     rayRuntime // the scopes' runtime: e.rt, or spans when they record
	spans  *nodeSpans // nil when the run's spans do not record
	rp     *runProgress
	digest string                    // the plan's executable digest, checked by every leaf process
	libRev string                    // the plan's VCS revision, checked by the leaf library ("" for none)
	ident  string                    // the run identity's JSON, in every leaf request (sdk.AttemptFrom)
	envs   map[string]map[string]any // runtime environment profiles, as materialized
	mu     sync.Mutex
	bound  map[*flowgraph.Step][]byte
	opts   map[*flowgraph.Step]stepOptions
}

// arg turns a value into a task argument.
func (r *runner) arg(ctx context.Context, v value, sc *scope) (taskArg, error) {
	switch {
	case v.raw != nil:
		return taskArg{Bytes: v.raw}, nil
	case !v.local:
		return taskArg{Handle: v.h}, nil
	}
	b, err := r.e.codec.Marshal(v.v)
	if err != nil {
		return taskArg{}, fmt.Errorf("rayflow: encoding the input: %w", err)
	}
	if len(b) <= 100<<10 {
		return taskArg{Bytes: b}, nil
	}
	h, err := r.e.rt.Put(ctx, b)
	if err != nil {
		return taskArg{}, err
	}
	sc.add(h)
	return taskArg{Handle: h}, nil
}

// exec submits n on in and returns its (not yet awaited) result. It does
// not take ownership of in; the returned handle belongs to sc.
func (r *runner) execNode(ctx context.Context, n *program.Node, id string, in value, sc *scope) (value, error) {
	if err := ctx.Err(); err != nil {
		return value{}, err
	}
	switch n.Kind {
	case flowgraph.KindStep:
		return r.step(ctx, n.Step, id, in, sc)
	case flowgraph.KindChain:
		v := in
		for i, c := range n.Children {
			out, err := r.exec(ctx, c, c.At(id), v, sc)
			if err != nil {
				return value{}, err
			}
			if i > 0 && !v.local && v.raw == nil {
				sc.release(v.h) // the next task holds it
			}
			v = out
		}
		return v, nil
	case flowgraph.KindGroup:
		return r.group(ctx, n, id, in, sc)
	case flowgraph.KindMap:
		return r.mapNode(ctx, n, id, in, sc)
	}
	return value{}, fmt.Errorf("rayflow: node %s: unknown kind %v", id, n.Kind)
}

func (r *runner) step(ctx context.Context, s *flowgraph.Step, id string, in value, sc *scope) (value, error) {
	a, err := r.arg(ctx, in, sc)
	if err != nil {
		return value{}, err
	}
	var bound []byte
	if s.Bound > 0 {
		r.mu.Lock()
		bound = r.bound[s]
		r.mu.Unlock()
		if bound == nil {
			if bound, err = r.e.codec.Marshal(s.BoundValue); err != nil {
				return value{}, fmt.Errorf("rayflow: node %s: encoding the bound value: %w", id, err)
			}
			r.mu.Lock()
			r.bound[s] = bound
			r.mu.Unlock()
		}
	}
	opts, key, err := r.options(s)
	if err != nil {
		return value{}, fmt.Errorf("rayflow: node %s: %w", id, err)
	}
	inline, _ := ctx.Value(inlineKey{}).(int)
	h, err := r.e.rt.Submit(ctx, leafTask{Exe: r.e.exe, Lib: r.e.lib, LibRevision: r.libRev, Callable: s.Callable.Name, Node: id, Bound: bound, Arg: a, Options: opts, OptionsKey: key,
		Digest: r.digest, Identity: r.ident, Inline: inline, Bootstrap: s.Bootstrap, Progress: r.rp.leafSpec(id, s, sc.retain), Trace: telemetry.Inject(ctx)})
	if err != nil {
		return value{}, err
	}
	sc.add(h)
	return value{h: h}, nil
}

// stepOptions are a step's Ray options and their key, computed once per
// run (every leaf of the step shares them: the bridge prepares the remote
// function once per key).
type stepOptions struct {
	opts map[string]any
	key  string
}

// options returns the step's task options and their key (see stepOptions).
func (r *runner) options(s *flowgraph.Step) (map[string]any, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.opts[s]; ok {
		return o.opts, o.key, nil
	}
	o := stepOptions{opts: taskOptions(s, r.envs)}
	if o.opts != nil {
		k, err := json.Marshal(o.opts)
		if err != nil {
			return nil, "", fmt.Errorf("the Ray options: %w", err)
		}
		o.key = string(k)
	}
	if r.opts == nil {
		r.opts = map[*flowgraph.Step]stepOptions{}
	}
	r.opts[s] = o
	return o.opts, o.key, nil
}

// taskOptions are the leaf's Ray options: every option of the plan (the
// ones Ray cannot take from Go were refused at definition time) and its
// runtime environment profile, as materialized, as the task's runtime_env.
func taskOptions(s *flowgraph.Step, envs map[string]map[string]any) map[string]any {
	o := s.EffectiveRayOptions()
	if s.RuntimeEnv != "" {
		o["runtime_env"] = envs[s.RuntimeEnv]
	}
	if len(o) == 0 {
		return nil
	}
	return o
}

// group submits every branch on in and collects their results in order,
// in Ray. Branches containing maps run concurrently; the first failure
// cancels the others.
func (r *runner) group(ctx context.Context, n *program.Node, id string, in value, sc *scope) (value, error) {
	outs := make([]value, len(n.Children))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	// When a branch holds a map, the coordinator runs part of the group
	// itself; it then awaits every branch so that the first failure in
	// time cancels the others, as the local engine does. Otherwise the
	// group is pure dataflow in Ray.
	awaitBranches := false
	for _, c := range n.Children {
		awaitBranches = awaitBranches || c.HasMap
	}
	for i, c := range n.Children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bid := c.At(id)
			v, err := r.exec(ctx, c, bid, in, sc)
			if err == nil && awaitBranches && !v.local && v.raw == nil {
				err = r.await(ctx, v.h, bid)
			}
			if err != nil {
				once.Do(func() { first = err; cancel(err) })
				return
			}
			outs[i] = v
		}()
	}
	wg.Wait()
	if first != nil {
		return value{}, first
	}
	args := make([]taskArg, len(outs))
	for i, v := range outs {
		a, err := r.arg(ctx, v, sc)
		if err != nil {
			return value{}, err
		}
		args[i] = a
	}
	h, err := r.e.rt.Collect(ctx, args, false)
	if err != nil {
		return value{}, err
	}
	sc.add(h)
	for _, v := range outs {
		if !v.local && v.raw == nil {
			sc.release(v.h)
		}
	}
	return value{h: h}, nil
}

// await waits until h is ready and returns its failure, if any.
func (r *runner) await(ctx context.Context, h objHandle, node string) error {
	ready, err := r.e.rt.Await(ctx, h)
	if err != nil {
		return err
	}
	if ready.Err != nil {
		debugf("await %s: failed", node)
		return ready.Err.toError(r.e.codec, node, ready.Value)
	}
	return nil
}

// fetch gets a value's bytes (what the coordinator must return or split).
func (r *runner) fetch(ctx context.Context, h objHandle, node string) ([]byte, error) {
	b, info, ev, err := r.e.rt.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	if info != nil {
		return nil, info.toError(r.e.codec, node, ev)
	}
	return b, nil
}

// dialCheck connects to addr once.
func dialCheck(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
