// Package rayjobrunner runs durable task attempts as Ray Jobs (the
// "ray_job" runner of durable): each attempt is one job, named by
// the attempt (so a resubmission is idempotent), whose entrypoint is the
// application binary in coordinator mode (rayjob/coordinator). It
// is a package of its own so that durable does not link KubeRay.
//
// The runner is a durable.AttemptSubmitter: each job gets its attempt's
// run identity and the pinned plan's reporting policy in its entrypoint,
// its input with the attempt number set when the flow's input implements
// durable.AttemptInput (examples/recovery),
// and Options.DatabaseURL in its runtime_env (never in the entrypoint or
// the metadata), so that its coordinator publishes the run's progress to
// the worker's database fenced by the attempt, like in-process attempts.
//
// Traces: each job's entrypoint carries the W3C traceparent of the
// attempt's span (TRACEPARENT), and its runtime_env env_vars carry the
// worker's tracing configuration (its OTEL_* variables, except the
// OTEL_EXPORTER_OTLP_*HEADERS ones, which usually hold credentials, and
// RAYFLOW_TRACES_FILE), so the job's coordinator exports where the
// worker does and its run span is a child of the attempt span: one trace
// from the attempt down to the leaves on the Ray workers. On a cluster
// whose nodes reach the worker's OTLP endpoint (a collector's address
// valid from everywhere, not 127.0.0.1), that is all there is to set up;
// otherwise set Options.NoTelemetryEnv and give the cluster's nodes their
// own OTEL_* variables (headers included), which the jobs then use.
package rayjobrunner
