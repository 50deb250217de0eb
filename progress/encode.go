package progress

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/redact"
)

// Kind is a live event kind (docs/contracts.md#live-events).
type Kind string

// The 13 event kinds, in schema order.
const (
	KindInitialized         Kind = "initialized"
	KindNodeRegistered      Kind = "node_registered"
	KindEdgesRegistered     Kind = "edges_registered"
	KindMapRegistered       Kind = "map_registered"
	KindSubmitted           Kind = "submitted"
	KindStarted             Kind = "started"
	KindApplicationProgress Kind = "application_progress"
	KindMapProgress         Kind = "map_progress"
	KindOutputPreview       Kind = "output_preview"
	KindCompleted           Kind = "completed"
	KindFailed              Kind = "failed"
	KindNodeSettled         Kind = "node_settled"
	KindProducerReport      Kind = "producer_report"
)

// kinds lists every Kind in schema order.
var kinds = []Kind{
	KindInitialized, KindNodeRegistered, KindEdgesRegistered, KindMapRegistered,
	KindSubmitted, KindStarted, KindApplicationProgress, KindMapProgress,
	KindOutputPreview, KindCompleted, KindFailed, KindNodeSettled, KindProducerReport,
}

// ErrEventTooLarge is returned when an event's canonical payload exceeds
// 16 KiB or its envelope 32 KiB.
var ErrEventTooLarge = errors.New("progress: event exceeds the payload or wire cap")

// ErrInvalidIdentity is returned for identity-like text (node ids, edge
// endpoints) that is empty, over its byte cap or changed by redaction.
var ErrInvalidIdentity = errors.New("progress: invalid identity text")

// Encoder builds canonical identity-bound event envelopes for one run
// identity. It is safe for concurrent use.
type Encoder struct {
	identity common.RunIdentity
	ri       []byte // canonical run identity
	now      func() time.Time
	redact   *redact.Policy
	prof     limits.Profile
	metrics  limits.MetricsProfile
}

// NewEncoder returns an Encoder for id. now defaults to time.Now and pol to
// redact.Default.
func NewEncoder(id common.RunIdentity, now func() time.Time, pol *redact.Policy) (*Encoder, error) {
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("progress: run identity: %w", err)
	}
	ri, err := canonical.NoFold.Marshal(id)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if pol == nil {
		pol = redact.Default
	}
	return &Encoder{identity: id, ri: ri, now: now, redact: pol, prof: limits.ProfileV1, metrics: limits.MetricsV1}, nil
}

// Identity returns the run identity the encoder binds events to.
func (e *Encoder) Identity() common.RunIdentity { return e.identity }

// Encode returns the canonical envelope of one event of kind with the given
// payload (a gen/event payload value), stamped now. It checks the payload
// (16 KiB) and wire (32 KiB) caps but not the payload's schema; the typed
// helpers below validate.
func (e *Encoder) Encode(kind Kind, payload any, truncated bool) ([]byte, error) {
	p, err := canonical.NoFold.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return e.assemble(kind, p, truncated)
}

// assemble writes the envelope around canonical payload bytes p. The keys
// are written in canonical (code point) order, so the result is exactly
// canonical.NoFold.Marshal of the gen/event record.
func (e *Encoder) assemble(kind Kind, p []byte, truncated bool) ([]byte, error) {
	return e.assembleAt(kind, p, truncated, FormatTimestamp(e.now()))
}

// assembleAt is assemble with the occurred_at timestamp ts.
func (e *Encoder) assembleAt(kind Kind, p []byte, truncated bool, ts string) ([]byte, error) {
	if int64(len(p)) > e.prof.EventPayloadBytes {
		return nil, fmt.Errorf("%w: %s payload is %d bytes", ErrEventTooLarge, kind, len(p))
	}
	b := make([]byte, 0, len(p)+len(e.ri)+160)
	b = append(b, `{"encoding":"identity","kind":"`...)
	b = append(b, kind...)
	b = append(b, `","limits_profile":"v1","occurred_at":"`...)
	b = append(b, ts...)
	b = append(b, `","payload":`...)
	b = append(b, p...)
	b = append(b, `,"run_identity":`...)
	b = append(b, e.ri...)
	b = append(b, `,"schema_version":1,"truncated":`...)
	b = strconv.AppendBool(b, truncated)
	b = append(b, '}')
	if int64(len(b)) > e.prof.EventWireBytes {
		return nil, fmt.Errorf("%w: %s envelope is %d bytes", ErrEventTooLarge, kind, len(b))
	}
	return b, nil
}

type validator interface{ Validate() error }

func (e *Encoder) encodeValid(kind Kind, p validator, truncated bool) ([]byte, error) {
	b, _, err := e.build(kind, p, truncated)
	return b, err
}

// build validates payload p of kind and returns its canonical envelope
// with the decoded event it stands for (what event.DecodeEvent would
// return for those bytes), so that a collector in this process can ingest
// it without decoding it again (Collector.ingestOwn). ev is nil for a
// payload type without an envelope here; the bytes are the same either way.
func (e *Encoder) build(kind Kind, p validator, truncated bool) (wire []byte, ev event.Event, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("progress: %s payload: %w", kind, err)
	}
	pb, err := canonical.NoFold.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	ts := FormatTimestamp(e.now())
	if wire, err = e.assembleAt(kind, pb, truncated, ts); err != nil {
		return nil, nil, err
	}
	return wire, e.envelope(kind, ts, truncated, p), nil
}

// envelope wraps payload p in its kind's event record.
func (e *Encoder) envelope(kind Kind, ts string, truncated bool, p validator) event.Event {
	const enc, prof = "identity", "v1"
	k, id := string(kind), e.identity
	switch p := p.(type) {
	case *event.InitializedPayload:
		return &event.Initialized{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.NodeRegisteredPayload:
		return &event.NodeRegistered{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.EdgesRegisteredPayload:
		return &event.EdgesRegistered{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.MapRegisteredPayload:
		return &event.MapRegistered{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.StartedPayload:
		return &event.Started{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.MapProgressPayload:
		return &event.MapProgress{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.OutputPreviewPayload:
		return &event.OutputPreview{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.CompletedPayload:
		return &event.Completed{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.FailedPayload:
		return &event.Failed{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.SubmittedPayload:
		return &event.Submitted{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.NodeSettledPayload:
		return &event.NodeSettled{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	case *event.ProducerReportPayload:
		return &event.ProducerReport{Encoding: enc, LimitsProfile: prof, OccurredAt: ts, RunIdentity: id, SchemaVersion: 1, Truncated: truncated, Kind: k, Payload: *p}
	}
	return nil
}

func (e *Encoder) nodeID(id string) error {
	if !identityText(id, e.prof.NodeIDBytes, e.redact) {
		return fmt.Errorf("%w: node id %q", ErrInvalidIdentity, id)
	}
	return nil
}

func (e *Encoder) label(s string) (string, bool) { return boundText(s, e.prof.LabelBytes, e.redact) }

// Initialized encodes the run's first event.
func (e *Encoder) Initialized(plan event.Plan) ([]byte, error) {
	b, _, err := e.initializedEv(plan)
	return b, err
}

// initializedEv is Initialized with the event the bytes stand for (Encoder.build).
func (e *Encoder) initializedEv(plan event.Plan) ([]byte, event.Event, error) {
	return e.build(KindInitialized, &event.InitializedPayload{Plan: plan}, false)
}

// NodeRegistered encodes a task node's registration. The label is bounded,
// the callable path bounded to 512 bytes (null when oversized), and the
// metadata redacted and bounded (redactMetadata).
func (e *Encoder) NodeRegistered(nodeID, label string, callablePath *string, runtimeEnv, rayOptions map[string]json.RawMessage) ([]byte, error) {
	b, _, err := e.nodeRegisteredEv(nodeID, label, callablePath, runtimeEnv, rayOptions)
	return b, err
}

// nodeRegisteredEv is NodeRegistered with the event the bytes stand for (Encoder.build).
func (e *Encoder) nodeRegisteredEv(nodeID, label string, callablePath *string, runtimeEnv, rayOptions map[string]json.RawMessage) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.NodeRegisteredPayload{NodeID: nodeID}
	var t1, t2, t3, t4 bool
	p.Label, t1 = e.label(label)
	if callablePath != nil {
		if s := *callablePath; s != "" && int64(len(s)) <= e.prof.LabelBytes && !e.redact.Matches(s) {
			p.CallablePath = &s
		} else {
			t2 = true
		}
	}
	p.RuntimeEnv, t3 = redactMetadata(runtimeEnv, limits.MetricsV1, e.redact)
	p.RayOptions, t4 = redactMetadata(rayOptions, limits.MetricsV1, e.redact)
	return e.build(KindNodeRegistered, &p, t1 || t2 || t3 || t4)
}

// EdgesRegistered encodes edges as batches of at most 32 (edge_batch),
// dropping repeated edges; an empty list yields no event.
func (e *Encoder) EdgesRegistered(edges []topology.Edge) ([][]byte, error) {
	out, _, err := e.edgesRegisteredEv(edges)
	return out, err
}

// edgesRegisteredEv is EdgesRegistered with the events the batches stand
// for (Encoder.build).
func (e *Encoder) edgesRegisteredEv(edges []topology.Edge) ([][]byte, []event.Event, error) {
	seen := make(map[topology.Edge]bool, len(edges))
	var out [][]byte
	var evs []event.Event
	batch := make([]topology.Edge, 0, e.prof.EdgeBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		b, ev, err := e.build(KindEdgesRegistered, &event.EdgesRegisteredPayload{Edges: batch}, false)
		if err != nil {
			return err
		}
		out, evs = append(out, b), append(evs, ev)
		batch = make([]topology.Edge, 0, e.prof.EdgeBatch)
		return nil
	}
	for _, ed := range edges {
		if err := e.nodeID(ed.Source); err != nil {
			return nil, nil, err
		}
		if err := e.nodeID(ed.Target); err != nil {
			return nil, nil, err
		}
		if seen[ed] {
			continue
		}
		seen[ed] = true
		batch = append(batch, ed)
		if int64(len(batch)) == e.prof.EdgeBatch {
			if err := flush(); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	return out, evs, nil
}

// MapRegistered encodes a bounded map's aggregate node.
func (e *Encoder) MapRegistered(nodeID, label string, maxConcurrency, maxItems *int64) ([]byte, error) {
	b, _, err := e.mapRegisteredEv(nodeID, label, maxConcurrency, maxItems)
	return b, err
}

// mapRegisteredEv is MapRegistered with the event the bytes stand for (Encoder.build).
func (e *Encoder) mapRegisteredEv(nodeID, label string, maxConcurrency, maxItems *int64) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.MapRegisteredPayload{NodeID: nodeID, MaxConcurrency: maxConcurrency, MaxItems: maxItems}
	var t bool
	p.Label, t = e.label(label)
	return e.build(KindMapRegistered, &p, t)
}

// Submitted encodes a node's submission to Ray.
func (e *Encoder) Submitted(nodeID, label, rayTaskID string) ([]byte, error) {
	b, _, err := e.submittedEv(nodeID, label, rayTaskID)
	return b, err
}

// submittedEv is Submitted with the event the bytes stand for (Encoder.build).
func (e *Encoder) submittedEv(nodeID, label, rayTaskID string) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	if !identityText(rayTaskID, e.prof.NodeIDBytes, e.redact) {
		return nil, nil, fmt.Errorf("%w: ray task id %q", ErrInvalidIdentity, rayTaskID)
	}
	p := event.SubmittedPayload{NodeID: nodeID, RayTaskID: rayTaskID}
	var t bool
	p.Label, t = e.label(label)
	return e.build(KindSubmitted, &p, t)
}

// Started encodes a leaf's start with its execution identity.
func (e *Encoder) Started(nodeID, label string, exec detail.NodeExecution) ([]byte, error) {
	b, _, err := e.startedEv(nodeID, label, exec)
	return b, err
}

// startedEv is Started with the event the bytes stand for (Encoder.build).
func (e *Encoder) startedEv(nodeID, label string, exec detail.NodeExecution) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	if exec.AssignedResources == nil {
		exec.AssignedResources = map[string]float64{}
	}
	p := event.StartedPayload{NodeID: nodeID, Execution: exec}
	var t bool
	p.Label, t = e.label(label)
	return e.build(KindStarted, &p, t)
}

// MapProgress encodes a bounded map's counters.
func (e *Encoder) MapProgress(nodeID, label string, submitted, completed int64, inputExhausted bool) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	p := event.MapProgressPayload{NodeID: nodeID, Submitted: submitted, Completed: completed, InputExhausted: inputExhausted}
	var t bool
	p.Label, t = e.label(label)
	return e.encodeValid(KindMapProgress, &p, t)
}

// mapProgressEvent is MapProgress returning the decoded event too, so that
// the run can ingest its own event without decoding it again (one per
// finished map item).
func (e *Encoder) mapProgressEvent(nodeID, label string, submitted, completed, reused int64, inputExhausted bool) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.MapProgressPayload{NodeID: nodeID, Submitted: submitted, Completed: completed, InputExhausted: inputExhausted}
	if reused > 0 { // absent when none were reused: other maps' events are unchanged
		p.Reused = &reused
	}
	var t bool
	p.Label, t = e.label(label)
	return e.build(KindMapProgress, &p, t)
}

// OutputPreview encodes a node's preview envelope.
func (e *Encoder) OutputPreview(nodeID string, preview detail.OutputPreview) ([]byte, error) {
	b, _, err := e.outputPreviewEv(nodeID, preview)
	return b, err
}

// outputPreviewEv is OutputPreview with the event the bytes stand for (Encoder.build).
func (e *Encoder) outputPreviewEv(nodeID string, preview detail.OutputPreview) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	return e.build(KindOutputPreview, &event.OutputPreviewPayload{NodeID: nodeID, OutputPreview: preview}, false)
}

// Completed encodes a leaf's successful exit.
func (e *Encoder) Completed(nodeID, label string) ([]byte, error) {
	b, _, err := e.completedEv(nodeID, label)
	return b, err
}

// completedEv is Completed with the event the bytes stand for (Encoder.build).
func (e *Encoder) completedEv(nodeID, label string) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.CompletedPayload{NodeID: nodeID}
	var t bool
	p.Label, t = e.label(label)
	return e.build(KindCompleted, &p, t)
}

// Failed encodes a leaf's failure with its classified error text (bounded
// to 2 KiB and redacted).
func (e *Encoder) Failed(nodeID, label, errText string) ([]byte, error) {
	b, _, err := e.failedEv(nodeID, label, errText)
	return b, err
}

// failedEv is Failed with the event the bytes stand for (Encoder.build).
func (e *Encoder) failedEv(nodeID, label, errText string) ([]byte, event.Event, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.FailedPayload{NodeID: nodeID}
	var t1, t2 bool
	p.Label, t1 = e.label(label)
	p.Error, t2 = boundText(errText, e.prof.MessageBytes, e.redact)
	return e.build(KindFailed, &p, t1 || t2)
}

// NodeSettled encodes the coordinator's terminal record of a node.
func (e *Encoder) NodeSettled(p event.NodeSettledPayload) ([]byte, error) {
	b, _, err := e.nodeSettledEv(p)
	return b, err
}

// nodeSettledEv is NodeSettled with the event the bytes stand for (Encoder.build).
func (e *Encoder) nodeSettledEv(p event.NodeSettledPayload) ([]byte, event.Event, error) {
	if err := e.nodeID(p.NodeID); err != nil {
		return nil, nil, err
	}
	var t bool
	if p.Error != nil {
		s, tt := boundText(*p.Error, e.prof.MessageBytes, e.redact)
		p.Error, t = &s, tt
	}
	return e.build(KindNodeSettled, &p, t)
}

// ProducerReport encodes a producer session's sealed counters.
func (e *Encoder) ProducerReport(r event.ProducerReportPayload) ([]byte, error) {
	b, _, err := e.producerReportEv(r)
	return b, err
}

// producerReportEv is ProducerReport with the event the bytes stand for (Encoder.build).
func (e *Encoder) producerReportEv(r event.ProducerReportPayload) ([]byte, event.Event, error) {
	return e.build(KindProducerReport, &r, false)
}

// redactMetadata bounds generic metadata (runtime_env, ray_options) per
// docs/contracts.md#metrics-and-metadata and docs/contracts.md#redaction: values under a key matching the policy and
// matching strings become redact.Marker; metadata nesting more than
// prof.MetadataDepth containers (the object itself included) or costing more
// than prof.MetadataBudget is replaced by an empty object. truncated reports
// any change. A nil map yields an empty one.
func redactMetadata(m map[string]json.RawMessage, prof limits.MetricsProfile, pol *redact.Policy) (map[string]json.RawMessage, bool) {
	out := make(map[string]json.RawMessage, len(m))
	if len(m) == 0 {
		return out, false
	}
	if pol == nil {
		pol = redact.Default
	}
	obj := make(map[string]any, len(m))
	for k, raw := range m {
		v, err := canonical.NoFold.Decode(raw)
		if err != nil {
			return out, true
		}
		obj[k] = v
	}
	red, changed := pol.Value(obj)
	if metadataDepth(red) > prof.MetadataDepth || metadataCost(red, prof) > prof.MetadataBudget || len(m) > 256 {
		return out, true
	}
	for k, v := range red.(map[string]any) {
		b, err := canonical.NoFold.Marshal(v)
		if err != nil {
			return map[string]json.RawMessage{}, true
		}
		out[k] = b
	}
	return out, changed
}

func metadataDepth(v any) int64 {
	var d int64
	switch x := v.(type) {
	case []any:
		for _, y := range x {
			d = max(d, metadataDepth(y))
		}
		return d + 1
	case map[string]any:
		for _, y := range x {
			d = max(d, metadataDepth(y))
		}
		return d + 1
	}
	return 0
}

// metadataCost is the docs/contracts.md#metrics-and-metadata budget: null 4, bool 5, number 24, string len+2,
// key len+4, object 2, list 2 + 1 per item.
func metadataCost(v any, p limits.MetricsProfile) int64 {
	switch x := v.(type) {
	case nil:
		return p.CostNull
	case bool:
		return p.CostBool
	case string:
		return int64(len(x)) + p.CostStringOverhead
	case []any:
		c := p.CostList + int64(len(x))*p.CostListItem
		for _, y := range x {
			c += metadataCost(y, p)
		}
		return c
	case map[string]any:
		c := p.CostObject
		for k, y := range x {
			c += int64(len(k)) + p.CostKeyOverhead + metadataCost(y, p)
		}
		return c
	}
	return p.CostNumber
}
