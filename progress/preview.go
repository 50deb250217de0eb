package progress

import (
	"encoding/json"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// PreviewAvailability is the status of an output preview.
type PreviewAvailability string

// Preview statuses (docs/contracts.md#output-previews). Only Available and Redacted carry a value.
const (
	PreviewNotRequested    PreviewAvailability = "NOT_REQUESTED"
	PreviewPending         PreviewAvailability = "PENDING"
	PreviewAvailable       PreviewAvailability = "AVAILABLE"
	PreviewRedacted        PreviewAvailability = "REDACTED"
	PreviewTooLarge        PreviewAvailability = "TOO_LARGE"
	PreviewUnsupported     PreviewAvailability = "UNSUPPORTED"
	PreviewFailed          PreviewAvailability = "FAILED"
	PreviewUnavailable     PreviewAvailability = "UNAVAILABLE"
	PreviewOmittedByPolicy PreviewAvailability = "OMITTED_BY_POLICY"
)

// PreviewEnvelope is the fixed preview envelope, schema version 1.
type PreviewEnvelope struct {
	SchemaVersion int                 `json:"schema_version"`
	Availability  PreviewAvailability `json:"availability"`
	Value         any                 `json:"value"`
}

// previewDetail turns a preview envelope into its node-detail form
// (the value as canonical JSON; null when the status carries none). A value
// that cannot be encoded makes the envelope TOO_LARGE without a value.
func previewDetail(env PreviewEnvelope) detail.OutputPreview {
	out := detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailability(env.Availability), Value: json.RawMessage("null")}
	if env.Availability == PreviewAvailable || env.Availability == PreviewRedacted {
		b, err := canonical.NoFold.Marshal(env.Value)
		if err != nil {
			out.Availability = detail.PreviewAvailabilityTooLarge
			return out
		}
		out.Value = b
	}
	return out
}

// OutputPreview sends the leaf's output-preview envelope (a lifecycle
// event: never coalesced, a refusal is only counted). Send it before
// Complete or Fail, so a terminal node never keeps a PENDING preview.
func (p *Producer) OutputPreview(env PreviewEnvelope) {
	if p == nil {
		return
	}
	p.lifecycle(p.enc.outputPreviewEv(p.nodeID, previewDetail(env)))
}
