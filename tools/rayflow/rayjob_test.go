package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayflow/rayflow/rayjob"
)

var updateGolden = flag.Bool("update-rayjob", false, "rewrite testdata/rayjob_manifest.golden.*")

var manifestArgs = []string{"rayjob", "manifest", "--name", "fanout-200", "--namespace", "flows",
	"--image", "ghcr.io/example/fanout:1.0", "--exe", "/opt/app/fanout", "--input", `200`,
	"--python", "/opt/venv/bin/python", "--id", "fanout-200-1", "--workers", "2", "--cpu", "2", "--memory", "4Gi", "fanout"}

func TestRayJobManifestGolden(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"yaml", "json"} {
		args := manifestArgs
		if format == "json" {
			args = append([]string{args[0], args[1], "--json"}, args[2:]...)
		}
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		golden := filepath.Join("testdata", "rayjob_manifest.golden."+format)
		if *updateGolden {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s manifest differs from %s (go test ./tools/rayflow -run Golden -update-rayjob):\n%s", format, golden, out)
		}
		// It is a valid RayJob for KubeRay's v1 types, field for field.
		var job rayv1.RayJob
		if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
			t.Fatalf("%s: not a strict rayv1.RayJob: %v", format, err)
		}
		ep, err := rayjob.Entrypoint("/opt/app/fanout", "fanout", []byte(`200`), "/opt/venv/bin/python", nil)
		if err != nil {
			t.Fatal(err)
		}
		if job.Kind != "RayJob" || job.APIVersion != "ray.io/v1" || job.Spec.Entrypoint != ep || job.Spec.JobId != "fanout-200-1" ||
			job.Spec.SubmissionMode != rayv1.HTTPMode || *job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas != 2 {
			t.Errorf("%s: unexpected RayJob %+v", format, job)
		}
	}
}

func TestRayJobUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"rayjob"},
		{"rayjob", "manifest", "--image", "i", "--exe", "/x", "--input", "1", "fanout"}, // no name
		{"rayjob", "manifest", "--name", "n", "--exe", "/x", "--input", "1", "fanout"},  // no image
		{"rayjob", "manifest", "--name", "n", "--image", "i", "--exe", "x", "--input", "1", "fanout"},
		{"rayjob", "manifest", "--name", "n", "--image", "i", "--exe", "/x", "--input", "{", "fanout"},
		{"rayjob", "submit", "--input", "1", "fanout"},
		{"rayjob", "bogus", "x"},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%s: exit %d (%s), want %d", strings.Join(args, " "), code, errOut, exitUsage)
		}
	}
}
