package ray

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// leafEnv is the environment variable that starts a binary in leaf mode;
// leafParentEnv holds the process id of the Ray worker that started it.
const (
	leafEnv       = "RAYFLOW_LEAF"
	leafParentEnv = "RAYFLOW_LEAF_PARENT"
)

// ServeLeafIfRequested turns this process into a Ray leaf process when it
// was started as one (RAYFLOW_LEAF=1) and never returns in that case;
// otherwise it returns at once. Call it first thing in main (and in
// TestMain of tests that run flows on Ray): a Ray worker runs leaves by
// starting the application's own binary in leaf mode, which finds each
// step by its registered name (sdkrt.LookupLeaf), so the flows must be
// built at package initialization.
//
// In leaf mode stdin and stdout carry the framed leaf protocol; anything
// the application writes to os.Stdout goes to stderr instead.
func ServeLeafIfRequested() {
	if os.Getenv(leafEnv) != "1" {
		return
	}
	in, out := rawIO(pollableStdin()), rawIO(protocolStdout())
	flush := leafTracing()
	err := serveLeaves(context.Background(), in, out, sdk.DefaultCodec, selfDigest)
	flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rayflow leaf:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type leafRequest struct {
	Name      string `json:"name"`
	Node      string `json:"node"`
	Bound     bool   `json:"bound"`
	Bootstrap bool   `json:"bootstrap"`
	// Kind is "" for a step, "reduce" for a fold step (bound: the
	// accumulator, input: the item) and "check_reducer" for the fold
	// actor's readiness handshake (is the reducer registered?).
	Kind string `json:"kind"`
	// Progress is set when the leaf reports to the run's collector actor
	// (full policy, not a map item).
	Progress *leafProgress `json:"progress"`
	// Identity is the run's identity, in every request of a run (the
	// step's sdk.AttemptFrom); nil from an older bridge.
	Identity *common.RunIdentity `json:"identity"`
	// Execution is the Ray task's identity (task, job, node and worker ids,
	// assigned resources), sent with progress.
	Execution *detail.NodeExecution `json:"execution"`
	// A "batch" request runs the step on N items of map Map, items Base to
	// Base+N-1 (sections 1..N), in order, stopping at the first failure.
	Map  string `json:"map"`
	Base int    `json:"base"`
	N    int    `json:"n"`
	// Trace is the W3C traceparent of the leaf's node span, RayTaskID the
	// Ray task's id, both sent when the coordinator traces the run.
	Trace     string `json:"trace"`
	RayTaskID string `json:"ray_task_id"`
}

// leafProgress binds a leaf's events to its run and graph node.
type leafProgress struct {
	Identity common.RunIdentity `json:"identity"`
	Label    string             `json:"label"`
	// Preview names the step's output-preview projector ("" when none).
	Preview string `json:"preview"`
}

// leafWriter serializes frames on the leaf's output (results and progress
// events).
type leafWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// writeOK writes a successful leaf's reply, {"ok":true} and its result,
// without building a header map.
func (w *leafWriter) writeOK(res []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var hdr [48]byte
	h := append(strconv.AppendInt(append(hdr[:0], `{"ok":true,"sizes":[`...), int64(len(res)), 10), "]}"...)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(h)))
	w.w.Write(n[:])
	w.w.Write(h)
	w.w.Write(res)
	return w.w.Flush()
}

func (w *leafWriter) write(h map[string]any, sections ...[]byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := writeFrame(w.w, h, sections...); err != nil {
		return err
	}
	return w.w.Flush()
}

// pipeSender is a leaf's progress.Sender: an event goes to the Ray worker
// on the leaf's output, which submits it to the collector actor and
// writes the acknowledgement back on the leaf's input.
type pipeSender struct {
	w    *leafWriter
	mu   sync.Mutex
	seq  int64
	acks map[int64]chan error
}

func (p *pipeSender) Send(wire []byte) (<-chan error, error) {
	ch := make(chan error, 1)
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.acks[seq] = ch
	p.mu.Unlock()
	if err := p.w.write(map[string]any{"event": seq}, wire); err != nil {
		p.mu.Lock()
		delete(p.acks, seq)
		p.mu.Unlock()
		return nil, progress.ErrActorUnavailable
	}
	return ch, nil
}

func (p *pipeSender) resolve(seq int64, ok bool, reason string) {
	p.mu.Lock()
	ch := p.acks[seq]
	delete(p.acks, seq)
	p.mu.Unlock()
	switch {
	case ch == nil:
	case ok:
		ch <- nil
	case reason == "ack_failed":
		ch <- fmt.Errorf("progress: acknowledgement failed")
	default:
		ch <- fmt.Errorf("%w: %s", progress.ErrActorRejected, reason)
	}
}

// leafProtocolVersion is the version of the leaf-process protocol
// (PROTOCOL.md) that the handshake carries.
const leafProtocolVersion = 3

// leafHello is the handshake's first frame (worker to leaf) and its reply.
type leafHello struct {
	Protocol int `json:"protocol"`
	// Digest: the worker sends the plan's executable digest ("" when the
	// plan's code identity is a revision); the leaf replies with its own.
	Digest string `json:"digest"`
	PID    int    `json:"pid,omitempty"`
}

// handshake answers the worker's hello: the leaf's protocol version and
// its own binary digest. A different protocol or, when the plan names
// one, a different digest is refused with an error naming both, and the
// process ends.
func handshake(r *bufio.Reader, w *leafWriter, own func() (string, error)) error {
	f, err := readFrame(r)
	if err != nil {
		return fmt.Errorf("leaf handshake: %w", err)
	}
	var h struct {
		Hello *leafHello `json:"hello"`
	}
	if err := f.decode(&h); err != nil || h.Hello == nil {
		return errors.New("leaf handshake: the first frame is not a hello")
	}
	refuse := func(reason, msg string, want, got string) error {
		_ = w.write(map[string]any{"ok": false, "error": map[string]any{"kind": "leaf_start", "reason": reason,
			"message": msg, "want": want, "got": got}})
		return errors.New(msg)
	}
	if h.Hello.Protocol != leafProtocolVersion {
		return refuse("protocol", fmt.Sprintf("the leaf binary %s speaks leaf protocol %d, the worker %d (rebuild the binary with this rayflow)",
			os.Args[0], leafProtocolVersion, h.Hello.Protocol), strconv.Itoa(h.Hello.Protocol), strconv.Itoa(leafProtocolVersion))
	}
	digest, err := own()
	if err != nil {
		return refuse("digest", err.Error(), h.Hello.Digest, "")
	}
	if want := h.Hello.Digest; want != "" && want != digest {
		return refuse("digest_mismatch", fmt.Sprintf("the leaf binary %s is build %s, the plan was made by build %s (deploy the same binary, or set a build revision)",
			os.Args[0], digest, want), want, digest)
	}
	return w.write(map[string]any{"ok": true, "hello": leafHello{Protocol: leafProtocolVersion, Digest: digest, PID: os.Getpid()}})
}

// serveLeaves answers the handshake, then runs leaf requests one at a
// time until in ends. The loop reads every frame itself: a leaf without a
// progress producer (every map item, every leaf under terminal_only or
// disabled) runs inline, with no goroutine hop per request; a leaf with a
// producer runs in its own goroutine while the loop reads its
// acknowledgements (the worker sends nothing else until the leaf's reply).
func serveLeaves(ctx context.Context, in io.Reader, out io.Writer, codec sdk.Codec, own func() (string, error)) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := &leafWriter{w: bufio.NewWriterSize(out, 64<<10)}
	if err := handshake(r, w, own); err != nil {
		return err
	}
	sender := &pipeSender{w: w, acks: map[int64]chan error{}}
	var running chan error // the reply error of the leaf running in its goroutine
	wait := func() error {
		if running == nil {
			return nil
		}
		err := <-running
		running = nil
		return err
	}
	for {
		var req leafInbound
		f, err := readFrameInto(r, &req)
		if err != nil {
			werr := wait()
			if err == io.EOF { // the worker closed our input
				return werr
			}
			return err
		}
		if req.Ack != nil {
			sender.resolve(*req.Ack, req.OK, req.Reason)
			continue
		}
		if err := wait(); err != nil { // the previous leaf's reply is written
			return err
		}
		var bound []byte
		if req.Bound {
			bound = f.section(0)
		}
		if req.Kind == "batch" {
			lctx, endSpan := leafSpan(ctx, req.leafRequest)
			failed, err := runBatch(lctx, codec, w, req.leafRequest, bound, f.sections)
			endSpan(failed) // the batch's span fails with its failing item
			if err != nil {
				return err
			}
			continue
		}
		if req.Progress == nil || req.Kind != "" {
			if err := serveLeaf(ctx, codec, w, req.leafRequest, nil, bound, f.section(1)); err != nil {
				return err
			}
			continue
		}
		var prod *progress.Producer
		if enc, err := progress.NewEncoder(req.Progress.Identity, nil, nil); err == nil {
			prod, _ = progress.NewProducer(progress.ProducerConfig{Encoder: enc, NodeID: req.Node, Label: req.Progress.Label,
				Sender: sender, SettleWait: 500 * time.Millisecond})
		}
		running = make(chan error, 1)
		go func(req leafRequest, in []byte) { running <- serveLeaf(ctx, codec, w, req, prod, bound, in) }(req.leafRequest, f.section(1))
	}
}

// leafInbound is a frame from the worker to the leaf process: a leaf
// request, or the acknowledgement of a progress event (Ack set).
type leafInbound struct {
	leafRequest
	Ack    *int64  `json:"ack"`
	OK     bool    `json:"ok"`
	Reason string  `json:"reason"`
	Sizes  []int64 `json:"sizes"`
}

func (h *leafInbound) sectionSizes() []int64 { return h.Sizes }

// serveLeaf runs one leaf request (reporting through prod when it is not
// nil) and writes its reply.
func serveLeaf(ctx context.Context, codec sdk.Codec, w *leafWriter, req leafRequest, prod *progress.Producer, bound, in []byte) error {
	lctx, endSpan := leafSpan(ctx, req)
	lctx = withRequestIdentity(lctx, req)
	preview := ""
	if prod != nil {
		preview = req.Progress.Preview
		exec := detail.NodeExecution{AssignedResources: map[string]float64{}}
		if req.Execution != nil {
			exec = *req.Execution
		}
		prod.Started(exec)
		if preview != "" {
			prod.OutputPreview(progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewPending})
		}
		lctx = progress.Context(lctx, prod)
	}
	res, info, value := runLeaf(lctx, codec, req, bound, in)
	endSpan(info)
	if info == nil {
		if preview != "" {
			prod.OutputPreview(buildPreview(codec, preview, res))
		}
		prod.Complete()
		return w.writeOK(res)
	}
	if preview != "" {
		prod.OutputPreview(progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewUnavailable})
	}
	prod.Fail(info.Message)
	return w.write(map[string]any{"ok": false, "error": info}, value)
}

// buildPreview runs the step's registered projector on its successful
// result, beside the leaf in its process. Whatever happens (no such
// projector, a result that does not decode, an error or a panic) the
// envelope is FAILED and the leaf's result is untouched.
func buildPreview(codec sdk.Codec, name string, result []byte) (env progress.PreviewEnvelope) {
	defer func() {
		if recover() != nil {
			env = progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
		}
	}()
	p, ok := sdkrt.LookupPreview(name)
	if !ok {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
	}
	return p(codec, result, nil)
}

// runBatch runs a batch request: the step on each item in input order, one
// at a time, stopping at the first failure. The reply is {"ok": true, "n"}
// with one section per item (its encoded result), or {"ok": false, "item":
// j, "error"} (the item's error, naming its node program.ItemID(map, base+j), as an
// unbatched leaf's) with the error chain: the items after j are not run.
// It returns the failing item's error (nil when every item succeeded) and
// the error of writing the reply.
func runBatch(ctx context.Context, codec sdk.Codec, w *leafWriter, req leafRequest, bound []byte, sections [][]byte) (*errorInfo, error) {
	if req.N < 1 || len(sections) != req.N+1 {
		return nil, fmt.Errorf("leaf batch request: %d items announced, %d sent", req.N, len(sections)-1)
	}
	ctx = withRequestIdentity(ctx, req)
	outs := make([][]byte, req.N)
	for j := range req.N {
		one := req
		one.Kind = ""
		one.Node = program.ItemID(req.Map, req.Base+j)
		one.Bootstrap = req.Bootstrap && j == 0
		out, info, value := runLeaf(ctx, codec, one, bound, sections[j+1])
		if info != nil {
			return info, w.write(map[string]any{"ok": false, "item": j, "error": info}, value)
		}
		outs[j] = out
	}
	return nil, w.write(map[string]any{"ok": true, "n": req.N}, outs...)
}

// withRequestIdentity returns ctx carrying the run identity a request
// names (sdk.AttemptFrom): every request of a run carries it; a progress
// binding names it too.
func withRequestIdentity(ctx context.Context, req leafRequest) context.Context {
	switch {
	case req.Identity != nil:
		return sdkrt.WithIdentity(ctx, *req.Identity)
	case req.Progress != nil:
		return sdkrt.WithIdentity(ctx, req.Progress.Identity)
	}
	return ctx
}

// runLeaf runs one leaf, turning an error or a panic into errorInfo.
func runLeaf(ctx context.Context, codec sdk.Codec, req leafRequest, bound, in []byte) (out []byte, info *errorInfo, value []byte) {
	leaf, ok := sdkrt.LookupLeaf(req.Name)
	switch req.Kind {
	case "reduce", "check_reducer":
		var r sdkrt.ReducerLeaf
		if r, ok = sdkrt.LookupReducer(req.Name); ok {
			leaf = func(ctx context.Context, codec sdkrt.Codec, acc, item []byte) ([]byte, error) {
				if req.Kind == "check_reducer" {
					return nil, nil
				}
				return r(ctx, codec, acc, item)
			}
		}
	}
	if !ok {
		return nil, &errorInfo{Node: req.Node, Callable: req.Name, Type: "*ray.LeafError",
			Message: fmt.Sprintf("rayflow: step %q is not registered in the leaf binary %s (is its flow built at package initialization, and does main call ServeLeafIfRequested?)", req.Name, os.Args[0])}, nil
	}
	defer func() {
		if p := recover(); p != nil {
			out, value = nil, nil
			info = &errorInfo{Node: req.Node, Callable: req.Name, Panic: true, Type: "*flowgraph.PanicError",
				Message: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	var err error
	if req.Bootstrap {
		err = sdkrt.RunBootstrap(ctx)
	}
	if err == nil {
		out, err = leaf(ctx, codec, bound, in)
	}
	if err == nil {
		return out, nil, nil
	}
	// The whole chain: every link's message and type, registered types'
	// values and registered sentinels' names (internal/errwire).
	info = &errorInfo{Node: req.Node, Callable: req.Name, Chain: true}
	var ve *flowgraph.ValueError
	if errors.As(err, &ve) && ve.Node == "" {
		// The codec refused the leaf's result: the engine reports the
		// node's value error, carrying the codec's own error.
		info.Refused, info.RefusedType = ve.Value, ve.Type
		err = ve.Err
	}
	info.Type, info.Message = fmt.Sprintf("%T", err), err.Error()
	return nil, info, errwire.Marshal(codec, err)
}

// serveLeafFrame runs one plain or batch leaf request frame in this
// process and hands its reply frame to reply, which must copy what it
// keeps (a leaf library's entry point). The frame is only read: readFrame
// copies what the leaf keeps.
func serveLeafFrame(ctx context.Context, frame []byte, reply func([]byte)) {
	out := leafFrameBufs.Get().(*bytes.Buffer)
	defer leafFrameBufs.Put(out)
	out.Reset()
	// A 16-byte bufio buffer: the reply's parts go straight to out.
	w := &leafWriter{w: bufio.NewWriterSize(out, 16)}
	var req leafInbound
	f, err := readFrameInto(bytes.NewReader(frame), &req)
	if err == nil {
		var bound []byte
		if req.Bound {
			bound = f.section(0)
		}
		if req.Kind == "batch" {
			_, err = runBatch(ctx, sdk.DefaultCodec, w, req.leafRequest, bound, f.sections)
		} else {
			err = serveLeaf(ctx, sdk.DefaultCodec, w, req.leafRequest, nil, bound, f.section(1))
		}
	}
	if err != nil {
		out.Reset()
		w = &leafWriter{w: bufio.NewWriterSize(out, 16)}
		_ = w.write(map[string]any{"ok": false, "error": map[string]any{"kind": "leaf_start", "reason": "protocol", "message": err.Error()}})
	}
	reply(out.Bytes())
}

var leafFrameBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}
