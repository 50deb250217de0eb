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
