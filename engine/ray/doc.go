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
// Everything the engine needs from Ray is the Runtime interface, which a
// native Go runtime could implement instead.
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
// Values stay in Ray's object store: a leaf's result is passed to the
// next task as a top-level argument, group results and a map's ordered
// results are joined into a JSON array by a Ray task without decoding,
// and the coordinator fetches bytes only for the final result and for a
// map's input list, which it must split. Bounded maps keep their
// admission window in the coordinator and learn about completions from
// batched ray.wait(..., fetch_local=False) calls in the bridge; the first
// failure stops admission, cancels every retained reference of the
// in-flight items recursively, waits up to CancelTimeout and returns the
// original error, as the local engine does.
//
// Errors: a leaf error comes back as *sdk.StepError wrapping the original
// error type when that type is registered with sdk.RegisterErrorType,
// else a *LeafError with its message and Go type name; a leaf panic is an
// *sdk.PanicError. Setup problems are *SetupError (naming the fix) and
// come before any submission; the bridge dying fails the run with a
// *BridgeError.
//
// Binary shipping: on a local cluster every worker starts the binary at
// its own path (Options.Executable, default os.Executable). On a remote
// cluster the binary must exist at that path on every node: bake it into
// the worker image (the simplest and most reproducible option), or ship
// it with a runtime_env working_dir and set Options.Executable to its
// path relative to the working directory; Ray's package upload does not
// keep file modes, so the leaf starter restores the executable bit before
// it starts the binary.
//
// Not supported yet: ordered folds (sdk.Reduce) and the result-buffer
// actor (a buffered map runs as an ordinary bounded map), progress
// reporting and output previews.
package ray
