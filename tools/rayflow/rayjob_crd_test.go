package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// kuberayModule is the module whose RayJob types rayjob.Manifest builds;
// its source ships the RayJob CustomResourceDefinition KubeRay installs.
const (
	kuberayModule = "github.com/ray-project/kuberay/ray-operator"
	rayjobCRDPath = "config/crd/bases/ray.io_rayjobs.yaml"
)

// rayjobCRD is the API server's create path for one custom resource
// definition: decoding with pruning (the unknown fields it reports),
// defaulting, then the strategy's validation (object metadata, the
// OpenAPI schema, embedded metadata, list types and the CEL rules).
type rayjobCRD struct {
	version    string // the pinned KubeRay version
	gvk        schema.GroupVersionKind
	structural *structuralschema.Structural
	strategy   interface {
		PrepareForCreate(context.Context, runtime.Object)
		Validate(context.Context, runtime.Object) field.ErrorList
	}
}

// loadRayJobCRD reads the RayJob CRD from the pinned KubeRay module (the
// version go.mod requires, found by `go list -m`) and builds the API
// server's validation for its served v1 version the way the API server
// does when it starts serving a CRD.
var loadRayJobCRD = sync.OnceValues(func() (*rayjobCRD, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", kuberayModule).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %s: %w", kuberayModule, err)
	}
	version, dir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		return nil, fmt.Errorf("go list -m %s: %q (is the module downloaded? go mod download %s)", kuberayModule, out, kuberayModule)
	}
	raw, err := os.ReadFile(filepath.Join(dir, rayjobCRDPath))
	if err != nil {
		return nil, fmt.Errorf("the RayJob CRD of %s %s: %w", kuberayModule, version, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", rayjobCRDPath, err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1" })
	if crd.Spec.Names.Kind != "RayJob" || i < 0 || !crd.Spec.Versions[i].Served || crd.Spec.Versions[i].Schema == nil {
		return nil, fmt.Errorf("%s: no served v1 RayJob schema", rayjobCRDPath)
	}
	v := crd.Spec.Versions[i]
	var internal apiextensionsinternal.CustomResourceValidation
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("%s: converting the schema: %w", rayjobCRDPath, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rayjobCRDPath, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: not a structural schema: %w", rayjobCRDPath, err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("%s: %w", rayjobCRDPath, err)
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if v.Subresources != nil && v.Subresources.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if st, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
				return nil, fmt.Errorf("%s: %w", rayjobCRDPath, err)
			}
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
	st := customresource.NewStrategy(nil, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk,
		validator, statusValidator, s, status, nil, v.SelectableFields)
	return &rayjobCRD{version: version, gvk: gvk, structural: s, strategy: st}, nil
})

// check returns every reason the API server would refuse to create the
// manifest (YAML or JSON) with kubectl's strict field validation: its
// unknown fields and its validation errors. A manifest without a
// namespace is created in the request's, "default" here, as kubectl does.
func (c *rayjobCRD) check(manifest []byte) []string {
	js, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return []string{"not YAML: " + err.Error()}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return []string{"not a Kubernetes object: " + err.Error()}
	}
	if u.GroupVersionKind() != c.gvk {
		return []string{fmt.Sprintf("apiVersion/kind %v, want %v", u.GroupVersionKind(), c.gvk)}
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	var problems []string
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		problems = append(problems, "metadata: "+err.Error())
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, c.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, c.structural)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, c.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		problems = append(problems, ferr.Error())
	}
	for _, p := range append(unknown, paths...) {
		problems = append(problems, "unknown field "+strconv.Quote(p))
	}
	structuraldefaulting.Default(u.Object, c.structural)
	ctx := context.Background()
	c.strategy.PrepareForCreate(ctx, u)
	for _, e := range c.strategy.Validate(ctx, u) {
		problems = append(problems, e.Error())
	}
	return problems
}

// manifestFlag is one optional flag of `rayflow rayjob manifest` and the
// values the test gives it; the required flags are in manifestRequired.
type manifestFlag struct {
	name   string
	values []string // "" for a boolean flag given without a value
}

var (
	longNamespace = strings.Repeat("n", 63)                                                     // a DNS-1123 label's longest
	longID        = strings.Repeat(strings.Repeat("i", 62)+".", 4)[:252] + "i"                  // a DNS-1123 subdomain's longest (253)
	maxMilliCPU   = strconv.FormatInt(math.MaxInt64, 10) + "m"                                  // the most millicores Validate accepts
	maxMemory     = strconv.FormatInt(math.MaxInt64-1, 10)                                      // the most bytes Validate accepts
	maxInt32      = strconv.Itoa(math.MaxInt32)                                                 // --workers and --ttl's upper bound
	jsonInput     = `{"items":[1,2.5,-3],"note":"it's \"quoted\", $HOME; rm -rf / ✓","n":null}` // quotes, shell words, non-ASCII
)

// manifestFlags are every optional flag the manifest verb reads, each with
// its edge values (the other verbs' flags do not change the manifest).
var manifestFlags = []manifestFlag{
	{"namespace", []string{"flows", longNamespace}},
	{"python", []string{"/opt/venv/bin/python"}},
	{"id", []string{"fanout-200-1", longID}},
	{"workers", []string{"1", "3", maxInt32}},
	{"cpu", []string{"500m", "2", maxMilliCPU}},
	{"memory", []string{"4Gi", "1", maxMemory}},
	{"ttl", []string{"0", "60", maxInt32}},
	{"json", []string{""}},
}

// manifestRequired are the required flags' values, each case taking the
// next one in turn: names at their longest and shortest, inputs a number,
// an object and a string.
var manifestRequired = []struct{ name, image, exe, input string }{
	{"fanout", "ghcr.io/example/fanout:1.0", "/opt/app/fanout", "200"},
	{"a" + strings.Repeat("b", 46), "registry.example.com:5000/team/fanout@sha256:" + strings.Repeat("a", 64), "/usr/local/bin/fan out", jsonInput},
	{"f", "fanout", "/f", `"text"`},
}

// TestRayJobManifestMatchesKubeRayCRD renders a manifest with every
// combination of the manifest verb's optional flags (present or not; a
// present flag takes each of its edge values in turn) and checks that the
// API server would create it under the RayJob CRD of the pinned KubeRay:
// no unknown field, and no schema, metadata or CEL rule error.
func TestRayJobManifestMatchesKubeRayCRD(t *testing.T) {
	t.Parallel()
	crd, err := loadRayJobCRD()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RayJob CRD of %s %s", kuberayModule, crd.version)
	uses := make([]int, len(manifestFlags)) // a present flag's values in turn
	for combo := range 1 << len(manifestFlags) {
		req := manifestRequired[combo%len(manifestRequired)]
		args := []string{"rayjob", "manifest", "--name", req.name, "--image", req.image, "--exe", req.exe, "--input", req.input}
		for i, f := range manifestFlags {
			if combo&(1<<i) == 0 {
				continue
			}
			v := f.values[uses[i]%len(f.values)]
			uses[i]++
			if v == "" {
				args = append(args, "--"+f.name)
			} else {
				args = append(args, "--"+f.name, v)
			}
		}
		args = append(args, "fanout")
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK {
			t.Errorf("%s: exit %d: %s", strings.Join(args[2:], " "), code, errOut)
			continue
		}
		if problems := crd.check([]byte(out)); len(problems) > 0 {
			t.Errorf("%s: the API server would refuse the RayJob:\n  %s\n%s", strings.Join(args[2:], " "), strings.Join(problems, "\n  "), out)
		}
	}
}

// TestRayJobCRDCheckRefuses shows that the check above is the API
// server's: each edit of a valid manifest is refused for its own reason,
// found by the part of the create path that finds it (pruning, the
// OpenAPI schema, object metadata, the CEL rules).
func TestRayJobCRDCheckRefuses(t *testing.T) {
	t.Parallel()
	crd, err := loadRayJobCRD()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", manifestArgs...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// After a schema error the API server skips the CEL rules, and says so.
	const celSkipped = "some validation rules were not checked because the object was invalid"
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	workers := func(m map[string]any) map[string]any {
		return spec(m)["rayClusterSpec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want []string // substrings of the problems, in order; none for a valid manifest
	}{
		{"as rendered", func(map[string]any) {}, nil},
		{"unknown field", func(m map[string]any) { spec(m)["entrypont"] = "x" }, []string{`unknown field "spec.entrypont"`}},
		{"unknown metadata field", func(m map[string]any) { m["metadata"].(map[string]any)["label"] = "x" }, []string{`unknown field "metadata.label"`}},
		{"replicas as a string", func(m map[string]any) { workers(m)["replicas"] = "2" },
			[]string{`spec.rayClusterSpec.workerGroupSpecs[0].replicas: Invalid value: "string"`, celSkipped}},
		{"negative TTL", func(m map[string]any) { spec(m)["ttlSecondsAfterFinished"] = -1 }, nil}, // the CRD sets no minimum: Validate refuses it
		{"deletion policy not in the enum", func(m map[string]any) {
			spec(m)["deletionStrategy"] = map[string]any{"onSuccess": map[string]any{"policy": "Keep"}, "onFailure": map[string]any{"policy": "DeleteNone"}}
		}, []string{`spec.deletionStrategy.onSuccess.policy: Unsupported value: "Keep"`, celSkipped}},
		{"CEL: deletion strategy without onFailure", func(m map[string]any) {
			spec(m)["deletionStrategy"] = map[string]any{"onSuccess": map[string]any{"policy": "DeleteCluster"}}
		}, []string{"deletionStrategy requires either BOTH onSuccess and onFailure"}},
		{"CEL: managedBy", func(m map[string]any) { spec(m)["managedBy"] = "rayflow" },
			[]string{"the managedBy field value must be either 'ray.io/kuberay-operator'"}},
		{"container without a name", func(m map[string]any) {
			delete(workers(m)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any), "name")
		}, []string{"spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].name: Required value", celSkipped}},
		{"name not a DNS subdomain", func(m map[string]any) { m["metadata"].(map[string]any)["name"] = "Fanout_1" },
			[]string{`metadata.name: Invalid value: "Fanout_1"`}},
		{"another kind", func(m map[string]any) { m["kind"] = "RayCluster" }, []string{"apiVersion/kind ray.io/v1, Kind=RayCluster"}},
	} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		tc.edit(m)
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		problems := crd.check(b)
		if len(problems) != len(tc.want) {
			t.Errorf("%s: problems %q, want %d matching %q", tc.name, problems, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(problems[i], w) {
				t.Errorf("%s: problem %q, want it to contain %q", tc.name, problems[i], w)
			}
		}
	}
}
