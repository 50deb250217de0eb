package ray

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rayflow/rayflow/internal/raytoken"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/internal/rayenv"
)

//go:embed bridge.py
var bridgeSource []byte

// bridgeProtocolVersion is the bridge protocol version this package speaks.
const bridgeProtocolVersion = 4

// objHandle is an opaque reference to a value the runtime owns (a Ray
// ObjectRef in the bridge's table).
type objHandle int64

// taskArg is a leaf or collector argument: a handle, or bytes passed inline.
type taskArg struct {
	Handle objHandle
	Bytes  []byte // used when Handle is 0
}

// leafTask is one leaf submission.
type leafTask struct {
	Exe string // the leaf binary
	Lib string // the leaf library (Options.LeafLibrary), "" for none
	// LibRevision is the VCS revision the leaf library must carry ("" for
	// no check: the plan's revision comes from the environment).
	LibRevision string
	Callable    string         // registered step name
	Node        string         // runtime node id, for errors
	Bound       []byte         // encoded bound value, nil when none
	Arg         taskArg        // the input
	Options     map[string]any // Ray task options
	// OptionsKey identifies Options (equal keys: equal options; "" lets the
	// bridge derive it). The runner computes it once per step.
	OptionsKey string
	// Digest is the plan's executable digest ("sha256:<hex>") that the
	// leaf process must have, "" when the plan's code identity is a
	// revision (leaf handshake, PROTOCOL.md).
	Digest string
	// Bootstrap runs the worker-start hook (sdk.RegisterBootstrap) once per
	// leaf process before the step.
	Bootstrap bool
	// Progress is set when the leaf reports to a collector actor.
	Progress *leafProgressEvent
	// Trace is the W3C traceparent of the leaf's node span ("" when not
	// traced): the leaf process starts the leaf's span from it.
	Trace string
	// Identity is the run identity's JSON ("" for none): the leaf's step
	// reads it from its context (sdk.AttemptFrom).
	Identity string
	// Inline asks for the task's result bytes with its ready event when
	// they are at most Inline bytes (0: never), so that Get answers
	// without a round trip: a resumable map records every item's result.
	Inline int
	// Items makes the task a batch (SubmitBatch): the step runs on each
	// of these encoded items in order, items Base.. of map Map (Arg is
	// unused; Node is the first item's).
	Items [][]byte
	Map   string
	Base  int
}

// leafProgressEvent binds a leaf to the run's collector actor and graph node.
type leafProgressEvent struct {
	Actor    int64
	Identity common.RunIdentity
	Label    string
	// Preview is the step's output-preview projector, run beside the leaf
	// after success ("" when none).
	Preview string
}

// readyRef is a handle whose value is available, or its failure.
type readyRef struct {
	Handle objHandle
	Err    *errorInfo
	Value  []byte // encoded error value when Err is a typed leaf error
	// Result is the task's result when it was sent with the ready event
	// (leafTask.Inline), which Get then answers with.
	Result  []byte
	Inlined bool
}

// rayRuntime is what the engine needs from Ray. The Python bridge implements
// it; a native Go runtime for Ray could replace it.
type rayRuntime interface {
	Put(ctx context.Context, data []byte) (objHandle, error)
	Submit(ctx context.Context, t leafTask) (objHandle, error)
	// SubmitBatch submits one task running the step on t.Items: the
	// batch's handle (ready when the task ends; its failure is the failing
	// item's) and one result handle per item (not watched: await the
	// batch).
	SubmitBatch(ctx context.Context, t leafTask) (objHandle, []objHandle, error)
	// Collect builds a JSON array of the values in order, in Ray; with
	// concat the values are JSON arrays, and the result is their
	// concatenation.
	Collect(ctx context.Context, args []taskArg, concat bool) (objHandle, error)
	// Await waits until the task behind h has finished and reports its
	// failure, if any.
	Await(ctx context.Context, h objHandle) (readyRef, error)
	// Wait returns when any (or, with all, every) handle is ready, or
	// after timeout with those ready so far.
	Wait(ctx context.Context, hs []objHandle, all bool, timeout time.Duration) ([]readyRef, error)
	// Get fetches a value's bytes; a failed value returns its failure.
	Get(ctx context.Context, h objHandle) ([]byte, *errorInfo, []byte, error)
	Cancel(ctx context.Context, hs []objHandle) error
	Release(hs []objHandle)
	// CreateActor creates a result-buffer or fold actor and returns its
	// id and the handle of its readiness handshake (await it before any
	// leaf effect).
	CreateActor(ctx context.Context, a actorSpec) (actor int64, ready objHandle, err error)
	// CallActor submits one actor call; its handle is ready when the call
	// has finished. Finalize's handle is the payload, its readiness the
	// acknowledgement's.
	CallActor(ctx context.Context, actor int64, method string, args []any) (objHandle, error)
	// KillActor kills an actor best effort and forgets it.
	KillActor(actor int64)
	Close() error
}

// actorSpec describes a result-buffer ("buffer") or fold ("fold") actor.
type actorSpec struct {
	Kind     string
	Options  map[string]any // num_cpus, memory, resources, scheduling_strategy
	MaxBytes int64
	// Buffer: the item cap.
	MaxItems int
	// Fold: the reducer (run in the actor's Go leaf process), the initial
	// accumulator's encoded bytes and the out-of-order retention bound.
	Exe, Callable, Node string
	Digest              string // as leafTask.Digest
	Identity            string // as leafTask.Identity
	Bootstrap           bool
	Initial             []byte
	MaxRetained         int
}

// bridgeOptions configure the bridge process.
type bridgeOptions struct {
	Python  string    // interpreter with ray installed
	Stderr  io.Writer // bridge logs; nil: os.Stderr
	Address string    // "", "local": a private local cluster; else a cluster address
	// NumCPUs and ObjectStoreMemory size a private local cluster.
	NumCPUs           int
	ObjectStoreMemory int64
	ConnectTimeout    time.Duration
	// RuntimeEnv is the job's Ray runtime_env (for example a working_dir
	// that ships the leaf binary to a remote cluster).
	RuntimeEnv map[string]any
	// HealthInterval is how often the coordinator checks that the
	// cluster's GCS accepts connections (default 1 s); HealthFailures
	// consecutive failures (default 3) mean the cluster is lost: every call
	// in flight and every later call fails with a *BridgeError (Lost).
	HealthInterval time.Duration
	HealthFailures int
}

// rayBridge is the Python bridge process and its protocol client.
type rayBridge struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex
	w      *bufio.Writer
	mu     sync.Mutex
	nextID int64
	calls  map[int64]chan *frame
	dead   error         // why the bridge is unusable (first failure wins)
	failed chan struct{} // closed when dead is set
	done   chan struct{} // closed when the reader ends
	exited chan struct{} // closed when the process is reaped
	// private: the bridge started its own local cluster (its processes
	// are in the bridge's process group).
	private bool
	closing bool
	// remote: a Ray Client connection (ray://), whose GCS and raylet need
	// not be reachable from here: no health checks.
	remote bool
	tail   *tailBuffer
	Hello  bridgeHello
	cpus   int // the cluster's CPUs at connection (0: unknown)
	// Submissions are batched: Submit queues (pending, under pmu) and
	// signals kick; the flusher goroutine, or any other send first, writes
	// every queued submission in one frame, under wmu, so the bridge sees
	// ops in call order.
	pmu     sync.Mutex
	pending []leafSubmit
	kick    chan struct{}
	optIDs  map[string]int // option set key -> id (under wmu)
	// subBuf is the submit frames' header scratch and quoted the JSON
	// strings its leaves repeat (both under wmu).
	subBuf []byte
	quoted map[string][]byte
	// hdrBuf is the hand-written collect and release headers' scratch
	// (under wmu): bounded by a chunk's, reused so that a chunk leaves no
	// transient buffer in the heap.
	hdrBuf []byte
	// Handles are chosen here, so creating ops are pipelined (no reply).
	nextHandle int64
	live       map[objHandle]bool            // created and not released
	readyCache map[objHandle]readyRef        // finished, not yet awaited
	leaves     map[objHandle]bool            // leaf tasks submitted, not yet ready (metrics)
	watchers   map[objHandle][]chan readyRef // awaiting
	// GCSAddress is the connected cluster's address (host:port).
	GCSAddress string
	// SessionDir is the Ray session directory of the connected cluster.
	SessionDir string
	// RayletAddress is the raylet the bridge drives through (host:port).
	RayletAddress string
}

// bridgeHello is the bridge's handshake.
type bridgeHello struct {
	Protocol    int     `json:"protocol"`
	Ray         *string `json:"ray"`
	Python      string  `json:"python"`
	ImportError *string `json:"import_error"`
	Executable  string  `json:"executable"`
}

// bridgeScript writes the embedded bridge to the cache directory under a
// content-addressed name and returns its path.
func bridgeScript() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "rayflow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bridgeSource)
	path := filepath.Join(dir, "bridge-"+hex.EncodeToString(sum[:8])+".py")
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, bridgeSource) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, "bridge-*.tmp")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(bridgeSource); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// The fixes of setup problems name the commands, for a project of its own
// as well as in a rayflow checkout (whose Makefile has them as targets).
const (
	venvFix = "create a Python with Ray next to your module: python3 -m venv .venv-ray && " +
		".venv-ray/bin/pip install 'ray[default]==" + rayenv.RayVersion + "' (make ray-venv in a rayflow checkout), " +
		"or set RAYFLOW_PYTHON to a Python that has it"
	clusterFix = "start the cluster (ray start --head from that Python; make ray-up in a rayflow checkout), " +
		"or use Options.Address \"local\" for a private one"
)

// startBridge starts the bridge, checks the handshake and connects it to
// Ray. Every setup problem is a *SetupError naming its fix.
func startBridge(ctx context.Context, o bridgeOptions) (*rayBridge, error) {
	if o.Python == "" {
		return nil, &SetupError{Problem: "no Python interpreter with Ray found", Fix: venvFix}
	}
	if _, err := exec.LookPath(o.Python); err != nil {
		return nil, &SetupError{Problem: fmt.Sprintf("Python interpreter %s: %v", o.Python, err), Fix: venvFix}
	}
	if err := checkAddress(o.Address); err != nil {
		return nil, err
	}
	script, err := bridgeScript()
	if err != nil {
		return nil, fmt.Errorf("rayflow: writing the ray bridge: %w", err)
	}
	cmd := exec.Command(o.Python, "-u", script)
	// RAY_ENABLE_AUTO_CONNECT=0: a Ray call after ray.shutdown (or after a
	// lost connection) fails instead of starting a new local cluster.
	cmd.Env = append(os.Environ(), "RAY_USAGE_STATS_ENABLED=0", "RAY_IGNORE_UNHANDLED_ERRORS=1", "PYTHONUNBUFFERED=1", "RAY_ENABLE_AUTO_CONNECT=0")
	// Its own process group: a private cluster's processes (Ray makes the
	// driver a group leader and starts them in its group) end with it.
	cmd.SysProcAttr = bridgeProcAttr()
	if o.Address == "" || o.Address == "local" {
		// A private cluster serves this machine only. With Ray's multi-node
		// switch off (on by default on Linux, off on macOS and Windows),
		// its node address is the loopback's, 127.0.0.1, and the GCS, the
		// raylet, the agents and the workers listen there rather than on
		// every interface.
		cmd.Env = append(cmd.Env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0")
	}
	if o.Address != "" && o.Address != "local" && os.Getenv("RAY_AUTH_MODE") == "" && authTokenAvailable() {
		// Ray 2.60 heads started with `ray start` use token authentication;
		// a driver must opt in to send the token.
		cmd.Env = append(cmd.Env, "RAY_AUTH_MODE=token")
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	b := &rayBridge{cmd: cmd, calls: map[int64]chan *frame{}, live: map[objHandle]bool{}, readyCache: map[objHandle]readyRef{}, leaves: map[objHandle]bool{}, watchers: map[objHandle][]chan readyRef{}, done: make(chan struct{}), kick: make(chan struct{}, 1), optIDs: map[string]int{}, quoted: map[string][]byte{}, exited: make(chan struct{}), failed: make(chan struct{}), tail: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = io.MultiWriter(stderr, b.tail)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, &SetupError{Problem: fmt.Sprintf("starting %s: %v", o.Python, err), Fix: venvFix}
	}
	b.stdin, b.w = stdin, bufio.NewWriterSize(rawWriter(stdin), 64<<10)
	go func() { _ = cmd.Wait(); close(b.exited) }()
	r := bufio.NewReaderSize(rawReader(stdout), 256<<10)

	// Handshake, before anything is submitted.
	helloCh := make(chan error, 1)
	go func() {
		f, err := readFrame(r)
		if err == nil {
			err = f.decode(&b.Hello)
		}
		helloCh <- err
	}()
	select {
	case err = <-helloCh:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(60 * time.Second):
		err = errors.New("no handshake within 60s")
	}
	if err != nil {
		b.kill()
		return nil, &SetupError{Problem: fmt.Sprintf("the bridge (%s) did not complete its handshake: %v\n%s", o.Python, err, b.tail.String()),
			Fix: venvFix}
	}
	if err := b.checkHello(o.Python); err != nil {
		b.kill()
		return nil, err
	}
	go b.readLoop(r)
	go b.flushLoop()

	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := map[string]any{"op": "init", "address": o.Address, "num_cpus": o.NumCPUs, "object_store_memory": o.ObjectStoreMemory}
	if len(o.RuntimeEnv) > 0 {
		req["runtime_env"] = o.RuntimeEnv
	}
	f, err := b.call(ictx, req)
	if err == nil {
		var info struct {
			GCS     string `json:"gcs_address"`
			Session string `json:"session_dir"`
			Raylet  string `json:"raylet_address"`
			Private bool   `json:"private"`
			// Resources are the cluster's at connection (automatic batching sizes by its CPUs).
			Resources map[string]float64 `json:"cluster_resources"`
		}
		if err = f.decode(&info); err == nil {
			b.GCSAddress, b.SessionDir, b.RayletAddress = info.GCS, info.Session, info.Raylet
			b.cpus = int(info.Resources["CPU"])
			b.mu.Lock()
			b.private = info.Private
			b.mu.Unlock()
		}
	}
	if err != nil {
		b.kill()
		where, fix := "a private local cluster", "see Ray's log in the problem (a private cluster needs free ports and room in /tmp), or connect to a running cluster (Options.Address)"
		if o.Address != "" && o.Address != "local" {
			where, fix = "the cluster at "+o.Address, clusterFix
		}
		return nil, &SetupError{Problem: fmt.Sprintf("connecting to %s: %v", where, err), Fix: fix}
	}
	b.remote = strings.Contains(o.Address, "://")
	if b.GCSAddress != "" && !b.remote {
		interval, failures := o.HealthInterval, o.HealthFailures
		if interval <= 0 {
			interval = time.Second
		}
		if failures <= 0 {
			failures = 3
		}
		go b.watchCluster(interval, failures)
	}
	return b, nil
}

// fail makes the bridge unusable with err (the first failure wins): every
// call in flight and every later call returns it.
func (b *rayBridge) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead != nil {
		return
	}
	b.dead = err
	b.calls = nil
	b.watchers = nil
	close(b.failed)
}

// Err returns why the bridge is unusable, or nil while it works.
func (b *rayBridge) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dead
}

// healthy dials the GCS and the bridge's raylet (a driver cannot work
// without either).
func (b *rayBridge) healthy(timeout time.Duration) error {
	if b.remote {
		return nil
	}
	if err := dialTimeout(b.GCSAddress, timeout); err != nil {
		return fmt.Errorf("the GCS: %w", err)
	}
	if b.RayletAddress != "" {
		if err := dialTimeout(b.RayletAddress, timeout); err != nil {
			return fmt.Errorf("the raylet: %w", err)
		}
	}
	return nil
}

// CheckCluster dials the GCS once after a run failed with cause: when it
// does not answer, the cluster is lost (Ray may report a dead head as a
// crashed worker first): the bridge fails and the returned
// *BridgeError (Lost) wraps cause. It returns nil while the GCS answers.
func (b *rayBridge) CheckCluster(cause error) error {
	if err := b.Err(); err != nil {
		if errors.Is(err, ErrClusterLost) {
			return err
		}
		return nil
	}
	if b.GCSAddress == "" {
		return nil
	}
	if b.healthy(time.Second) == nil {
		return nil
	}
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if closing {
		return nil
	}
	b.fail(&BridgeError{Lost: true, Address: b.GCSAddress, Err: cause})
	go b.kill()
	return b.Err()
}

// watchCluster dials the GCS every interval; failures consecutive
// failures mean the cluster is lost: the bridge fails with a
// *BridgeError (Lost) and is killed (a driver whose head is gone can block
// for a minute in Ray before it notices).
func (b *rayBridge) watchCluster(interval time.Duration, failures int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	bad := 0
	since := time.Time{}
	for {
		select {
		case <-b.failed:
			return
		case <-t.C:
		}
		err := b.healthy(interval)
		if err == nil {
			bad = 0
			continue
		}
		if bad == 0 {
			since = time.Now()
		}
		bad++
		if bad < failures {
			continue
		}
		b.mu.Lock()
		closing := b.closing
		b.mu.Unlock()
		if closing {
			return
		}
		b.fail(&BridgeError{Lost: true, Address: b.GCSAddress, Err: err, For: time.Since(since).Round(time.Millisecond)})
		b.kill()
		return
	}
}

func (b *rayBridge) checkHello(python string) error {
	h := b.Hello
	if h.Protocol != bridgeProtocolVersion {
		return &SetupError{Problem: fmt.Sprintf("bridge protocol %d, this coordinator speaks %d", h.Protocol, bridgeProtocolVersion), Fix: "clear the rayflow cache directory and rebuild"}
	}
	if h.Ray == nil {
		msg := "unknown"
		if h.ImportError != nil {
			msg = *h.ImportError
		}
		return &SetupError{Problem: fmt.Sprintf("ray is not importable by %s (%s): %s", python, h.Python, msg),
			Fix: venvFix}
	}
	if *h.Ray != rayenv.RayVersion {
		return &SetupError{Problem: fmt.Sprintf("%s has Ray %s, rayflow requires %s", python, *h.Ray, rayenv.RayVersion),
			Fix: venvFix}
	}
	return nil
}

// PID is the bridge process id.
func (b *rayBridge) PID() int { return b.cmd.Process.Pid }

// rawReader and rawWriter wrap the bridge's pipes in rawIO (the
// coordinator idles between the bridge's frames, as a leaf process does
// between requests); anything else is returned as it is.
func rawReader(r io.Reader) io.Reader {
	if f, ok := r.(pipeFile); ok {
		return rawIO(f)
	}
	return r
}

func rawWriter(w io.Writer) io.Writer {
	if f, ok := w.(pipeFile); ok {
		return rawIO(f)
	}
	return w
}

func (b *rayBridge) readLoop(r io.Reader) {
	var err error
	var hs []objHandle // an "ok" event's handles, reused
	for {
		var raw []byte
		if raw, err = readHeader(r); err != nil {
			break
		}
		var ok bool
		if hs, ok = parseOKEvent(raw, hs[:0]); ok {
			// The common event, every leaf's success: read without the
			// JSON decoder.
			b.deliverOK(hs)
			continue
		}
		var f *frame
		if f, err = readFrameAfter(r, raw); err != nil {
			break
		}
		var h struct {
			ID    int64       `json:"id"`
			Event string      `json:"event"`
			HS    []objHandle `json:"hs"`
		}
		if err = f.decode(&h); err != nil {
			break
		}
		if h.Event == "ready" {
			if err = b.deliver(f); err != nil {
				break
			}
			continue
		}
		if h.Event == "ok" {
			b.deliverOK(h.HS)
			continue
		}
		b.mu.Lock()
		ch := b.calls[h.ID]
		delete(b.calls, h.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the bridge process exited")
	}
	// Give the process a moment to be reaped so its status and log tail
	// are part of the error.
	select {
	case <-b.exited:
		if st := b.cmd.ProcessState; st != nil {
			err = fmt.Errorf("%w (%s)", err, st)
		}
	case <-time.After(2 * time.Second):
	}
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if !closing && b.GCSAddress != "" && b.healthy(time.Second) != nil {
		// The driver died because its cluster did (a killed raylet ends
		// its drivers): say so.
		b.fail(&BridgeError{Lost: true, Address: b.GCSAddress, Err: err, Log: b.tail.String()})
	}
	b.fail(&BridgeError{Err: err, Log: b.tail.String()})
	close(b.done)
	b.kill()
}

// call sends a request and waits for its response frame.
func (b *rayBridge) call(ctx context.Context, req map[string]any, sections ...[]byte) (*frame, error) {
	ch := make(chan *frame, 1)
	b.mu.Lock()
	if b.dead != nil {
		err := b.dead
		b.mu.Unlock()
		return nil, err
	}
	b.nextID++
	id := b.nextID
	b.calls[id] = ch
	b.mu.Unlock()
	req["id"] = id
	if err := b.send(req, sections...); err != nil {
		return nil, err
	}
	select {
	case <-b.failed:
		return nil, b.Err()
	case f := <-ch:
		var h struct {
			OK    bool       `json:"ok"`
			Error *errorInfo `json:"error"`
		}
		if err := f.decode(&h); err != nil {
			return nil, &BridgeError{Err: err}
		}
		if !h.OK {
			if h.Error == nil {
				h.Error = &errorInfo{Kind: "bridge", Message: "failed"}
			}
			return nil, &BridgeError{Err: fmt.Errorf("%s %s: %s", req["op"], h.Error.Type, h.Error.Message)}
		}
		return f, nil
	case <-ctx.Done():
		b.mu.Lock()
		if b.calls != nil {
			delete(b.calls, id)
		}
		b.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (b *rayBridge) send(req map[string]any, sections ...[]byte) error {
	return b.sendWith(func() error { return writeFrame(b.w, req, sections...) })
}

// sendHeader is send for a hand-written header: build appends the JSON
// header to its argument, leaving the object open for the "sizes".
func (b *rayBridge) sendHeader(build func([]byte) []byte, sections ...[]byte) error {
	return b.sendWith(func() error {
		b.hdrBuf = appendSizes(build(b.hdrBuf[:0]), sections)
		// b.w buffers: the frame's parts are written as they are.
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b.hdrBuf)))
		_, err := b.w.Write(n[:])
		if err == nil {
			_, err = b.w.Write(b.hdrBuf)
		}
		for _, s := range sections {
			if err == nil {
				_, err = b.w.Write(s)
			}
		}
		return err
	})
}

// sendWith writes one frame (write, under wmu) after every queued
// submission, so that the bridge sees ops in call order, and flushes.
func (b *rayBridge) sendWith(write func() error) error {
	if err := b.Err(); err != nil {
		return err
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	err := b.writeSubmitsLocked()
	if err == nil {
		err = write()
	}
	if err == nil {
		err = b.w.Flush()
	}
	return b.writeErr(err)
}

func (b *rayBridge) writeErr(err error) error {
	if err == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead != nil {
		return b.dead
	}
	return &BridgeError{Err: err}
}

// leafSubmit is a queued submission.
type leafSubmit struct {
	h     objHandle
	items []objHandle // a batch's item handles
	t     leafTask
}

type batchWire struct {
	Map   string      `json:"map"`
	Base  int         `json:"base"`
	Items []int       `json:"items"` // section indices
	IH    []objHandle `json:"ih"`    // item handles
}

type argWire struct {
	H objHandle `json:"h,omitempty"`
	S *int      `json:"s,omitempty"`
}

type progressWire struct {
	Actor    int64              `json:"actor"`
	Identity common.RunIdentity `json:"identity"`
	Label    string             `json:"label"`
	Preview  string             `json:"preview,omitempty"`
}

// flushLoop writes queued submissions as they come: while a frame is
// being written, the next ones queue up and go in the next frame.
func (b *rayBridge) flushLoop() {
	for {
		select {
		case <-b.kick:
		case <-b.failed:
			return
		}
		b.wmu.Lock()
		err := b.writeSubmitsLocked()
		if err == nil {
			err = b.w.Flush()
		}
		b.wmu.Unlock()
		if err != nil {
			b.fail(b.writeErr(err))
			return
		}
	}
}

// writeSubmitsLocked writes every queued submission as one submit frame
// (wmu held; not flushed). The header is written by hand (PROTOCOL.md's
// submit item; encoding/json was most of the coordinator's CPU per leaf):
// the strings every leaf of a run repeats are quoted once (quotedLocked).
func (b *rayBridge) writeSubmitsLocked() error {
	b.pmu.Lock()
	batch := b.pending
	b.pending = nil
	b.pmu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	var sections [][]byte
	buf := append(b.subBuf[:0], `{"op":"submit","id":0,"items":[`...)
	for i, q := range batch {
		t := q.t
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"h":`...)
		buf = strconv.AppendInt(buf, int64(q.h), 10)
		buf = append(append(buf, `,"exe":`...), b.quotedLocked(t.Exe)...)
		if t.Lib != "" {
			buf = append(append(buf, `,"lib":`...), b.quotedLocked(t.Lib)...)
		}
		if t.LibRevision != "" {
			buf = append(append(buf, `,"lib_rev":`...), b.quotedLocked(t.LibRevision)...)
		}
		buf = append(append(buf, `,"name":`...), b.quotedLocked(t.Callable)...)
		buf = appendJSONString(append(buf, `,"node":`...), t.Node)
		buf = append(append(buf, `,"digest":`...), b.quotedLocked(t.Digest)...)
		if len(t.Options) > 0 {
			key := t.OptionsKey
			if key == "" {
				k, err := json.Marshal(t.Options)
				if err != nil {
					return err
				}
				key = string(k)
			}
			id, ok := b.optIDs[key]
			if !ok {
				id = len(b.optIDs) + 1
				b.optIDs[key] = id
				opts, err := json.Marshal(t.Options)
				if err != nil {
					return err
				}
				buf = append(append(buf, `,"options":`...), opts...)
			}
			buf = strconv.AppendInt(append(buf, `,"o":`...), int64(id), 10)
		}
		if t.Bootstrap {
			buf = append(buf, `,"bootstrap":true`...)
		}
		if t.Bound != nil {
			buf = strconv.AppendInt(append(buf, `,"bound":`...), int64(len(sections)), 10)
			sections = append(sections, t.Bound)
		}
		switch {
		case q.items != nil:
			bw := &batchWire{Map: t.Map, Base: t.Base, IH: q.items, Items: make([]int, len(t.Items))}
			for j, it := range t.Items {
				bw.Items[j] = len(sections)
				sections = append(sections, it)
			}
			js, err := json.Marshal(bw)
			if err != nil {
				return err
			}
			buf = append(append(buf, `,"batch":`...), js...)
		case t.Arg.Handle != 0:
			buf = strconv.AppendInt(append(buf, `,"arg":{"h":`...), int64(t.Arg.Handle), 10)
			buf = append(buf, '}')
		default:
			buf = strconv.AppendInt(append(buf, `,"arg":{"s":`...), int64(len(sections)), 10)
			buf = append(buf, '}')
			sections = append(sections, t.Arg.Bytes)
		}
		if p := t.Progress; p != nil {
			js, err := json.Marshal(&progressWire{Actor: p.Actor, Identity: p.Identity, Label: p.Label, Preview: p.Preview})
			if err != nil {
				return err
			}
			buf = append(append(buf, `,"progress":`...), js...)
		}
		if t.Trace != "" {
			buf = appendJSONString(append(buf, `,"trace":`...), t.Trace)
		}
		if t.Identity != "" {
			buf = append(append(buf, `,"ident":`...), b.quotedLocked(t.Identity)...)
		}
		if t.Inline != 0 {
			buf = strconv.AppendInt(append(buf, `,"inline":`...), int64(t.Inline), 10)
		}
		buf = append(buf, '}')
	}
	buf = appendSizes(append(buf, ']'), sections)
	if cap(buf) <= 1<<20 {
		b.subBuf = buf // kept for the next frame (a burst's frames are alike)
	} else {
		b.subBuf = nil
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(buf)))
	_, err := b.w.Write(n[:])
	if err == nil {
		_, err = b.w.Write(buf)
	}
	for _, s := range sections {
		if err == nil {
			_, err = b.w.Write(s)
		}
	}
	return err
}

// quotedLocked returns s as a JSON string, quoted once per distinct s
// (the executable, step names, the digest, the run identity: the same for
// many leaves; wmu held).
func (b *rayBridge) quotedLocked(s string) []byte {
	if q, ok := b.quoted[s]; ok {
		return q
	}
	if len(b.quoted) >= 256 {
		clear(b.quoted)
	}
	q := appendJSONString(nil, s)
	b.quoted[s] = q
	return q
}

// appendJSONString appends s as a JSON string: printable ASCII without a
// quote or a backslash (node ids, paths, names) as it is, anything else
// through encoding/json.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// newHandle allocates a handle for a creating op.
func (b *rayBridge) newHandle() objHandle {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextHandle++
	h := objHandle(b.nextHandle)
	b.live[h] = true
	return h
}

// Put stores data in the object store.
func (b *rayBridge) Put(ctx context.Context, data []byte) (objHandle, error) {
	h := b.newHandle()
	return h, b.send(map[string]any{"op": "put", "id": 0, "h": h}, data)
}

// argSpec is a task argument on the wire (argWire, not a map per
// argument: a chunk's collect request has 1,024 of them).
func argSpec(a taskArg, sections *[][]byte) argWire {
	if a.Handle != 0 {
		return argWire{H: a.Handle}
	}
	*sections = append(*sections, a.Bytes)
	s := len(*sections) - 1
	return argWire{S: &s}
}

// Submit submits one leaf (pipelined: no reply is awaited; submissions
// are batched into frames by the flusher).
func (b *rayBridge) Submit(ctx context.Context, t leafTask) (objHandle, error) {
	if err := b.Err(); err != nil {
		return 0, err
	}
	h := b.newHandle()
	b.leafSubmitted(h)
	b.pmu.Lock()
	b.pending = append(b.pending, leafSubmit{h: h, t: t})
	b.pmu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return h, nil
}

// SubmitBatch submits one task for a batch of map items (pipelined, like
// Submit).
func (b *rayBridge) SubmitBatch(ctx context.Context, t leafTask) (objHandle, []objHandle, error) {
	if err := b.Err(); err != nil {
		return 0, nil, err
	}
	if len(t.Items) == 0 {
		return 0, nil, errors.New("rayflow: an empty batch")
	}
	h := b.newHandle()
	b.leafSubmitted(h)
	items := make([]objHandle, len(t.Items))
	for i := range items {
		items[i] = b.newHandle()
	}
	b.pmu.Lock()
	b.pending = append(b.pending, leafSubmit{h: h, items: items, t: t})
	b.pmu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return h, items, nil
}

// Warm submits the warm-up: a leaf task that starts a worker's leaf
// process of exe, or loads the leaf library lib when set (pipelined; await
// the handle).
func (b *rayBridge) Warm(ctx context.Context, exe, lib string) (objHandle, error) {
	h := b.newHandle()
	return h, b.send(map[string]any{"op": "warm", "id": 0, "h": h, "exe": exe, "lib": lib})
}

// Collect submits an ordered JSON-array collector task.
func (b *rayBridge) Collect(ctx context.Context, args []taskArg, concat bool) (objHandle, error) {
	h := b.newHandle()
	var sections [][]byte
	for _, a := range args {
		if a.Handle == 0 {
			sections = append(sections, a.Bytes)
		}
	}
	// Written by hand: a chunk's 1,024 arguments as maps or structs through
	// encoding/json were the coordinator's largest transient.
	return h, b.sendHeader(func(buf []byte) []byte {
		buf = append(buf, `{"op":"collect","id":0,"h":`...)
		buf = strconv.AppendInt(buf, int64(h), 10)
		if concat {
			buf = append(buf, `,"concat":true`...)
		}
		buf = append(buf, `,"args":[`...)
		s := 0
		for i, a := range args {
			if i > 0 {
				buf = append(buf, ',')
			}
			if a.Handle != 0 {
				buf = append(buf, `{"h":`...)
				buf = strconv.AppendInt(buf, int64(a.Handle), 10)
			} else {
				buf = append(buf, `{"s":`...)
				buf = strconv.AppendInt(buf, int64(s), 10)
				s++
			}
			buf = append(buf, '}')
		}
		return append(buf, ']')
	}, sections...)
}

type readyItem struct {
	H     objHandle  `json:"h"`
	OK    bool       `json:"ok"`
	Error *errorInfo `json:"error"`
	S     *int       `json:"s"`
	V     *int       `json:"v"` // the section of the inlined result (leafTask.Inline)
}

func (r readyItem) ready(f *frame) readyRef {
	out := readyRef{Handle: r.H, Err: r.Error}
	if r.S != nil {
		out.Value = f.section(*r.S)
	}
	if r.V != nil && r.Error == nil {
		out.Result, out.Inlined = f.section(*r.V), true
	}
	return out
}

// deliver routes a batched ready event to the awaiting calls, or keeps
// it until the handle is awaited or released.
func (b *rayBridge) deliver(f *frame) error {
	var ev struct {
		Ready []readyItem `json:"ready"`
	}
	if err := f.decode(&ev); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range ev.Ready {
		b.deliverLocked(it.ready(f))
	}
	return nil
}

// deliverOK routes an "ok" event: handles whose tasks succeeded, with
// nothing else to tell.
func (b *rayBridge) deliverOK(hs []objHandle) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range hs {
		b.deliverLocked(readyRef{Handle: h})
	}
}

// deliverLocked hands r to the calls awaiting its handle, or keeps it
// until the handle is awaited or released (b.mu held).
func (b *rayBridge) deliverLocked(r readyRef) {
	b.leafFinishedLocked(r)
	if ws := b.watchers[r.Handle]; len(ws) > 0 {
		delete(b.watchers, r.Handle)
		for _, w := range ws {
			w <- r
		}
	}
	if b.live[r.Handle] {
		b.readyCache[r.Handle] = r
	}
}

// Await waits for a task handle's ready event.
func (b *rayBridge) Await(ctx context.Context, h objHandle) (readyRef, error) {
	b.mu.Lock()
	if b.dead != nil {
		err := b.dead
		b.mu.Unlock()
		return readyRef{}, err
	}
	if r, ok := b.readyCache[h]; ok {
		b.mu.Unlock()
		return r, nil
	}
	ch := make(chan readyRef, 1)
	b.watchers[h] = append(b.watchers[h], ch)
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r, nil
	case <-b.failed:
		return readyRef{}, b.Err()
	case <-ctx.Done():
		b.mu.Lock()
		if b.watchers != nil {
			ws := b.watchers[h]
			for i, w := range ws {
				if w == ch {
					b.watchers[h] = append(ws[:i], ws[i+1:]...)
					break
				}
			}
			if len(b.watchers[h]) == 0 {
				delete(b.watchers, h)
			}
		}
		b.mu.Unlock()
		return readyRef{}, ctx.Err()
	}
}

// Wait waits for handles (batched with every other wait in the bridge).
func (b *rayBridge) Wait(ctx context.Context, hs []objHandle, all bool, timeout time.Duration) ([]readyRef, error) {
	f, err := b.call(ctx, map[string]any{"op": "wait", "handles": hs, "all": all, "timeout": timeout.Seconds()})
	if err != nil {
		return nil, err
	}
	var h struct {
		Ready []readyItem `json:"ready"`
	}
	if err := f.decode(&h); err != nil {
		return nil, &BridgeError{Err: err}
	}
	out := make([]readyRef, len(h.Ready))
	for i, r := range h.Ready {
		out[i] = r.ready(f)
	}
	return out, nil
}

// Get fetches a value's bytes, or its failure.
func (b *rayBridge) Get(ctx context.Context, h objHandle) ([]byte, *errorInfo, []byte, error) {
	b.mu.Lock()
	done, ok := b.readyCache[h]
	b.mu.Unlock()
	if ok && done.Inlined {
		return done.Result, nil, nil, nil
	}
	f, err := b.call(ctx, map[string]any{"op": "get", "h": h})
	if err != nil {
		return nil, nil, nil, err
	}
	var r struct {
		Failed *errorInfo `json:"failed"`
	}
	if err := f.decode(&r); err != nil {
		return nil, nil, nil, &BridgeError{Err: err}
	}
	if r.Failed != nil {
		return nil, r.Failed, f.section(0), nil
	}
	return f.section(0), nil, nil, nil
}

// Cancel requests recursive cancellation of the handles' tasks.
func (b *rayBridge) Cancel(ctx context.Context, hs []objHandle) error {
	if len(hs) == 0 {
		return nil
	}
	_, err := b.call(ctx, map[string]any{"op": "cancel", "handles": hs})
	return err
}

// Release drops the bridge's references (no response is awaited).
func (b *rayBridge) Release(hs []objHandle) {
	if len(hs) == 0 {
		return
	}
	b.mu.Lock()
	for _, h := range hs {
		delete(b.live, h)
		delete(b.readyCache, h)
		delete(b.leaves, h)
	}
	b.mu.Unlock()
	_ = b.sendHeader(func(buf []byte) []byte {
		buf = append(buf, `{"op":"release","id":0,"handles":[`...)
		for i, h := range hs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(h), 10)
		}
		return append(buf, ']')
	})
}

// CreateActor creates an actor (pipelined) and submits its handshake.
func (b *rayBridge) CreateActor(ctx context.Context, a actorSpec) (int64, objHandle, error) {
	ready := b.newHandle()
	b.mu.Lock()
	b.nextHandle++ // actor ids share the handle counter
	actor := b.nextHandle
	b.mu.Unlock()
	req := map[string]any{"op": "actor", "id": 0, "h": ready, "actor": actor, "kind": a.Kind, "options": a.Options,
		"max_bytes": a.MaxBytes, "max_items": a.MaxItems, "exe": a.Exe, "name": a.Callable, "node": a.Node, "digest": a.Digest,
		"bootstrap": a.Bootstrap, "max_retained": a.MaxRetained, "ident": a.Identity}
	var sections [][]byte
	if a.Kind == "fold" {
		sections = append(sections, a.Initial)
	}
	return actor, ready, b.send(req, sections...)
}

// CallActor submits one actor call (pipelined). An Arg argument is passed
// as a handle or inline bytes; anything else as JSON.
func (b *rayBridge) CallActor(ctx context.Context, actor int64, method string, args []any) (objHandle, error) {
	var sections [][]byte
	specs := make([]any, len(args))
	for i, a := range args {
		if x, ok := a.(taskArg); ok {
			specs[i] = argSpec(x, &sections)
		} else {
			specs[i] = a
		}
	}
	h := b.newHandle()
	return h, b.send(map[string]any{"op": "actor_call", "id": 0, "h": h, "actor": actor, "method": method, "args": specs}, sections...)
}

// KillActor kills an actor best effort (no reply is awaited).
func (b *rayBridge) KillActor(actor int64) {
	_ = b.send(map[string]any{"op": "actor_kill", "id": 0, "actor": actor})
}

// actorState is one actor in Ray's state API.
type actorState struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// ListActors lists the actors of a class that this driver's job created,
// through Ray's state API (ray.util.state.list_actors; the cluster needs
// its dashboard).
func (b *rayBridge) ListActors(ctx context.Context, class string) ([]actorState, error) {
	f, err := b.call(ctx, map[string]any{"op": "list_actors", "class_name": class})
	if err != nil {
		return nil, err
	}
	var r struct {
		Actors []actorState `json:"actors"`
	}
	err = f.decode(&r)
	return r.Actors, err
}

// bridgeStats are the bridge's counters (tests).
type bridgeStats struct {
	Handles int `json:"handles"` // entries in its ref table
	Failed  int `json:"failed"`  // handles whose submission Ray refused, not yet released
	// DirectSubmits counts leaf tasks submitted straight through the core
	// worker (bridge.py's _Prepared), not through .remote().
	DirectSubmits int `json:"direct_submits"`
}

// Stats reports the bridge's counters (tests).
func (b *rayBridge) Stats(ctx context.Context) (bridgeStats, error) {
	var s bridgeStats
	f, err := b.call(ctx, map[string]any{"op": "stats"})
	if err != nil {
		return s, err
	}
	err = f.decode(&s)
	return s, err
}

// Close shuts the bridge down within 30 s (CloseWithin).
func (b *rayBridge) Close() error { return b.CloseWithin(30 * time.Second) }

// CloseWithin shuts the bridge down and reaps it within about timeout: a
// private cluster is ended with the bridge's process group (SIGKILL: its
// state is private and discarded, and no Ray process outlives it); a
// shared cluster's driver is disconnected (ray.shutdown), or killed when
// that does not finish in time or the cluster is unreachable. Nothing is
// started: the bridge runs with RAY_ENABLE_AUTO_CONNECT=0.
func (b *rayBridge) CloseWithin(timeout time.Duration) error {
	b.mu.Lock()
	b.closing = true
	dead, private := b.dead, b.private
	b.mu.Unlock()
	if dead != nil || private || (b.GCSAddress != "" && b.healthy(min(timeout/2, time.Second)) != nil) {
		b.fail(ErrBridgeClosed)
		b.kill()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := b.call(ctx, map[string]any{"op": "shutdown"})
	b.fail(ErrBridgeClosed)
	_ = b.stdin.Close()
	select {
	case <-b.exited:
	case <-ctx.Done():
	}
	b.kill()
	if errors.Is(err, ErrBridgeClosed) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return err
}

// kill ends the bridge's process group (the bridge and a private
// cluster's processes) and reaps the bridge.
//
// Ray makes each worker the leader of a process group of its own, so the
// bridge's group does not hold a private cluster's workers; they exit when
// their raylet dies, but one the raylet started just before (seen in CI)
// can outlive it. So a private cluster's process tree is listed before the
// group is killed and killed with it, and so is any process still naming
// the cluster's session directory.
func (b *rayBridge) kill() {
	b.mu.Lock()
	private, session := b.private, b.SessionDir
	b.mu.Unlock()
	if b.cmd.Process != nil {
		var tree []int
		if private {
			tree = processTree(b.cmd.Process.Pid)
		}
		killGroup(b.cmd.Process.Pid)
		_ = b.cmd.Process.Kill()
		killAll(tree)
	}
	if private {
		killMentioning(session)
	}
	_ = b.stdin.Close()
	<-b.exited
}

// dialTimeout connects to addr once within timeout.
func dialTimeout(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	return c.Close()
}

// checkAddress fails fast on a host:port that refuses connections.
func checkAddress(addr string) error {
	if addr == "" || addr == "local" || addr == "auto" || strings.Contains(addr, "://") {
		return nil
	}
	if err := dialCheck(addr); err != nil {
		return &SetupError{Problem: fmt.Sprintf("no Ray cluster reachable at %s: %v", addr, err), Fix: clusterFix}
	}
	return nil
}

// authTokenAvailable reports whether a Ray authentication token is
// configured ($RAY_AUTH_TOKEN, $RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token).
func authTokenAvailable() bool {
	if os.Getenv("RAY_AUTH_TOKEN") != "" {
		return true
	}
	p := raytoken.Path()
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

var _ = json.Marshal
