// Package rayjob submits whole rayflow runs as Ray Jobs and renders
// RayJob custom resources for KubeRay.
//
// A Ray Job's entrypoint runs the application's own binary in coordinator
// mode inside the cluster (package coordinator: the application calls
// coordinator.ServeIfRequested first in main). The binary looks the flow
// up by its registered name, runs it with the Ray engine against the
// job's cluster and prints one machine-readable result record as the last
// line of the job's logs (see package coordinator for the format);
// Client.Result and ParseResult read it back.
//
// The Jobs API calls go through KubeRay's dashboard client
// (github.com/ray-project/kuberay/ray-operator, v1.5.0); this package
// links KubeRay's and Kubernetes' types, which is why it is separate from
// sdk, engine/ray and the in-cluster coordinator.
//
//	c, _ := rayjob.NewClient(rayjob.ClientOptions{Dashboard: "http://127.0.0.1:8265"})
//	id, err := c.Submit(ctx, rayjob.Job{SubmissionID: "fanout-42", Executable: "/opt/app/fanout",
//		Flow: "fanout", Input: json.RawMessage(`200`)})
//	if errors.Is(err, rayjob.ErrAlreadySubmitted) { /* the same id was submitted before: id is valid */ }
//	info, err := c.Wait(ctx, id, time.Second)
//	res, err := c.Result(ctx, id) // res.OK, res.Output (the flow's JSON result), res.Error
//
// Idempotency: the submission id is the job's identity on the cluster. A
// second Submit with an id the cluster already knows does not start
// another run: it returns the id and an error matching
// ErrAlreadySubmitted, so a retried submission is safe.
//
// Durable attempts and progress: Job.Identity and Job.Reporting put the
// attempt's run identity and the plan's reporting policy in the
// entrypoint (not secret); Job.DatabaseURL lets the coordinator publish
// the run's progress to PostgreSQL (progress/pgstore), fenced by the
// identity (see package coordinator). The URL is a secret and the Jobs
// API offers no secret channel, so it takes the least exposed one:
//
//   - never the entrypoint (Ray prints it in the job's logs and returns it
//     in every job listing) nor the metadata; an Env entry
//     RAYFLOW_DATABASE_URL is refused;
//   - the runtime_env's env_vars: Ray stores the runtime_env with the job
//     and returns it from GET /api/jobs/{id}, so whoever can read the
//     cluster's jobs can read it (whoever can submit jobs there can run
//     code that reads any worker's environment anyway);
//   - the coordinator removes it from its environment and from the job
//     config the run's workers inherit, so leaves never see it; Submit's
//     errors are redacted (Redacted), and nothing rayflow logs holds it.
//
// Where even the job record must not hold it, leave DatabaseURL empty and
// give the cluster's nodes RAYFLOW_DATABASE_URL in their own environment
// (a Kubernetes Secret in the head pod, for example): the coordinator
// uses that one and nothing secret travels with the job.
//
// Authentication: Ray 2.60 heads started with token authentication need
// the token on every dashboard request; the client sends
// ClientOptions.Token, else $RAY_AUTH_TOKEN, else the file named by
// $RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token, when there is one.
//
// The binary must exist at Job.Executable on the node that runs the
// entrypoint (the head, unless entrypoint resources place it elsewhere)
// and on every worker: bake it into the image, or ship it with
// Job.RuntimeEnv {"working_dir": dir} and a relative Executable
// ("./app"). Manifest renders the same entrypoint into a RayJob custom
// resource (`rayflow rayjob manifest`).
package rayjob
