package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// Registry maps flow names to typed flows, so that a task stored as
// (name, input JSON) can be decoded and run by a worker. The package-level
// Register uses DefaultRegistry; flows are normally registered from a
// package-level init, so every process of a binary knows the same names.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]*flowEntry
	byGraph map[*flowgraph.Node]string
	// version counts registrations, so that a worker re-publishes its
	// flows when the registry changed.
	version int64
}

// DefaultRegistry is the registry of Register, clients and workers that
// are given none.
var DefaultRegistry = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*flowEntry{}, byGraph: map[*flowgraph.Node]string{}}
}

type flowEntry struct {
	name      string
	graph     *flowgraph.Node
	inType    reflect.Type
	inputType string
	// decode checks that raw decodes into the flow's input type.
	decode func(raw []byte) error
	// materialize materializes the flow (for Ray when ray).
	materialize func(ray bool) (*sdk.Materialized, error)
	// selection is the JSON of m's strategy selection (cached per form).
	selection func(ray bool, m *sdk.Materialized) (string, error)
	// run decodes raw, runs the flow with opts and encodes its result.
	run func(ctx context.Context, raw []byte, attempt int, opts []sdk.RunOption) ([]byte, error)
	// withAttempt is raw with the attempt set (AttemptInput), re-encoded.
	withAttempt func(raw []byte, attempt int) ([]byte, error)
	// schema is the input's JSON Schema (InputSchemaOf, made once).
	schema func() (json.RawMessage, error)
}

// AttemptInput is implemented (on its pointer) by a flow input that wants
// to know which durable attempt runs it: the worker calls SetAttempt with
// the attempt number (1, 2, …) after decoding the stored input and before
// the run starts, on the local and ray runners; the ray_job runner sends
// its job the input with the attempt set (Registry.AttemptInput). The
// stored input is not changed. examples/recovery uses it for its
// attempt-driven failures. A step can also read its attempt (and the
// whole run identity) from its context with sdk.AttemptFrom.
type AttemptInput interface {
	SetAttempt(attempt int)
}

// Register registers f under name in DefaultRegistry (and in the sdk's
// registry of named flows, so `rayflow plan` and Ray Job coordinators find
// it too). A later registration under the same name replaces the earlier.
// opts are the flow's plan options (sdk.WithReportingPolicy, for one):
// the same flow registered under two names with different options runs
// two different plans (enqueue it by name, Client.EnqueueJSON).
func Register[In, Out any](name string, f sdk.Flow[In, Out], opts ...sdk.MaterializeOption) {
	RegisterIn(DefaultRegistry, name, f, opts...)
	if len(opts) == 0 {
		sdk.RegisterFlow(name, f)
	}
}

// RegisterIn registers f under name in r, materialized with opts.
func RegisterIn[In, Out any](r *Registry, name string, f sdk.Flow[In, Out], opts ...sdk.MaterializeOption) {
	if name == "" || len(name) > MaxFlowNameLen {
		panic(fmt.Sprintf("durable.Register: flow name %q is empty or over %d bytes", name, MaxFlowNameLen))
	}
	opts = slices.Clip(opts)
	localPlan := sync.OnceValues(func() (*sdk.Materialized, error) { return sdk.Materialize(f, opts...) })
	rayPlan := sync.OnceValues(func() (*sdk.Materialized, error) { return sdk.Materialize(f, append(opts, sdk.ForRay())...) })
	var localSelOnce, raySelOnce sync.Once
	var localSelJSON, raySelJSON string
	var localSelErr, raySelErr error
	selOf := func(m *sdk.Materialized) (string, error) {
		b, err := json.Marshal(m.Selection)
		if err == nil && len(b) > 65536 {
			err = fmt.Errorf("durable: the selection of %s is %d bytes", name, len(b))
		}
		return string(b), err
	}
	localSel := func(m *sdk.Materialized) (string, error) {
		localSelOnce.Do(func() { localSelJSON, localSelErr = selOf(m) })
		return localSelJSON, localSelErr
	}
	raySel := func(m *sdk.Materialized) (string, error) {
		raySelOnce.Do(func() { raySelJSON, raySelErr = selOf(m) })
		return raySelJSON, raySelErr
	}
	e := &flowEntry{
		name:      name,
		graph:     sdkrt.Graph(f),
		inType:    reflect.TypeFor[In](),
		inputType: reflect.TypeFor[In]().String(),
		schema:    sync.OnceValues(func() (json.RawMessage, error) { return InputSchemaOf(reflect.TypeFor[In]()) }),
		decode: func(raw []byte) error {
			_, err := decodeStrict[In](raw)
			return err
		},
		// A flow's plan cannot change within a process (its definition and
		// code identity are fixed), so each form is materialized once.
		materialize: func(ray bool) (*sdk.Materialized, error) {
			if ray {
				return rayPlan()
			}
			return localPlan()
		},
		selection: func(ray bool, m *sdk.Materialized) (string, error) {
			if ray {
				return raySel(m)
			}
			return localSel(m)
		},
		run: func(ctx context.Context, raw []byte, attempt int, opts []sdk.RunOption) ([]byte, error) {
			in, err := decodeStrict[In](raw)
			if err != nil {
				return nil, err
			}
			if a, ok := any(&in).(AttemptInput); ok {
				a.SetAttempt(attempt)
			}
			out, err := sdk.Run(ctx, f, in, opts...)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(out)
			if err != nil {
				return nil, fmt.Errorf("durable: encoding the result as JSON: %w", err)
			}
			return b, nil
		},
	}
	if _, ok := any(new(In)).(AttemptInput); ok {
		e.withAttempt = func(raw []byte, attempt int) ([]byte, error) {
			in, err := decodeStrict[In](raw)
			if err != nil {
				return nil, err
			}
			any(&in).(AttemptInput).SetAttempt(attempt)
			return json.Marshal(in)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byName[name]; ok {
		delete(r.byGraph, old.graph)
	}
	r.byName[name] = e
	r.byGraph[e.graph] = name
	r.version++
}

// maxSchemaBytes bounds a published input schema (a CHECK of
// rayflow_worker_flows).
const maxSchemaBytes = 65536

// publications are the registered flows as a worker publishes them (the
// plan form it runs): each flow's input schema, plan fingerprint and the
// plan's build revision; a flow that does not materialize or whose schema
// is over 64 KiB is left out. version is the registry's version they
// describe.
func (r *Registry) publications(ray bool) (pubs []store.FlowPublication, version int64) {
	r.mu.RLock()
	entries := make([]*flowEntry, 0, len(r.byName))
	for _, e := range r.byName {
		entries = append(entries, e)
	}
	version = r.version
	r.mu.RUnlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	for _, e := range entries {
		m, err := e.materialize(ray)
		if err != nil {
			continue
		}
		sch, err := e.schema()
		if err != nil || len(sch) > maxSchemaBytes {
			continue
		}
		build := ""
		if m.Plan != nil && m.Plan.Definition.BuildRevision != nil {
			build = *m.Plan.Definition.BuildRevision
		}
		pubs = append(pubs, store.FlowPublication{Flow: e.name, InputSchema: string(sch), Fingerprint: m.Fingerprint, BuildRevision: build})
	}
	return pubs, version
}

func (r *Registry) currentVersion() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// InputSchema returns the JSON Schema of the input of the flow registered
// as name, as workers publish it (InputSchemaOf); an unknown name is an
// error wrapping ErrUnknownFlow.
func (r *Registry) InputSchema(name string) (json.RawMessage, error) {
	e, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	return e.schema()
}

// pins materializes every registered flow (cached) for the claim.
func (r *Registry) pins(ray bool) []planPin {
	r.mu.RLock()
	entries := make([]*flowEntry, 0, len(r.byName))
	for _, e := range r.byName {
		entries = append(entries, e)
	}
	r.mu.RUnlock()
	out := make([]planPin, 0, len(entries))
	for _, e := range entries {
		m, err := e.materialize(ray)
		if err != nil || len(m.Canonical) > 65536 {
			continue
		}
		sel, err := e.selection(ray, m)
		if err != nil {
			continue
		}
		out = append(out, planPin{flow: e.name, fingerprint: m.Fingerprint, selection: sel, plan: m.Canonical})
	}
	return out
}

// AttemptInput returns the stored input raw of the flow registered as
// name as attempt runs it: decoded, told its attempt and encoded as JSON
// again when the flow's input implements AttemptInput, raw itself
// otherwise. A runner that hands the input to another process (the
// ray_job runner, whose job's coordinator decodes it) sends this.
func (r *Registry) AttemptInput(name string, raw []byte, attempt int) ([]byte, error) {
	e, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	if e.withAttempt == nil {
		return raw, nil
	}
	return e.withAttempt(raw, attempt)
}

// InputType returns the Go type of the input of the flow registered as
// name (an unknown name is an error wrapping ErrUnknownFlow).
func (r *Registry) InputType(name string) (reflect.Type, error) {
	e, err := r.lookup(name)
	if err != nil {
		return nil, err
	}
	return e.inType, nil
}

// Names lists the registered flow names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (r *Registry) lookup(name string) (*flowEntry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownFlow, name, r.namesLocked())
	}
	return e, nil
}

func (r *Registry) nameOf(g *flowgraph.Node) (string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if n, ok := r.byGraph[g]; ok && g != nil {
		return n, nil
	}
	return "", fmt.Errorf("%w: the flow value is not registered (durable.Register it by name first)", ErrUnknownFlow)
}

func (r *Registry) namesLocked() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// decodeStrict decodes exactly one JSON value into T, refusing unknown
// object fields and trailing data.
func decodeStrict[T any](raw []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("%w (%s): %w", ErrInvalidInput, reflect.TypeFor[T](), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, fmt.Errorf("%w (%s): trailing data after the JSON value", ErrInvalidInput, reflect.TypeFor[T]())
	}
	return v, nil
}
