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

// Kind is a live event kind (CONTRACTS §6.2).
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

// Kinds lists every Kind in schema order.
var Kinds = []Kind{
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
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("progress: %s payload: %w", kind, err)
	}
	return e.Encode(kind, p, truncated)
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
	return e.encodeValid(KindInitialized, &event.InitializedPayload{Plan: plan}, false)
}

// NodeRegistered encodes a task node's registration. The label is bounded,
// the callable path bounded to 512 bytes (null when oversized), and the
// metadata redacted and bounded (RedactMetadata).
func (e *Encoder) NodeRegistered(nodeID, label string, callablePath *string, runtimeEnv, rayOptions map[string]json.RawMessage) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
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
	p.RuntimeEnv, t3 = RedactMetadata(runtimeEnv, limits.MetricsV1, e.redact)
	p.RayOptions, t4 = RedactMetadata(rayOptions, limits.MetricsV1, e.redact)
	return e.encodeValid(KindNodeRegistered, &p, t1 || t2 || t3 || t4)
}

// EdgesRegistered encodes edges as batches of at most 32 (edge_batch),
// dropping repeated edges; an empty list yields no event.
func (e *Encoder) EdgesRegistered(edges []topology.Edge) ([][]byte, error) {
	seen := make(map[topology.Edge]bool, len(edges))
	var out [][]byte
	batch := make([]topology.Edge, 0, e.prof.EdgeBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		b, err := e.encodeValid(KindEdgesRegistered, &event.EdgesRegisteredPayload{Edges: batch}, false)
		if err != nil {
			return err
		}
		out = append(out, b)
		batch = make([]topology.Edge, 0, e.prof.EdgeBatch)
		return nil
	}
	for _, ed := range edges {
		if err := e.nodeID(ed.Source); err != nil {
			return nil, err
		}
		if err := e.nodeID(ed.Target); err != nil {
			return nil, err
		}
		if seen[ed] {
			continue
		}
		seen[ed] = true
		batch = append(batch, ed)
		if int64(len(batch)) == e.prof.EdgeBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// MapRegistered encodes a bounded map's aggregate node.
func (e *Encoder) MapRegistered(nodeID, label string, maxConcurrency, maxItems *int64) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	p := event.MapRegisteredPayload{NodeID: nodeID, MaxConcurrency: maxConcurrency, MaxItems: maxItems}
	var t bool
	p.Label, t = e.label(label)
	return e.encodeValid(KindMapRegistered, &p, t)
}

// Submitted encodes a node's submission to Ray.
func (e *Encoder) Submitted(nodeID, label, rayTaskID string) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	if !identityText(rayTaskID, e.prof.NodeIDBytes, e.redact) {
		return nil, fmt.Errorf("%w: ray task id %q", ErrInvalidIdentity, rayTaskID)
	}
	p := event.SubmittedPayload{NodeID: nodeID, RayTaskID: rayTaskID}
	var t bool
	p.Label, t = e.label(label)
	return e.encodeValid(KindSubmitted, &p, t)
}

// Started encodes a leaf's start with its execution identity.
func (e *Encoder) Started(nodeID, label string, exec detail.NodeExecution) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	if exec.AssignedResources == nil {
		exec.AssignedResources = map[string]float64{}
	}
	p := event.StartedPayload{NodeID: nodeID, Execution: exec}
	var t bool
	p.Label, t = e.label(label)
	return e.encodeValid(KindStarted, &p, t)
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
func (e *Encoder) mapProgressEvent(nodeID, label string, submitted, completed int64, inputExhausted bool) ([]byte, *event.MapProgress, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, nil, err
	}
	p := event.MapProgressPayload{NodeID: nodeID, Submitted: submitted, Completed: completed, InputExhausted: inputExhausted}
	var t bool
	p.Label, t = e.label(label)
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("progress: %s payload: %w", KindMapProgress, err)
	}
	pb, err := canonical.NoFold.Marshal(&p)
	if err != nil {
		return nil, nil, err
	}
	ts := FormatTimestamp(e.now())
	wire, err := e.assembleAt(KindMapProgress, pb, t, ts)
	if err != nil {
		return nil, nil, err
	}
	ev := &event.MapProgress{Encoding: "identity", LimitsProfile: "v1", OccurredAt: ts, RunIdentity: e.identity,
		SchemaVersion: 1, Truncated: t, Kind: string(KindMapProgress), Payload: p}
	return wire, ev, nil
}

// OutputPreview encodes a node's preview envelope.
func (e *Encoder) OutputPreview(nodeID string, preview detail.OutputPreview) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	return e.encodeValid(KindOutputPreview, &event.OutputPreviewPayload{NodeID: nodeID, OutputPreview: preview}, false)
}

// Completed encodes a leaf's successful exit.
func (e *Encoder) Completed(nodeID, label string) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	p := event.CompletedPayload{NodeID: nodeID}
	var t bool
	p.Label, t = e.label(label)
	return e.encodeValid(KindCompleted, &p, t)
}

// Failed encodes a leaf's failure with its classified error text (bounded
// to 2 KiB and redacted).
func (e *Encoder) Failed(nodeID, label, errText string) ([]byte, error) {
	if err := e.nodeID(nodeID); err != nil {
		return nil, err
	}
	p := event.FailedPayload{NodeID: nodeID}
	var t1, t2 bool
	p.Label, t1 = e.label(label)
	p.Error, t2 = boundText(errText, e.prof.MessageBytes, e.redact)
	return e.encodeValid(KindFailed, &p, t1 || t2)
}

// NodeSettled encodes the coordinator's terminal record of a node.
func (e *Encoder) NodeSettled(p event.NodeSettledPayload) ([]byte, error) {
	if err := e.nodeID(p.NodeID); err != nil {
		return nil, err
	}
	var t bool
	if p.Error != nil {
		s, tt := boundText(*p.Error, e.prof.MessageBytes, e.redact)
		p.Error, t = &s, tt
	}
	return e.encodeValid(KindNodeSettled, &p, t)
}

// ProducerReport encodes a producer session's sealed counters.
func (e *Encoder) ProducerReport(r event.ProducerReportPayload) ([]byte, error) {
	return e.encodeValid(KindProducerReport, &r, false)
}

// RedactMetadata bounds generic metadata (runtime_env, ray_options) per
// CONTRACTS §6.3 and §6.5: values under a key matching the policy and
// matching strings become redact.Marker; metadata nesting more than
// prof.MetadataDepth containers (the object itself included) or costing more
// than prof.MetadataBudget is replaced by an empty object. truncated reports
// any change. A nil map yields an empty one.
func RedactMetadata(m map[string]json.RawMessage, prof limits.MetricsProfile, pol *redact.Policy) (map[string]json.RawMessage, bool) {
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

// metadataCost is the §6.3 budget: null 4, bool 5, number 24, string len+2,
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
