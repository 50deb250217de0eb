// Package coordinator is the in-cluster side of Ray Job mode: the
// application binary, started as a Ray Job's entrypoint, runs one
// registered flow with the Ray engine against the job's cluster and
// prints the run's result record as the last line of its output.
//
// It is separate from package rayjob (the submitting side, which links
// kuberay and Kubernetes types) so that an application binary links only
// sdk and engine/ray. An application opts in by calling ServeIfRequested
// first thing in main, next to ray.ServeLeafIfRequested:
//
//	func main() {
//		ray.ServeLeafIfRequested()
//		coordinator.ServeIfRequested()
//		...
//	}
//
// # The entrypoint
//
// Coordinator mode is selected by environment variables that the
// entrypoint sets for this one process (rayjob.Entrypoint renders it):
//
//	RAYFLOW_RAYJOB=1 RAYFLOW_RAYJOB_FLOW=fanout RAYFLOW_RAYJOB_INPUT=MjA /abs/path/app
//
// RAYFLOW_RAYJOB_FLOW names a flow registered with sdk.RegisterFlow;
// RAYFLOW_RAYJOB_INPUT is the flow's input as JSON, base64url-encoded
// without padding (so the entrypoint needs no shell quoting). The flow's
// first node must be a step (the input reaches it as raw JSON). An
// optional RAYFLOW_PYTHON names the interpreter with ray[default] for the
// engine's bridge; RAY_ADDRESS, which Ray sets for every job entrypoint,
// is the cluster (default "auto"). The mode variables are removed from
// the process environment before the engine starts.
//
// # Progress
//
// A durable attempt's job (durable/rayjobrunner) publishes its
// run's progress exactly like an in-process attempt: the entrypoint
// carries the attempt's run identity in RAYFLOW_RAYJOB_RUN
// ("<task pk>:<attempt>:<generation>:<run id>", not secret) and the pinned
// plan's reporting policy in RAYFLOW_RAYJOB_REPORTING; the database URL
// is read from RAYFLOW_DATABASE_URL, which the submitter puts in the
// job's runtime_env env_vars (never in the entrypoint or the metadata) or
// the cluster's own environment provides. With both, the run publishes
// through an progress/pgstore sink under the plan's policy (full:
// summary, topology and node detail; terminal_only and disabled: the
// summary only), fenced by the identity: a stale fence cancels the run.
// The coordinator publishes the final summary itself; the worker's
// terminal transition archives it. The URL is removed from the process
// environment (and from the job config Ray hands the run's workers)
// before the engine starts, and never printed.
//
// # Traces
//
// The coordinator process sets tracing up from its environment
// (tracing.Setup: the OTEL_* variables and RAYFLOW_TRACES_FILE, which
// durable/rayjobrunner forwards from the worker in the job's
// runtime_env env_vars, or the cluster's own) and flushes it before it
// exits. When the entrypoint carries TRACEPARENT (a W3C traceparent: the
// durable attempt's span, rayjob.Job.TraceParent) the run's span is its
// child, so a ray_job attempt is one trace: the worker's attempt span →
// the coordinator's run, node and item spans → the leaves' spans on the
// Ray workers (the engine forwards the variables to the leaf processes).
//
// # The result channel
//
// The coordinator prints exactly one result record, as the last line of
// its standard output, after the engine has shut down:
//
//	RAYFLOW_RESULT {"version":1,"flow":"fanout","fingerprint":"…","ok":true,"output":{…}}
//	RAYFLOW_RESULT {"version":1,"flow":"fanout","ok":false,"error":{"kind":"run","type":"*sdk.StepError","message":"…"}}
//
// The prefix is followed by one line of JSON (the Result type): output is
// the flow's result in the JSON codec, error says why the run failed
// (kind "setup" for an unknown flow, bad input or an unreachable cluster;
// "run" for a failed run; "stopped" when the job was stopped). The exit
// status agrees: 0 with ok, 1 for a run failure, 2 for a setup failure,
// so Ray marks the job SUCCEEDED or FAILED. Ray keeps the entrypoint's
// output as the job's logs (GET /api/jobs/{id}/logs); rayjob.ParseResult
// returns the last record in them.
package coordinator
