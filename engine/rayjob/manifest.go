package rayjob

import (
	"encoding/json"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// RayVersion is the Ray version rayflow pins (make ray-venv).
const RayVersion = "2.60.0"

// ManifestOptions describe a RayJob custom resource that runs one flow
// on a cluster KubeRay creates for it.
type ManifestOptions struct {
	Name      string // the resource's name (required)
	Namespace string // optional
	// Image holds the application binary at Executable and a Python with
	// ray[default]==RayVersion (required); head and workers use it.
	Image      string
	Executable string // the binary's absolute path in the image (required)
	Flow       string // the registered flow (required)
	Input      json.RawMessage
	// Python is the interpreter with Ray in the image; default: the
	// coordinator's default (python3 in PATH).
	Python string
	// SubmissionID becomes spec.jobId, the idempotent submission id;
	// default: chosen by KubeRay.
	SubmissionID string
	// Workers is the worker group's replica count (default 1).
	Workers int32
	// CPU and Memory size every head and worker container (default "1"
	// and "2Gi").
	CPU, Memory string
	// TTLSecondsAfterFinished keeps the cluster after the job (default
	// 300); the cluster is shut down when the job finishes.
	TTLSecondsAfterFinished int32
}

// Manifest builds the RayJob: KubeRay creates a RayCluster from
// RayClusterSpec, submits the entrypoint (Entrypoint: the binary in
// coordinator mode) through the dashboard's Jobs API (HTTPMode, the same
// request Client.Submit sends) and shuts the cluster down after the job.
// The result record is in the job's logs (the head's
// /api/jobs/{jobId}/logs, or `kubectl logs` of the head pod's job log).
func Manifest(o ManifestOptions) (*rayv1.RayJob, error) {
	switch {
	case o.Name == "":
		return nil, errors.New("rayflow: ray job manifest: no name")
	case o.Image == "":
		return nil, errors.New("rayflow: ray job manifest: no image")
	case o.Executable == "" || o.Executable[0] != '/':
		return nil, errors.New("rayflow: ray job manifest: the executable must be an absolute path in the image")
	}
	ep, err := Entrypoint(o.Executable, o.Flow, o.Input, o.Python, nil)
	if err != nil {
		return nil, err
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.CPU == "" {
		o.CPU = "1"
	}
	if o.Memory == "" {
		o.Memory = "2Gi"
	}
	if o.TTLSecondsAfterFinished <= 0 {
		o.TTLSecondsAfterFinished = 300
	}
	cpu, err := resource.ParseQuantity(o.CPU)
	if err != nil {
		return nil, fmt.Errorf("rayflow: ray job manifest: cpu %q: %w", o.CPU, err)
	}
	mem, err := resource.ParseQuantity(o.Memory)
	if err != nil {
		return nil, fmt.Errorf("rayflow: ray job manifest: memory %q: %w", o.Memory, err)
	}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
	}
	pod := func(name string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: name, Image: o.Image, Resources: res,
		}}}}
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "rayflow", "rayflow.dev/flow": o.Flow}
	job := &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec: rayv1.RayJobSpec{
			Entrypoint:               ep,
			JobId:                    o.SubmissionID,
			Metadata:                 map[string]string{"rayflow_flow": o.Flow},
			SubmissionMode:           rayv1.HTTPMode,
			ShutdownAfterJobFinishes: true,
			TTLSecondsAfterFinished:  o.TTLSecondsAfterFinished,
			RayClusterSpec: &rayv1.RayClusterSpec{
				RayVersion: RayVersion,
				HeadGroupSpec: rayv1.HeadGroupSpec{
					RayStartParams: map[string]string{"dashboard-host": "0.0.0.0"},
					Template:       pod("ray-head"),
				},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
					GroupName:      "workers",
					Replicas:       &o.Workers,
					MinReplicas:    &o.Workers,
					MaxReplicas:    &o.Workers,
					RayStartParams: map[string]string{},
					Template:       pod("ray-worker"),
				}},
			},
		},
	}
	return job, nil
}

// RenderManifest renders a RayJob as YAML (or JSON with asJSON), keys
// sorted, without the empty status and creation timestamp.
func RenderManifest(job *rayv1.RayJob, asJSON bool) ([]byte, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	// Pod templates carry empty metadata and creation timestamps too.
	var clean func(v any)
	clean = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if md, ok := v["metadata"].(map[string]any); ok {
				delete(md, "creationTimestamp")
				if len(md) == 0 {
					delete(v, "metadata")
				}
			}
			for _, c := range v {
				clean(c)
			}
		case []any:
			for _, c := range v {
				clean(c)
			}
		}
	}
	clean(m["spec"])
	if asJSON {
		out, err := json.MarshalIndent(m, "", "  ")
		return append(out, '\n'), err
	}
	return yaml.Marshal(m)
}
