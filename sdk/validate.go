package sdk

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rayflow/rayflow/internal/program"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// allowedRayOptions are the Ray task options a leaf may set (docs/contracts.md#the-effective-plan).
var allowedRayOptions = map[string]bool{
	"_generator_backpressure_num_objects": true, "_labels": true, "accelerator_type": true,
	"enable_task_events": true, "fallback_strategy": true, "label_selector": true, "max_retries": true,
	"memory": true, "name": true, "num_cpus": true, "num_gpus": true, "num_returns": true,
	"placement_group": true, "placement_group_bundle_index": true,
	"placement_group_capture_child_tasks": true, "resources": true, "retry_exceptions": true,
	"scheduling_strategy": true,
}

// RuntimeEnv is a named runtime environment profile (Ray runtime_env
// fields, e.g. "env_vars", "working_dir", "image_uri").
type RuntimeEnv map[string]any

var runtimeEnvs = struct {
	sync.RWMutex
	m map[string]RuntimeEnv
}{m: map[string]RuntimeEnv{}}

var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// RegisterRuntimeEnv registers a named runtime environment profile for
// WithRuntimeEnv. Profiles are resolved once, when a flow is materialized;
// changing a profile afterwards does not change that plan.
func RegisterRuntimeEnv(name string, env RuntimeEnv) error {
	if !profileName.MatchString(name) {
		return fmt.Errorf("rayflow: runtime environment profile name %q must match %s", name, profileName)
	}
	if v, ok := env["env_vars"]; ok {
		if _, ok := stringMap(v); !ok {
			return fmt.Errorf("rayflow: runtime environment profile %q: env_vars must map names to strings", name)
		}
	}
	runtimeEnvs.Lock()
	defer runtimeEnvs.Unlock()
	runtimeEnvs.m[name] = cloneMap(env)
	return nil
}

// stringMap converts a map of strings (map[string]string, or
// map[string]any holding only strings).
func stringMap(v any) (map[string]string, bool) {
	switch m := v.(type) {
	case map[string]string:
		return m, true
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, x := range m {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[k] = s
		}
		return out, true
	}
	return nil, false
}

// checkRayOptionValues refuses, at definition time, Ray options that the
// Ray engine could not apply as written: every option a plan carries is
// either applied on Ray or refused here, never dropped. It returns "" or
// why the options are refused.
// rayOwnResource reports whether Ray refuses name as a custom resource
// (its .options() wants num_cpus and num_gpus instead).
func rayOwnResource(name string) bool { return name == "CPU" || name == "GPU" }

func checkRayOptionValues(o map[string]any) string {
	for _, k := range sortedKeys(o) {
		v := o[k]
		switch k {
		case "placement_group":
			if v != nil && v != "default" {
				return "placement_group cannot be given from Go (it is a Ray PlacementGroup handle); reserve resources with custom resources or label_selector instead"
			}
		case "placement_group_bundle_index":
			if f, ok := normalizeNumber(v).(float64); v != nil && (!ok || f != -1) {
				return "placement_group_bundle_index needs a placement group, which cannot be given from Go"
			}
		case "placement_group_capture_child_tasks":
			if v != nil && v != false {
				return "placement_group_capture_child_tasks needs a placement group, which cannot be given from Go"
			}
		case "_generator_backpressure_num_objects":
			return "_generator_backpressure_num_objects applies to generator tasks; a rayflow leaf returns one value"
		case "resources":
			if m, ok := v.(map[string]any); ok {
				for _, name := range sortedKeys(m) {
					if rayOwnResource(name) {
						return fmt.Sprintf("resources: %q is Ray's own resource: use num_cpus or num_gpus", name)
					}
				}
			}
		case "retry_exceptions":
			if _, ok := v.(bool); !ok {
				return "retry_exceptions must be true or false (a list names Python exception classes, which a Go leaf does not raise)"
			}
		case "scheduling_strategy":
			if v != "DEFAULT" && v != "SPREAD" {
				return fmt.Sprintf("scheduling_strategy must be \"DEFAULT\" or \"SPREAD\" (a strategy object cannot be given from Go; use label_selector), got %v", v)
			}
		case "label_selector":
			if _, ok := stringMap(v); !ok {
				return "label_selector must map label names to strings"
			}
		case "fallback_strategy":
			list, ok := v.([]map[string]any)
			if !ok {
				if anys, isList := v.([]any); isList {
					ok = true
					for _, x := range anys {
						m, isMap := x.(map[string]any)
						ok = ok && isMap
						list = append(list, m)
					}
				}
			}
			if !ok {
				return "fallback_strategy must be a list of option objects (for example {\"label_selector\": {...}})"
			}
			for _, m := range list {
				for fk, fv := range m {
					if fk != "label_selector" {
						return fmt.Sprintf("fallback_strategy: only label_selector entries are supported, got %q", fk)
					}
					if _, ok := stringMap(fv); !ok {
						return "fallback_strategy: label_selector must map label names to strings"
					}
				}
			}
		}
	}
	return ""
}

// lookupRuntimeEnv returns a registered profile.
func lookupRuntimeEnv(name string) (RuntimeEnv, bool) {
	runtimeEnvs.RLock()
	defer runtimeEnvs.RUnlock()
	e, ok := runtimeEnvs.m[name]
	return e, ok
}

// validateGraph checks a workflow graph against every definition rule and
// returns the first violation as a *DefinitionError naming the node.
func validateGraph(root *flowgraph.Node) error {
	return validateProgram(program.Compile(root))
}

// validateProgram checks a compiled flow against every definition rule
// and returns the first violation as a *DefinitionError naming the node;
// it runs before any leaf (Materialize calls it).
func validateProgram(p *program.Program) error {
	return validate(p.Root)
}

// validate walks n.
func validate(n *program.Node) error {
	id := n.ID
	fail := func(code DefinitionCode, format string, args ...any) error {
		return &DefinitionError{Path: id, Code: code, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Missing {
		return fail(CodeEmpty, "nil node")
	}
	if n.Err != nil {
		var de *DefinitionError
		if errors.As(n.Err, &de) {
			c := *de
			c.Path = id
			return &c
		}
		return fail(CodeNotAStep, "%v", n.Err)
	}
	if len(n.Label) > MaxLabelBytes || !utf8.ValidString(n.Label) {
		return fail(CodeInvalidLabel, "the label must be valid UTF-8 of at most %d bytes (it has %d)", MaxLabelBytes, len(n.Label))
	}
	switch n.Kind {
	case flowgraph.KindStep:
		return validateStep(n.Step, fail)
	case flowgraph.KindChain, flowgraph.KindGroup:
		if len(n.Children) == 0 {
			return fail(CodeEmpty, "a %s needs at least one child", n.Kind)
		}
		for _, c := range n.Children {
			if err := validate(c); err != nil {
				return err
			}
		}
		return nil
	case flowgraph.KindMap:
		m := n.Map
		if n.InFold {
			return fail(CodeForbiddenNesting, "a fold's mapper cannot contain a dynamic map")
		}
		if err := validateMap(m, id, n.InMap, fail); err != nil {
			return err
		}
		body := n.Body()
		if m.AutoBatching && m.ItemsPerTask > 1 && (body == nil || body.Missing || body.Kind != flowgraph.KindStep) {
			return fail(CodeInvalidBatching, "WithAutoBatching needs a map whose body is a single step (a batch calls that step once per item in one task)")
		}
		if m.ItemsPerTask > 1 && (body == nil || body.Missing || body.Kind != flowgraph.KindStep) {
			return fail(CodeInvalidBatching, "WithItemBatching needs a map whose body is a single step (a batch calls that step once per item in one task)")
		}
		if body == nil {
			return fail(CodeEmpty, "a map needs a body")
		}
		return validate(body)
	}
	return fail(CodeEmpty, "unknown node kind %v", n.Kind)
}

type failFunc func(code DefinitionCode, format string, args ...any) error

func validateStep(s *flowgraph.Step, fail failFunc) error {
	if s == nil || s.Invoke == nil {
		return fail(CodeNotAStep, "the step has no function")
	}
	r := s.Resources
	if r.NumCPUs < 0 || r.NumGPUs < 0 || r.Memory < 0 || math.IsNaN(r.NumCPUs) || math.IsNaN(r.NumGPUs) {
		return fail(CodeInvalidRayOptions, "resources must not be negative")
	}
	for _, k := range sortedKeys(r.Custom) {
		if v := r.Custom[k]; k == "" || !(v > 0) || math.IsInf(v, 0) {
			return fail(CodeInvalidRayOptions, "custom resource %q must have a positive amount", k)
		}
		if rayOwnResource(k) {
			return fail(CodeInvalidRayOptions, "custom resource %q is Ray's own: use Resources.NumCPUs or NumGPUs", k)
		}
	}
	keys := make([]string, 0, len(s.RayOptions))
	for k := range s.RayOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowedRayOptions[k] {
			return fail(CodeInvalidRayOptions, "Ray option %q is not a task option rayflow accepts (allowed: %s)", k, strings.Join(sortedKeys(allowedRayOptions), ", "))
		}
	}
	if v, ok := s.RayOptions["num_returns"]; ok && !isOne(v) {
		return fail(CodeInvalidRayOptions, "num_returns must be 1")
	}
	if err := checkRayOptionValues(s.RayOptions); err != "" {
		return fail(CodeInvalidRayOptions, "%s", err)
	}
	if s.RuntimeEnv != "" {
		if _, ok := lookupRuntimeEnv(s.RuntimeEnv); !ok {
			return fail(CodeUnknownRuntimeEnv, "runtime environment profile %q is not registered (sdk.RegisterRuntimeEnv)", s.RuntimeEnv)
		}
	}
	if s.Version != "" {
		if err := checkVersion(s.Version); err != nil {
			return fail(CodeInvalidVersion, "%s", err.(*DefinitionError).Msg)
		}
	}
	if s.Preview != nil && !s.Preview.Callable.Resolvable {
		return fail(CodeInvalidIdentity, "the output preview projector %q must be a package-level function", s.Preview.Callable.Name)
	}
	return nil
}

func validateMap(m *flowgraph.Map, id string, inMap bool, fail failFunc) error {
	if l := m.Limits; l != nil {
		if l.MaxConcurrency < 1 {
			return fail(CodeInvalidLimits, "MaxConcurrency must be at least 1, got %d", l.MaxConcurrency)
		}
		if l.MaxItems < 0 {
			return fail(CodeInvalidLimits, "MaxItems must not be negative, got %d", l.MaxItems)
		}
		if l.CancelTimeout < 0 {
			return fail(CodeInvalidLimits, "CancelTimeout must not be negative, got %s", l.CancelTimeout)
		}
	}
	if m.ItemsPerTask < 0 || m.ItemsPerTask > MaxItemsPerTask {
		return fail(CodeInvalidLimits, "WithItemBatching needs 1 to %d items per task, got %d", MaxItemsPerTask, m.ItemsPerTask)
	}
	if m.AutoBatching && (m.ItemsPerTask < 2 || m.ItemsPerTask > MaxItemsPerTask) {
		return fail(CodeInvalidLimits, "WithAutoBatching needs a cap of 2 to %d items per task, got %d", MaxItemsPerTask, m.ItemsPerTask)
	}
	if m.Resume != nil {
		if err := checkResume(m.Resume); err != nil {
			return fail(CodeInvalidResume, "%s", err.(*DefinitionError).Msg)
		}
	}
	if m.Buffer != nil && m.Fold != nil {
		return fail(CodeFoldAndBuffer, "a map cannot have both a result buffer and a fold")
	}
	what, bytes, actor := "", int64(0), flowgraph.ActorOptions{}
	switch {
	case m.Buffer != nil:
		what, bytes, actor = "result buffer", m.Buffer.MaxSerializedBytes, m.Buffer.Actor
	case m.Fold != nil:
		what, bytes, actor = "fold", m.Fold.MaxSerializedBytes, m.Fold.Actor
		if p := m.Fold.Reducer.RuntimeEnv; p != "" {
			if _, ok := lookupRuntimeEnv(p); !ok {
				return &DefinitionError{Path: id + ".reducer", Code: CodeUnknownRuntimeEnv,
					Msg: fmt.Sprintf("the reducer's runtime environment profile %q is not registered (sdk.RegisterRuntimeEnv)", p)}
			}
		}
	default:
		return nil
	}
	if inMap {
		return fail(CodeForbiddenNesting, "a %s cannot be nested inside a dynamic map", what)
	}
	if m.Limits == nil || m.Limits.MaxItems < 1 {
		return fail(CodeInvalidLimits, "a %s needs WithLimits with positive MaxConcurrency and MaxItems", what)
	}
	if bytes < 1 {
		return fail(CodeInvalidLimits, "the %s needs a positive MaxSerializedBytes, got %d", what, bytes)
	}
	return validateActor(actor, bytes, what, fail)
}

func validateActor(a flowgraph.ActorOptions, maxBytes int64, what string, fail failFunc) error {
	if !(a.NumCPUs > 0) || math.IsInf(a.NumCPUs, 0) {
		return fail(CodeInvalidActorOptions, "the %s actor needs NumCPUs > 0, got %v", what, a.NumCPUs)
	}
	if a.Memory < maxBytes {
		return fail(CodeInvalidActorOptions, "the %s actor needs Memory ≥ MaxSerializedBytes (%d), got %d", what, maxBytes, a.Memory)
	}
	if len(a.Resources) > MaxActorCustomResources {
		return fail(CodeInvalidActorOptions, "the %s actor has %d custom resources, at most %d", what, len(a.Resources), MaxActorCustomResources)
	}
	for _, k := range sortedKeys(a.Resources) {
		if v := a.Resources[k]; k == "" || !(v > 0) || math.IsInf(v, 0) {
			return fail(CodeInvalidActorOptions, "the %s actor's custom resource %q must be positive", what, k)
		}
		if rayOwnResource(k) {
			return fail(CodeInvalidActorOptions, "the %s actor's custom resource %q is Ray's own: use NumCPUs", what, k)
		}
	}
	switch a.SchedulingStrategy {
	case "", "DEFAULT", "SPREAD":
	default:
		return fail(CodeInvalidActorOptions, "the %s actor's SchedulingStrategy must be DEFAULT or SPREAD, got %q", what, a.SchedulingStrategy)
	}
	return nil
}

func isOne(v any) bool {
	switch x := v.(type) {
	case int:
		return x == 1
	case int64:
		return x == 1
	case float64:
		return x == 1
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
