package rayjob_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rayflow/rayflow/rayjob"
)

// The RayJob resource that runs the registered flow "fanout" on 2,000
// items on a cluster KubeRay creates for it (kubectl apply -f the output).
// The image holds the application binary and a Python with Ray.
func ExampleManifest() {
	job, err := rayjob.Manifest(rayjob.ManifestOptions{
		Name:       "fanout-2000",
		Namespace:  "flows",
		Image:      "ghcr.io/example/fanout:1.4.0",
		Executable: "/opt/fanout/fanout",
		Flow:       "fanout",
		Input:      []byte("2000"),
		Python:     "/opt/venv/bin/python",
		Workers:    3,
	})
	if errors.Is(err, rayjob.ErrInvalidManifest) {
		log.Fatal(err) // names the option Kubernetes or KubeRay would refuse
	}
	out, err := rayjob.RenderManifest(job, false)
	if err != nil {
		log.Fatal(err)
	}
	os.Stdout.Write(out)
	// Output:
	// apiVersion: ray.io/v1
	// kind: RayJob
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: rayflow
	//     rayflow.dev/flow: fanout
	//   name: fanout-2000
	//   namespace: flows
	// spec:
	//   entrypoint: RAYFLOW_RAYJOB=1 RAYFLOW_RAYJOB_FLOW=fanout RAYFLOW_RAYJOB_INPUT=MjAwMA
	//     RAYFLOW_PYTHON=/opt/venv/bin/python /opt/fanout/fanout
	//   metadata:
	//     rayflow_flow: fanout
	//   rayClusterSpec:
	//     headGroupSpec:
	//       rayStartParams:
	//         dashboard-host: 0.0.0.0
	//       template:
	//         spec:
	//           containers:
	//           - image: ghcr.io/example/fanout:1.4.0
	//             name: ray-head
	//             resources:
	//               limits:
	//                 cpu: "1"
	//                 memory: 2Gi
	//               requests:
	//                 cpu: "1"
	//                 memory: 2Gi
	//     rayVersion: 2.60.0
	//     workerGroupSpecs:
	//     - groupName: workers
	//       maxReplicas: 3
	//       minReplicas: 3
	//       rayStartParams: {}
	//       replicas: 3
	//       scaleStrategy: {}
	//       template:
	//         spec:
	//           containers:
	//           - image: ghcr.io/example/fanout:1.4.0
	//             name: ray-worker
	//             resources:
	//               limits:
	//                 cpu: "1"
	//                 memory: 2Gi
	//               requests:
	//                 cpu: "1"
	//                 memory: 2Gi
	//   shutdownAfterJobFinishes: true
	//   submissionMode: HTTPMode
	//   ttlSecondsAfterFinished: 300
}

// The shell command a Ray Job runs: the application binary in coordinator
// mode, every value quoted.
func ExampleEntrypoint() {
	cmd, err := rayjob.Entrypoint("/opt/fanout/fanout", "fanout", []byte(`{"count": 20}`), "/opt/venv/bin/python", nil)
	if err != nil {
		log.Fatal(err)
	}
	// The input travels base64url-encoded, so no quoting can break it.
	fmt.Println(cmd)
	// Output:
	// RAYFLOW_RAYJOB=1 RAYFLOW_RAYJOB_FLOW=fanout RAYFLOW_RAYJOB_INPUT=eyJjb3VudCI6IDIwfQ RAYFLOW_PYTHON=/opt/venv/bin/python /opt/fanout/fanout
}

// Submitting a run to a running cluster's Jobs API and waiting for its
// result. A resubmission with the same SubmissionID starts nothing.
func ExampleClient() {
	ctx := context.Background()
	c, err := rayjob.NewClient(rayjob.ClientOptions{Dashboard: "http://127.0.0.1:8265"})
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.Submit(ctx, rayjob.Job{
		SubmissionID: "fanout-2026-12-02",
		Executable:   "/opt/fanout/fanout", // on every node of the cluster
		Flow:         "fanout",
		Input:        []byte("2000"),
	})
	if errors.Is(err, rayjob.ErrAlreadySubmitted) {
		log.Printf("%s was submitted before; waiting for it", id)
	} else if err != nil {
		log.Fatal(err)
	}
	info, err := c.Wait(ctx, id, time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if info.Status != rayjob.StatusSucceeded {
		logs, _ := c.Logs(ctx, id)
		log.Fatalf("job %s: %s\n%s", id, info.Status, logs)
	}
	res, err := c.Result(ctx, id) // the coordinator's RAYFLOW_RESULT line
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output))
}
