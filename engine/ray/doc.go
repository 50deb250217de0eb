// Package ray runs rayflow plans on a real Ray cluster from Go.
//
// Ray has no Go API, so the engine drives Ray through a small Python
// bridge (bridge.py, embedded and written to the user cache directory
// under a content-addressed name) that it starts as a child process with
// a Python that has ray[default]==2.60.0 (make ray-venv). The bridge is
// the Ray driver: it owns every ObjectRef and the coordinator holds
// opaque handles, releasing them as soon as it can. Coordinator and
// bridge speak a versioned, length-framed protocol on stdin/stdout: a
// JSON header plus raw byte sections, so payloads are never inside JSON.
// Everything the engine needs from Ray is one unexported runtime
// interface (the bridge implements it; the short tests use a fake, and a
// native Go runtime could implement it instead); the bridge itself is not
// part of this package's API. Its protocol is documented in PROTOCOL.md.
//
// Leaves run in persistent Go processes: each Ray worker keeps one child
// process of the application's own binary started in leaf mode, which
// looks steps up by their registered names. The application opts in by
// calling ServeLeafIfRequested first thing in main (and in TestMain):
//
//	func main() {
//		ray.ServeLeafIfRequested()
//		...
//	}
//
// A leaf that holds accelerators (NumGPUs, or a custom resource that is
// one of Ray's accelerators, such as neuron_cores) runs in a leaf process
// of its own, started for its task and ended after it: Ray sets
// CUDA_VISIBLE_DEVICES and the like in the worker for that task only, and
// a persistent leaf process would keep the environment of the task that
// started it. So the leaf sees exactly the devices Ray assigned, and what
// it held on them is freed when it ends (Ray's own default for GPU tasks
// ends the whole worker). Such a leaf never runs in a leaf library.
//
// Leaf libraries (Linux, opt in): Options.LeafLibrary names the
// application built a second time as a C shared library,
//
//	go build -tags rayflow_leaflib -buildmode=c-shared -o app.so ./cmd/app
//
// and each Ray worker loads it once and runs plain leaves and item batches
// in its own process, through the same Go code as a leaf process: no child
// process, no pipe, no context switch per leaf (make bench-ray compares
// both). Leaves that report progress live or are traced keep the leaf
// process, so the binary still serves them. The two builds must be the
// same code: a plan whose code identity is the executable's digest is
// refused (*SetupError: set a build revision); with a VCS revision the
// library must carry the same one (a *TaskError of kind "leaf_start",
// ErrBuildMismatch);
// with a revision from the environment the user vouches, as for leaf
// processes. A leaf's writes to os.Stdout go to the worker's log.
//
// Values stay in Ray's object store: a leaf's result is passed to the
// next task as a top-level argument, group results and a map's ordered
// results are joined into a JSON array without decoding (by a Ray task, or
// by the bridge when they are finished small results, which Ray already
// keeps in the driver's memory),
// and the coordinator fetches bytes only for the final result and for a
// map's input list, which it must split. Bounded maps run in the
// coordinator through the same map scheduler as the local engine
// (internal/executor: window, MaxItems, item batching, first failure,
// CancelTimeout, fold credits, progress counters); this engine is its Ray
// backend (maps.go), which learns about completions from batched
// ray.wait(..., fetch_local=False) calls in the bridge and, after the first
// failure, lets the in-flight items end on their own for a short grace (a
// quarter of CancelTimeout, at most 200 ms, taken from it: see cancel.go
// for the Ray defect it avoids), cancels the rest, waits up to
// CancelTimeout and releases them. A map's results are joined a
// chunk of 1,024 items at a time, so the coordinator's memory does not grow
// with the number of items; leaf submissions are batched into frames. New
// warms one worker and its leaf process (Options.WarmTimeout), so that a
// run's first leaf does not wait for them.
//
// Item batching (sdk's WithItemBatching(k)): one Ray task runs up to k
// items of the map, one after another, in its leaf process; each item keeps
// its own result (its own object), its window slot (the window counts
// items), its progress count and its error (the failing item's, naming its
// node; the items after it in its batch do not run). Ray's max_retries
// reruns a whole batch. With sdk's WithAutoBatching the executor sizes
// each batch itself (internal/executor's Sizer) from the batches it saw
// finish, taskOverhead (Ray's ~2 ms per task) and the cluster's CPUs, which
// the bridge reads from Ray when it connects (autobatch.go).
//
// Errors: a leaf error comes back as *sdk.StepError wrapping its whole
// chain: every link keeps its Error() text, a link whose type is
// registered with sdk.RegisterErrorType is decoded as that type at its
// position, a registered sentinel (sdk.RegisterSentinel) as the very value,
// and any other link is a *LeafError with its message, Go type name and
// the links it wrapped; so Error(), errors.Is and errors.As answer as they
// do locally. A leaf panic is an *sdk.PanicError. Setup problems are
// *SetupError (naming the fix) and come before any submission; the bridge
// dying fails the run with a *BridgeError; a lost cluster is a
// *BridgeError too (Lost, ErrClusterLost). A node's Ray-level failure is a
// *TaskError whose Kind says which: a leaf process of another build is
// refused ("leaf_start", ErrBuildMismatch, naming both digests); a task or
// actor whose options Ray itself refuses (the SDK checks what it can at
// definition time) fails the run at once ("submit", carrying Ray's
// reason); a crashed worker, a cancelled task or a lost object is Ray's
// own kind ("worker_crashed", "cancelled", "object_lost", ...); a task
// whose node died (its raylet gone) with no retry left is "node_died",
// naming the lost Ray node (LostNode, ErrNodeLost).
//
// Results: Engine.Run returns the final value still encoded (the codec's
// bytes, fetched once); sdk.Run decodes it into the flow's output type.
//
// Code identity: each leaf process starts with a versioned handshake
// (PROTOCOL.md) carrying the plan's executable digest when the plan's
// code identity is one (no build revision: see sdk's code identity rules);
// a leaf binary whose own digest differs refuses to run, which also
// catches a stale binary on a remote cluster.
//
// Cluster loss and Close: the coordinator checks the cluster's GCS and
// the bridge's raylet every second; when they stop answering (about 3 s,
// or at once when a run fails meanwhile) every run in flight and every
// later Run fails with a *BridgeError (Lost) and the bridge is ended. Close
// cancels the runs in flight (they fail with ErrClosed), starts nothing
// (the bridge runs with RAY_ENABLE_AUTO_CONNECT=0), ends a private
// cluster with the bridge's process group, so that none of its processes
// (agents included) outlives it, and returns within Options.CloseTimeout.
// A private cluster listens on the loopback only (its node address is
// 127.0.0.1), and it ends with its owner: when the process that started
// it dies without Close (SIGKILL), the bridge sees it within a fraction of
// a second and ends the cluster's processes as Close does.
//
// Binary shipping: on a local cluster every worker starts the binary at
// its own path (Options.Executable, default os.Executable). On a remote
// cluster the binary must exist on every node: bake it into the worker
// image at the same path (the simplest and most reproducible option), or
// ship it with Options.RuntimeEnv {"working_dir": dir} and set
// Options.Executable to its path relative to that directory ("./app");
// Ray's package upload does not keep file modes, so the leaf starter
// restores the executable bit before it starts the binary.
//
// Cancellation: a running leaf blocks in its Go process, where Ray's
// cooperative cancellation does not reach it, so cancelled tasks are
// force-cancelled: Ray kills the worker and the leaf process dies with it
// (the leaf process sets PR_SET_PDEATHSIG itself, and it exits when its
// input closes; Ray may also end it first, which its worker does not take
// for a death). A map that fails logs its failure (slog, Warn) as it
// cancels its items in flight. A leaf process that dies mid-leaf makes
// its Ray worker exit, so Ray retries the leaf per its max_retries;
// without retries the run fails with a *TaskError of kind
// "worker_crashed".
//
// Result buffers and folds: a map with WithResultBuffer or sdk.Reduce gets
// one non-detached synchronous actor (max_restarts=0, max_task_retries=0,
// max_concurrency=1, max_pending_calls=2; resources and scheduling from its
// validated ActorOptions), created and awaited (its readiness handshake)
// before any leaf effect. The coordinator waits for a finished item
// without fetching it, hands its reference to the actor and completely
// resolves the small acknowledgement before the next call. A buffer
// appends transactionally against the item cap and MaxSerializedBytes; a
// fold keeps its accumulator encoded in the actor and runs the reducer in
// the actor's own persistent Go leaf process (the reducer must be
// registered with sdk.RegisterReducer), folding strictly in input order;
// out-of-order results are retained up to min(MaxItems-1,
// MaxConcurrency-1) and a window slot returns only when its item is
// incorporated. Its byte checks (initial, item, resulting accumulator,
// accumulator plus retained items) are transactional. Byte limits count
// the codec's encoded bytes (not cloudpickle); an overflow fails the run
// with a *TaskError of kind "actor_limit". Finalize returns the payload and a small
// acknowledgement as two refs; the coordinator resolves only the
// acknowledgement, kills the actor and passes the payload reference on.
// Any failure or cancellation kills the actor (discarding its state).
//
// Progress is per run: sdk.Run hands Engine.Run a sdkrt.RunSpec whose
// Progress (a progress.Run) owns the run's identity, the plan's reporting
// policy, the limits profile, the Collector and the publications to the
// run's sink (sdk.WithProgress); the graph (steps, and each bounded map as
// one aggregate node with its counters) is already registered in it, by the
// same code as for a local run. Two concurrent runs on one engine share
// nothing. Under full each run whose plan has a step outside every map
// has one collector actor on Ray (map items never report, so a plan of
// maps only gets none and starts no extra worker; its is awaited beside the run, so its start overlaps the first
// leaves; if it fails, the run goes on without live progress) that only
// buffers bounded encoded events (over 32 KiB or over its buffer: refused,
// with counters); every graph semantic is Go. The coordinator drains the
// actor about every 200 ms into the run's progress.Run and kills the actor
// when the run ends. Every event carries the run's identity
// (sdk.RunIdentity). A leaf
// outside a map gets a progress.Producer whose Sender is the actor: the
// leaf process writes events to its Ray worker, which pushes them to the
// actor and writes the acknowledgements back; STARTED, COMPLETED and
// FAILED are sent for every such leaf and sdk.ReportProgress returns true.
// Map items, terminal_only and disabled get no producer (ReportProgress is
// false); terminal_only and disabled create no actor and send no progress
// RPCs; the run's sink gets one terminal summary.
//
// The coordinator registers the plan's edges with its nodes (a chain links
// every exit of one part to every entry of the next; edges_registered
// batches of at most 32) and bounds its state with sdk.WithProgressLimits
// (v1 by default, limits.ProfileTerminalV1 for terminal-v1, or any profile
// narrowing v1; over a cap the Collector refuses and counts per its
// rules). A leaf's STARTED event carries its Ray execution identity (task,
// job, node and worker ids and assigned resources) from the worker's
// runtime context; there is no separate submitted event, because
// submissions are pipelined and the coordinator never learns a task id.
//
// Output previews (sdk.Flow.WithOutputPreview): WithOutputPreview registers
// the projector by name in every process of the binary (the leaf process looks it up by that name).
// Under full reporting a step with a projector that is not a map item
// reports a PENDING preview after STARTED; after the leaf succeeds its
// process decodes the encoded result with the codec, runs the projector
// (validated against preview profile v1 and redacted) and
// sends the envelope as an output_preview event before COMPLETED. A
// projector error or panic, or a result that does not decode, is a FAILED
// envelope; the leaf's result is never changed. A failed leaf reports
// UNAVAILABLE. terminal_only and disabled never run projectors.
//
// Plan fidelity: every Ray option a plan carries is applied (including
// label_selector and fallback_strategy) or was refused at definition time
// (placement groups, generator options, retry_exceptions lists, strategy
// objects: sdk cannot express them from Go); a step's runtime environment
// profile (and the fold reducer's), as materialized, is the task's (or
// the fold actor's) runtime_env, so its env_vars reach the leaf process.
//
// Not supported yet: previews of map items (they are not graph nodes).
package ray
