package progress

import (
	"encoding/json"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/event"
	"github.com/rayflow/rayflow/gen/topology"
)

// Run states of the schema-v2 snapshot.
const (
	StateRunning   = "RUNNING"
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
)

// Snapshot is the schema-v2 compatibility snapshot (docs/contracts.md#snapshot-v2) of a
// collector's retained state. canonical.NoFold.Marshal encodes it exactly;
// float fields keep their ".0" (progress_percent 100.0, epoch seconds).
type Snapshot struct {
	SchemaVersion   int64              `json:"schema_version"`
	WorkflowID      string             `json:"workflow_id"`
	RunIdentity     common.RunIdentity `json:"run_identity"`
	Plan            *event.Plan        `json:"plan"`
	Revision        int64              `json:"revision"`
	State           string             `json:"state"`
	TotalNodes      int64              `json:"total_nodes"`
	CompletedNodes  int64              `json:"completed_nodes"`
	FailedNodes     int64              `json:"failed_nodes"`
	RunningNodes    int64              `json:"running_nodes"`
	PendingNodes    int64              `json:"pending_nodes"`
	ProgressPercent float64            `json:"progress_percent"`
	StartedAt       float64            `json:"started_at"`
	UpdatedAt       float64            `json:"updated_at"`
	Graph           Graph              `json:"graph"`
	RecentEvents    []RecentEvent      `json:"recent_events"`
	Ingress         Ingress            `json:"ingress"`
}

// Graph is the retained graph: nodes sorted by node_id, edges by
// (source, target).
type Graph struct {
	Nodes []Node          `json:"nodes"`
	Edges []topology.Edge `json:"edges"`
}

// Node is one retained graph node. A bounded map is one node of kind "map"
// with its fan-out counters; its items are not nodes.
type Node struct {
	NodeID        string                     `json:"node_id"`
	Kind          topology.NodeKind          `json:"kind"`
	Label         string                     `json:"label"`
	CallablePath  *string                    `json:"callable_path"`
	Dependencies  []string                   `json:"dependencies"`
	State         detail.NodeState           `json:"state"`
	Progress      *detail.NodeProgress       `json:"progress"`
	RuntimeEnv    map[string]json.RawMessage `json:"runtime_env"`
	RayOptions    map[string]json.RawMessage `json:"ray_options"`
	Execution     *detail.NodeExecution      `json:"execution"`
	Fanout        *detail.NodeFanout         `json:"fanout"`
	StartedAt     *float64                   `json:"started_at"`
	FinishedAt    *float64                   `json:"finished_at"`
	Error         *string                    `json:"error"`
	OutputPreview *detail.OutputPreview      `json:"output_preview"`
	Truncated     bool                       `json:"truncated"`
}

// RecentEvent is one entry of the run's bounded recent-event list.
type RecentEvent struct {
	Event     detail.NodeEventKind `json:"event"`
	Label     string               `json:"label"`
	NodeID    string               `json:"node_id"`
	State     detail.NodeState     `json:"state"`
	Timestamp string               `json:"timestamp"`
}

// Ingress is the collector's ingress diagnostics (docs/contracts.md#snapshot-v2).
type Ingress struct {
	Accepted         int64              `json:"accepted"`
	Rejected         int64              `json:"rejected"`
	Truncated        int64              `json:"truncated"`
	AcceptedByKind   map[Kind]int64     `json:"accepted_by_kind"`
	RejectedByReason RejectedByReason   `json:"rejected_by_reason"`
	RetainedBytes    int64              `json:"retained_bytes"`
	RetainedNodes    int64              `json:"retained_nodes"`
	RetainedEdges    int64              `json:"retained_edges"`
	Cost             Cost               `json:"cost"`
	Producer         *ProducerAggregate `json:"producer"`
}

// RejectedByReason counts rejections by ingress bucket.
type RejectedByReason struct {
	ProtocolError         int64 `json:"protocol_error"`
	FenceMismatch         int64 `json:"fence_mismatch"`
	UnexpectedInitialized int64 `json:"unexpected_initialized"`
	NodeLimit             int64 `json:"node_limit"`
	EdgeLimit             int64 `json:"edge_limit"`
	RetainedBytesLimit    int64 `json:"retained_bytes_limit"`
}

// Bucket is an ingress rejection bucket (a key of rejected_by_reason).
type Bucket string

// Ingress rejection buckets.
const (
	BucketProtocolError         Bucket = "protocol_error"
	BucketFenceMismatch         Bucket = "fence_mismatch"
	BucketUnexpectedInitialized Bucket = "unexpected_initialized"
	BucketNodeLimit             Bucket = "node_limit"
	BucketEdgeLimit             Bucket = "edge_limit"
	BucketRetainedBytesLimit    Bucket = "retained_bytes_limit"
)

// Cost is the versioned fixed-shape actor-cost block; counters saturate at
// 2^63-1 and set Saturated.
type Cost struct {
	SchemaVersion  int64              `json:"schema_version"`
	Saturated      bool               `json:"saturated"`
	Initialization CostInitialization `json:"initialization"`
	Ingest         CostIngest         `json:"ingest"`
	DeliveryDelay  CostDeliveryDelay  `json:"delivery_delay"`
	Snapshot       CostSnapshot       `json:"snapshot"`
}

// CostInitialization is the cost of the accepted initialized event.
type CostInitialization struct {
	WireBytes     int64 `json:"wire_bytes"`
	HandlerWallNS int64 `json:"handler_wall_ns"`
	HandlerCPUNS  int64 `json:"handler_cpu_ns"`
}

// CostIngest counts every ingest call.
type CostIngest struct {
	CallsReceived      int64          `json:"calls_received"`
	WireBytesReceived  int64          `json:"wire_bytes_received"`
	DecodedCalls       int64          `json:"decoded_calls"`
	PostDisableCalls   int64          `json:"post_disable_calls"`
	DecodedByKind      map[Kind]int64 `json:"decoded_by_kind"`
	HandlerWallNSTotal int64          `json:"handler_wall_ns_total"`
	HandlerWallNSMax   int64          `json:"handler_wall_ns_max"`
	HandlerCPUNSTotal  int64          `json:"handler_cpu_ns_total"`
	HandlerCPUNSMax    int64          `json:"handler_cpu_ns_max"`
}

// CostDeliveryDelay is the processed delivery delay (collector clock minus
// occurred_at) of accepted events.
type CostDeliveryDelay struct {
	Samples              int64 `json:"samples"`
	TotalUS              int64 `json:"total_us"`
	MaxUS                int64 `json:"max_us"`
	NegativeClockSamples int64 `json:"negative_clock_samples"`
}

// CostSnapshot is the cost of building snapshots.
type CostSnapshot struct {
	Calls            int64 `json:"calls"`
	BuildWallNSTotal int64 `json:"build_wall_ns_total"`
	BuildWallNSMax   int64 `json:"build_wall_ns_max"`
	BuildCPUNSTotal  int64 `json:"build_cpu_ns_total"`
	BuildCPUNSMax    int64 `json:"build_cpu_ns_max"`
}

// ProducerAggregate sums the accepted producer reports (no identities, no
// application values).
type ProducerAggregate struct {
	SchemaVersion           int64            `json:"schema_version"`
	Reports                 int64            `json:"reports"`
	Saturated               bool             `json:"saturated"`
	Offered                 int64            `json:"offered"`
	Submitted               int64            `json:"submitted"`
	Superseded              int64            `json:"superseded"`
	LocallyDropped          int64            `json:"locally_dropped"`
	Acknowledged            int64            `json:"acknowledged"`
	ActorRejected           int64            `json:"actor_rejected"`
	AckFailed               int64            `json:"ack_failed"`
	PendingAcknowledgements int64            `json:"pending_acknowledgements"`
	TerminalHandoff         map[string]int64 `json:"terminal_handoff"`
}

func newKindCounts() map[Kind]int64 {
	m := make(map[Kind]int64, len(kinds))
	for _, k := range kinds {
		m[k] = 0
	}
	return m
}
