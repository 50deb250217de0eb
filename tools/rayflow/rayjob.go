package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/rayjob"
)

// errUnknownFlow is a flow name this binary has not registered.
var errUnknownFlow = errors.New("no flow named")

func init() {
	register("rayjob", "run a flow as a Ray Job (submit, status, logs, result, stop) or render a KubeRay RayJob", cmdRayJob)
}

const rayjobSynopsis = `rayjob manifest|submit|status|wait|logs|result|stop [flags] FLOW|ID

Ray Job mode runs a whole flow inside a Ray cluster: the job's entrypoint
is the application's own binary (it calls coordinator.ServeIfRequested
first in main) in coordinator mode, which runs the registered flow on the
job's cluster and prints its result record as the last line of the job's
logs:

  RAYFLOW_RESULT {"version":1,"flow":…,"fingerprint":…,"ok":true,"output":…}

  manifest FLOW   print a KubeRay RayJob custom resource (YAML; --json) that runs FLOW
                  (a flow this binary knows: rayflow plan list)
  submit FLOW     submit FLOW as a Ray Job; prints the submission id (with --wait: the result)
  status ID       the job's status (JSON)
  wait ID         poll until the job ends; prints its status (JSON)
  logs ID         the job's logs
  result ID       the job's result: the flow's output JSON (exit 0) or its error (exit 1)
  stop ID         stop the job

A submission id is idempotent: submitting an id the cluster knows prints
"already submitted" and exits 0 without starting another run.
The dashboard is --dashboard, else $RAY_DASHBOARD, else http://127.0.0.1:8265;
the Ray token comes from $RAY_AUTH_TOKEN or ~/.ray/auth_token.`

const rayjobExamples = `go build -o "$PWD/bin/fanout" ./examples/fanout
rayflow rayjob submit --exe "$PWD/bin/fanout" --python "$PWD/.venv-ray/bin/python" --input 200 --id fanout-1 --wait fanout
rayflow rayjob submit --exe /opt/app/fanout --input 200 --id fanout-2 fanout   # prints fanout-2
rayflow rayjob wait fanout-2 && rayflow rayjob result fanout-2
rayflow rayjob logs fanout-2
rayflow rayjob stop fanout-2
rayflow rayjob manifest --name fanout --image ghcr.io/me/fanout:1 --exe /opt/app/fanout --input 200 fanout | kubectl apply -f -
`

func cmdRayJob(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "rayjob", rayjobSynopsis, rayjobExamples)
	dashboard := fs.String("dashboard", "", "the head's dashboard URL (default $RAY_DASHBOARD, else http://127.0.0.1:8265)")
	input := fs.String("input", "", "manifest, submit: the flow's input as JSON (required)")
	exe := fs.String("exe", "", "manifest, submit: the application binary's path on the cluster's nodes (required)")
	python := fs.String("python", "", "manifest, submit: the Python with ray[default] on the cluster's nodes (default: the coordinator's)")
	id := fs.String("id", "", "manifest, submit: the submission id (idempotent; default: chosen by Ray or KubeRay); manifest: a DNS-1123 subdomain")
	wait := fs.Bool("wait", false, "submit: wait for the job to end and print its result as the result verb does")
	poll := fs.Duration("poll", time.Second, "submit --wait, wait: the status polling interval")
	name := fs.String("name", "", "manifest: the RayJob's name (required)")
	namespace := fs.String("namespace", "", "manifest: the RayJob's namespace")
	image := fs.String("image", "", "manifest: the image with the binary and ray[default]=="+rayjob.RayVersion+" (required)")
	workers := fs.Int64("workers", 1, "manifest: worker replicas (1 to 2147483647)")
	cpu := fs.String("cpu", "1", "manifest: CPU of each head and worker container")
	memory := fs.String("memory", "2Gi", "manifest: memory of each head and worker container")
	ttl := fs.Int64("ttl", rayjob.DefaultTTLSeconds, "manifest: seconds to keep the cluster after the job (0 to 2147483647)")
	asJSON := fs.Bool("json", false, "manifest: JSON instead of YAML")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(words) != 2 {
		fs.Usage()
		return exitUsage
	}
	verb, arg := words[0], words[1]
	fail := func(err error) int {
		errorLine(e, "%v", err)
		return exitError
	}
	if *poll <= 0 {
		errorLine(e, "--poll %v: must be positive", *poll)
		return exitUsage
	}
	if verb == "manifest" {
		if *workers < 1 || *workers > math.MaxInt32 {
			errorLine(e, "--workers %d: must be between 1 and %d", *workers, math.MaxInt32)
			return exitUsage
		}
		if *ttl < 0 || *ttl > math.MaxInt32 {
			errorLine(e, "--ttl %d: must be between 0 and %d", *ttl, math.MaxInt32)
			return exitUsage
		}
		w, t := int32(*workers), int32(*ttl)
		o := rayjob.ManifestOptions{Name: *name, Namespace: *namespace, Image: *image,
			Executable: *exe, Flow: arg, Input: json.RawMessage(*input), Python: *python, SubmissionID: *id,
			Workers: w, CPU: *cpu, Memory: *memory, TTLSecondsAfterFinished: &t}
		if err := o.Validate(); err != nil {
			errorLine(e, "%v", err)
			return exitUsage
		}
		// The job runs the flow by name; a name this binary does not know
		// would only fail on the cluster, after it started.
		if !slices.Contains(sdkhost.RegisteredFlows(), arg) {
			errorLine(e, "%v", fmt.Errorf("%w %q (known: %s)", errUnknownFlow, arg, strings.Join(sdkhost.RegisteredFlows(), ", ")))
			return exitUsage
		}
		job, err := rayjob.Manifest(o)
		if errors.Is(err, rayjob.ErrInvalidManifest) {
			errorLine(e, "%v", err)
			return exitUsage
		}
		if err != nil {
			return fail(err)
		}
		out, err := rayjob.RenderManifest(job, *asJSON)
		if err != nil {
			return fail(err)
		}
		_, _ = e.stdout.Write(out)
		return exitOK
	}
	url := *dashboard
	if url == "" {
		url = os.Getenv("RAY_DASHBOARD")
	}
	if url == "" {
		url = "http://127.0.0.1:8265"
	}
	c, err := rayjob.NewClient(rayjob.ClientOptions{Dashboard: url})
	if err != nil {
		return fail(err)
	}
	printJSON := func(v any) int {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	result := func(id string) int {
		res, err := c.Result(ctx, id)
		if err != nil {
			return fail(err)
		}
		if !res.OK {
			errorLine(e, "%v", res.Error)
			return exitError
		}
		fmt.Fprintln(e.stdout, string(res.Output))
		return exitOK
	}
	switch verb {
	case "submit":
		if *input == "" || *exe == "" {
			errorLine(e, "rayjob submit needs --exe and --input")
			return exitUsage
		}
		got, err := c.Submit(ctx, rayjob.Job{SubmissionID: *id, Executable: *exe, Flow: arg,
			Input: json.RawMessage(*input), Python: *python})
		switch {
		case errors.Is(err, rayjob.ErrAlreadySubmitted):
			errorLine(e, "%s: already submitted", got)
		case err != nil:
			return fail(err)
		}
		if !*wait {
			fmt.Fprintln(e.stdout, got)
			return exitOK
		}
		if _, err := c.Wait(ctx, got, *poll); err != nil {
			return fail(err)
		}
		return result(got)
	case "status", "wait":
		var info *rayjob.Info
		if verb == "status" {
			info, err = c.Status(ctx, arg)
		} else {
			info, err = c.Wait(ctx, arg, *poll)
		}
		if err != nil {
			return fail(err)
		}
		return printJSON(info)
	case "logs":
		logs, err := c.Logs(ctx, arg)
		if err != nil {
			return fail(err)
		}
		fmt.Fprint(e.stdout, logs)
		if !strings.HasSuffix(logs, "\n") && logs != "" {
			fmt.Fprintln(e.stdout)
		}
		return exitOK
	case "result":
		return result(arg)
	case "stop":
		if err := c.Stop(ctx, arg); err != nil {
			return fail(err)
		}
		return exitOK
	}
	fs.Usage()
	return exitUsage
}
