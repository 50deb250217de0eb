package ray

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk"
)

// fakeRuntime is a Runtime in this process for go test -short: leaves run
// through the leaf side of the leaf protocol (runLeaf: registered steps
// on encoded bytes, errors as chains), values stay encoded, failures
// propagate to dependents as Ray propagates them. It has no actors.
type fakeRuntime struct {
	mu     sync.Mutex
	next   objHandle
	vals   map[objHandle]*fakeVal
	tasks  []leafTask
	actors []actorSpec
	closed bool
}

type fakeVal struct {
	once   sync.Once
	done   chan struct{}
	data   []byte
	err    *errorInfo
	ev     []byte
	cancel context.CancelFunc
}

func (v *fakeVal) finish(data []byte, err *errorInfo, ev []byte) {
	v.once.Do(func() { v.data, v.err, v.ev = data, err, ev; close(v.done) })
}

var errFakeClosed = errors.New("fake runtime closed")

func newFakeEngine() (*Engine, *fakeRuntime) {
	rt := &fakeRuntime{vals: map[objHandle]*fakeVal{}}
	e := newWithRuntime(rt, "/fake/leaf")
	return e, rt
}

func (f *fakeRuntime) newVal() (objHandle, *fakeVal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, nil, errFakeClosed
	}
	f.next++
	v := &fakeVal{done: make(chan struct{})}
	f.vals[f.next] = v
	return f.next, v, nil
}

func (f *fakeRuntime) val(h objHandle) *fakeVal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vals[h]
}

// ref holds an argument at submission, as a Ray task holds a reference
// to its arguments (the coordinator may release its handle at once).
type ref struct {
	bytes []byte
	v     *fakeVal
}

func (f *fakeRuntime) ref(a taskArg) ref {
	if a.Handle == 0 {
		return ref{bytes: a.Bytes}
	}
	return ref{v: f.val(a.Handle)}
}

// arg resolves an argument: its bytes, or the failure of the task that
// should have produced it.
func (f *fakeRuntime) arg(ctx context.Context, r ref) ([]byte, *errorInfo, []byte) {
	if r.v == nil {
		if r.bytes == nil {
			return nil, &errorInfo{Kind: "object_lost", Message: "released before use"}, nil
		}
		return r.bytes, nil, nil
	}
	v := r.v
	select {
	case <-v.done:
		return v.data, v.err, v.ev
	case <-ctx.Done():
		return nil, &errorInfo{Kind: "cancelled", Message: "cancelled"}, nil
	}
}

func (f *fakeRuntime) Put(_ context.Context, data []byte) (objHandle, error) {
	h, v, err := f.newVal()
	if err == nil {
		v.finish(data, nil, nil)
	}
	return h, err
}

func (f *fakeRuntime) Submit(_ context.Context, t leafTask) (objHandle, error) {
	h, v, err := f.newVal()
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	f.tasks = append(f.tasks, t)
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	arg := f.ref(t.Arg)
	go func() {
		in, info, ev := f.arg(ctx, arg)
		if info == nil {
			var out []byte
			out, info, ev = runLeaf(ctx, sdk.DefaultCodec, leafRequest{Name: t.Callable, Node: t.Node, Bound: t.Bound != nil, Bootstrap: t.Bootstrap}, t.Bound, in)
			if info == nil {
				v.finish(out, nil, nil)
				return
			}
			info.Kind = "leaf" // as the worker marks it
		}
		v.finish(nil, info, ev)
	}()
	return h, nil
}

func (f *fakeRuntime) Collect(_ context.Context, args []taskArg, concat bool) (objHandle, error) {
	h, v, err := f.newVal()
	if err != nil {
		return 0, err
	}
	refs := make([]ref, len(args))
	for i, a := range args {
		refs[i] = f.ref(a)
	}
	go func() {
		parts := make([][]byte, len(args))
		for i, a := range refs {
			b, info, ev := f.arg(context.Background(), a)
			if info != nil {
				v.finish(nil, info, ev)
				return
			}
			if concat {
				b = bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("[")), []byte("]"))
			}
			parts[i] = b
		}
		if concat {
			parts = slices.DeleteFunc(parts, func(b []byte) bool { return len(b) == 0 })
		}
		v.finish(append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']'), nil, nil)
	}()
	return h, nil
}

func (f *fakeRuntime) Await(ctx context.Context, h objHandle) (readyRef, error) {
	v := f.val(h)
	if v == nil {
		return readyRef{}, errors.New("fake: unknown handle")
	}
	select {
	case <-v.done:
		return readyRef{Handle: h, Err: v.err, Value: v.ev}, nil
	case <-ctx.Done():
		return readyRef{}, ctx.Err()
	}
}

func (f *fakeRuntime) Wait(ctx context.Context, hs []objHandle, all bool, timeout time.Duration) ([]readyRef, error) {
	deadline := time.Now().Add(timeout)
	for {
		var out []readyRef
		for _, h := range hs {
			if v := f.val(h); v != nil {
				select {
				case <-v.done:
					out = append(out, readyRef{Handle: h, Err: v.err, Value: v.ev})
				default:
				}
			}
		}
		if (all && len(out) == len(hs)) || (!all && len(out) > 0) || time.Now().After(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (f *fakeRuntime) Get(ctx context.Context, h objHandle) ([]byte, *errorInfo, []byte, error) {
	r, err := f.Await(ctx, h)
	if err != nil {
		return nil, nil, nil, err
	}
	if r.Err != nil {
		return nil, r.Err, r.Value, nil
	}
	return f.val(h).data, nil, nil, nil
}

func (f *fakeRuntime) Cancel(_ context.Context, hs []objHandle) error {
	for _, h := range hs {
		if v := f.val(h); v != nil {
			if v.cancel != nil {
				v.cancel()
			}
			v.finish(nil, &errorInfo{Kind: "cancelled", Message: "task cancelled"}, nil)
		}
	}
	return nil
}

func (f *fakeRuntime) Release(hs []objHandle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hs {
		delete(f.vals, h)
	}
}

// CreateActor records the spec and refuses: the fake has no actors.
func (f *fakeRuntime) CreateActor(_ context.Context, a actorSpec) (int64, objHandle, error) {
	f.mu.Lock()
	f.actors = append(f.actors, a)
	f.mu.Unlock()
	return 0, 0, errors.New("fake runtime: no actors")
}

func (f *fakeRuntime) CallActor(context.Context, int64, string, []any) (objHandle, error) {
	return 0, errors.New("fake runtime: no actors")
}

func (f *fakeRuntime) KillActor(int64) {}

func (f *fakeRuntime) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// submitted returns the recorded leaf submissions.
func (f *fakeRuntime) submitted() []leafTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]leafTask(nil), f.tasks...)
}

// live is how many values the fake still holds (not released).
func (f *fakeRuntime) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.vals)
}

// SubmitBatch runs the items in order, as the leaf process does, and fails
// the batch (and its items) with the first failing item's error.
func (f *fakeRuntime) SubmitBatch(_ context.Context, t leafTask) (objHandle, []objHandle, error) {
	h, v, err := f.newVal()
	if err != nil {
		return 0, nil, err
	}
	hs := make([]objHandle, len(t.Items))
	vs := make([]*fakeVal, len(t.Items))
	for i := range hs {
		if hs[i], vs[i], err = f.newVal(); err != nil {
			return 0, nil, err
		}
	}
	f.mu.Lock()
	f.tasks = append(f.tasks, t)
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	go func() {
		outs := make([][]byte, len(t.Items))
		for j, in := range t.Items {
			if ctx.Err() != nil {
				info := &errorInfo{Kind: "cancelled", Message: "cancelled"}
				v.finish(nil, info, nil)
				for _, iv := range vs {
					iv.finish(nil, info, nil)
				}
				return
			}
			req := leafRequest{Name: t.Callable, Node: program.ItemID(t.Map, t.Base+j), Bound: t.Bound != nil, Bootstrap: t.Bootstrap}
			out, info, ev := runLeaf(ctx, sdk.DefaultCodec, req, t.Bound, in)
			if info != nil {
				info.Kind = "leaf"
				v.finish(nil, info, ev)
				for _, iv := range vs {
					iv.finish(nil, info, ev)
				}
				return
			}
			outs[j] = out
		}
		for j, iv := range vs {
			iv.finish(outs[j], nil, nil)
		}
		v.finish([]byte(`""`), nil, nil)
	}()
	return h, hs, nil
}
