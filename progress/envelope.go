package progress

import (
	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/event"
)

// envelope is the shared envelope of a decoded event.
type envelope struct {
	Kind        Kind
	OccurredAt  string
	RunIdentity common.RunIdentity
	Truncated   bool
}

// envelopeOf returns the envelope fields of a decoded event.
func envelopeOf(ev event.Event) envelope {
	switch x := ev.(type) {
	case *event.Initialized:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.NodeRegistered:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.EdgesRegistered:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.MapRegistered:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.Submitted:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.Started:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.ApplicationProgress:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.MapProgress:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.OutputPreview:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.Completed:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.Failed:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.NodeSettled:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	case *event.ProducerReport:
		return envelope{Kind(x.Kind), x.OccurredAt, x.RunIdentity, x.Truncated}
	}
	return envelope{}
}

// kindOf returns the kind of a decoded event ("" for nil).
func kindOf(ev event.Event) Kind {
	if ev == nil {
		return ""
	}
	return envelopeOf(ev).Kind
}

// nodeIDOf returns the node id of a node-level event ("" otherwise).
func nodeIDOf(ev event.Event) string {
	switch x := ev.(type) {
	case *event.NodeRegistered:
		return x.Payload.NodeID
	case *event.MapRegistered:
		return x.Payload.NodeID
	case *event.Submitted:
		return x.Payload.NodeID
	case *event.Started:
		return x.Payload.NodeID
	case *event.ApplicationProgress:
		return x.Payload.NodeID
	case *event.MapProgress:
		return x.Payload.NodeID
	case *event.OutputPreview:
		return x.Payload.NodeID
	case *event.Completed:
		return x.Payload.NodeID
	case *event.Failed:
		return x.Payload.NodeID
	case *event.NodeSettled:
		return x.Payload.NodeID
	}
	return ""
}
