package progress

import (
	"encoding/json"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// PreviewDetail turns an sdk preview envelope into its node-detail form
// (the value as canonical JSON; null when the status carries none). A value
// that cannot be encoded makes the envelope TOO_LARGE without a value.
func PreviewDetail(env sdk.PreviewEnvelope) detail.OutputPreview {
	out := detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailability(env.Availability), Value: json.RawMessage("null")}
	if env.Availability == sdk.PreviewAvailable || env.Availability == sdk.PreviewRedacted {
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
func (p *Producer) OutputPreview(env sdk.PreviewEnvelope) {
	if p == nil {
		return
	}
	p.lifecycle(p.enc.OutputPreview(p.nodeID, PreviewDetail(env)))
}
