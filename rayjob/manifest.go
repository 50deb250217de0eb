package rayjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/rayflow/rayflow/internal/rayenv"
)

// RayVersion is the Ray version rayflow pins (make ray-venv).
const RayVersion = rayenv.RayVersion

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
	// Workers is the worker group's replica count: 0 means the default,
	// 1; a negative count is refused.
	Workers int32
	// CPU and Memory size every head and worker container (default "1"
	// and "2Gi"); they must be positive quantities.
	CPU, Memory string
	// TTLSecondsAfterFinished keeps the cluster that long after the job
	// (nil: 300; 0 deletes it at once; negative is refused); the cluster
	// is shut down when the job finishes.
	TTLSecondsAfterFinished *int32
}

// MaxNameLength is the longest RayJob name KubeRay accepts: its RayCluster
// is named after the job plus 6 characters, and every service name derived
// from that must stay a 63-character DNS label.
const MaxNameLength = 47

// DefaultTTLSeconds is the TTLSecondsAfterFinished of a nil option.
const DefaultTTLSeconds = 300

// ErrInvalidManifest matches every refused ManifestOptions:
// errors.Is(err, ErrInvalidManifest).
var ErrInvalidManifest = errors.New("invalid RayJob manifest")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidManifest, fmt.Sprintf(format, args...))
}

// Validate checks o as KubeRay and the Kubernetes API server would, so a
// manifest is refused here, with the field named, rather than by the
// cluster: the name is a DNS-1035 label of at most MaxNameLength
// characters (KubeRay's rule for RayJob names), the namespace a DNS-1123
// label, the flow a valid label value (it becomes the rayflow.dev/flow
// label), the submission id a DNS-1123 subdomain (a Kubernetes object
// name: KubeRay passes it to the submitter's environment and shell command),
// counts in range and quantities positive and within the int64 range
// Kubernetes counts them in (millicores, bytes). Nothing is rewritten.
func (o ManifestOptions) Validate() error {
	switch {
	case o.Name == "":
		return invalid("no name")
	case len(o.Name) > MaxNameLength:
		return invalid("name %q: longer than %d characters (KubeRay derives the cluster and service names from it)", o.Name, MaxNameLength)
	case o.Image == "":
		return invalid("no image")
	case strings.ContainsFunc(o.Image, unicode.IsSpace):
		return invalid("image %q: contains white space", o.Image)
	case o.Executable == "" || o.Executable[0] != '/':
		return invalid("the executable must be an absolute path in the image")
	case o.Workers < 0:
		return invalid("workers %d: must not be negative", o.Workers)
	case o.TTLSecondsAfterFinished != nil && *o.TTLSecondsAfterFinished < 0:
		return invalid("ttl %d: must not be negative", *o.TTLSecondsAfterFinished)
	}
	if errs := validation.IsDNS1035Label(o.Name); len(errs) > 0 {
		return invalid("name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return invalid("namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsValidLabelValue(o.Flow); len(errs) > 0 || o.Flow == "" {
		if o.Flow == "" {
			errs = []string{"no flow"}
		}
		return invalid("flow %q (the value of label %s): %s", o.Flow, flowLabel, strings.Join(errs, "; "))
	}
	if o.SubmissionID != "" {
		if errs := validation.IsDNS1123Subdomain(o.SubmissionID); len(errs) > 0 {
			return invalid("submission id %q: %s", o.SubmissionID, strings.Join(errs, "; "))
		}
	}
	for _, q := range []struct {
		what, v string
		max     resource.Quantity
		unit    string
	}{
		{"cpu", o.CPU, *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI), "cores"},
		// ParseQuantity turns a larger value with a binary suffix
		// ("99999999999999999999Ei") into exactly MaxInt64 bytes, so that
		// value itself is refused as well.
		{"memory", o.Memory, *resource.NewQuantity(math.MaxInt64-1, resource.BinarySI), "bytes"},
	} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return invalid("%s %q: %v", q.what, q.v, err)
		}
		if v.Sign() <= 0 {
			return invalid("%s %q: must be positive", q.what, q.v)
		}
		if v.Cmp(q.max) > 0 {
			return invalid("%s %q: must be at most %s %s", q.what, q.v, q.max.AsDec().String(), q.unit)
		}
	}
	return nil
}

// The labels every manifest carries.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	flowLabel      = "rayflow.dev/flow"
)

// Manifest builds the RayJob: KubeRay creates a RayCluster from
// RayClusterSpec, submits the entrypoint (Entrypoint: the binary in
// coordinator mode) through the dashboard's Jobs API (HTTPMode, the same
// request Client.Submit sends) and shuts the cluster down after the job.
// The result record is in the job's logs (the head's
// /api/jobs/{jobId}/logs, or `kubectl logs` of the head pod's job log).
//
// Options that Validate refuses are an error matching ErrInvalidManifest.
func Manifest(o ManifestOptions) (*rayv1.RayJob, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ep, err := Entrypoint(o.Executable, o.Flow, o.Input, o.Python, nil)
	if err != nil {
		return nil, invalid("%s", strings.TrimPrefix(err.Error(), "rayflow: "))
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.CPU == "" {
		o.CPU = "1"
	}
	if o.Memory == "" {
		o.Memory = "2Gi"
	}
	ttl := int32(DefaultTTLSeconds)
	if o.TTLSecondsAfterFinished != nil {
		ttl = *o.TTLSecondsAfterFinished
	}
	cpu, mem := resource.MustParse(o.CPU), resource.MustParse(o.Memory) // validated
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
	}
	pod := func(name string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: name, Image: o.Image, Resources: res,
		}}}}
	}
	labels := map[string]string{managedByLabel: "rayflow", flowLabel: o.Flow}
	job := &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec: rayv1.RayJobSpec{
			Entrypoint:               ep,
			JobId:                    o.SubmissionID,
			Metadata:                 map[string]string{"rayflow_flow": o.Flow},
			SubmissionMode:           rayv1.HTTPMode,
			ShutdownAfterJobFinishes: true,
			TTLSecondsAfterFinished:  ttl,
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
