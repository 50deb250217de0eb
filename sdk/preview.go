package sdk

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/sdk/redact"
)

// PreviewAvailability is the status of an output preview.
type PreviewAvailability = progress.PreviewAvailability

// Preview statuses (docs/contracts.md#output-previews). Only Available and Redacted carry a value.
const (
	PreviewNotRequested    = progress.PreviewNotRequested
	PreviewPending         = progress.PreviewPending
	PreviewAvailable       = progress.PreviewAvailable
	PreviewRedacted        = progress.PreviewRedacted
	PreviewTooLarge        = progress.PreviewTooLarge
	PreviewUnsupported     = progress.PreviewUnsupported
	PreviewFailed          = progress.PreviewFailed
	PreviewUnavailable     = progress.PreviewUnavailable
	PreviewOmittedByPolicy = progress.PreviewOmittedByPolicy
)

// Preview profile v1 limits.
const (
	PreviewMaxDepth          = 4
	PreviewMaxAggregateItems = 32
	PreviewMaxListItems      = 16
	PreviewMaxObjectEntries  = 15
	PreviewMaxKeyBytes       = 64
	PreviewMaxStringBytes    = 256
	PreviewMaxCanonicalBytes = 512
	PreviewMaxDecodedBudget  = 2048
	PreviewMaxSafeInteger    = 1<<53 - 1
)

// PreviewEnvelope is the fixed preview envelope, schema version 1.
type PreviewEnvelope = progress.PreviewEnvelope

// previewError classifies a projection that cannot be shown.
type previewError struct {
	status PreviewAvailability
	msg    string
}

func (e *previewError) Error() string { return string(e.status) + ": " + e.msg }

// buildPreview runs a step's projector on its successful result and
// returns the validated, redacted envelope: FAILED when the projector
// fails or panics, UNSUPPORTED for a value outside the JSON types,
// TOO_LARGE over a preview profile v1 limit, REDACTED when the policy
// replaced text, else AVAILABLE. It never fails the leaf. The Ray engine
// calls it beside the leaf; local runs do not run previews.
func buildPreview(p *flowgraph.Preview, result any, policy *redact.Policy) PreviewEnvelope {
	if p == nil {
		return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewNotRequested}
	}
	v, err := project(p, result)
	if err != nil {
		return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewFailed}
	}
	return validatePreview(v, policy)
}

func project(p *flowgraph.Preview, result any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("projector panicked: %v", r)
		}
	}()
	return p.Project(result)
}

// validatePreview checks a projected value against preview profile v1 and
// applies redaction (policy nil means redact.Default).
func validatePreview(v any, policy *redact.Policy) PreviewEnvelope {
	if policy == nil {
		policy = redact.Default
	}
	c := previewCheck{}
	if err := c.value(v, 0); err != nil {
		return PreviewEnvelope{SchemaVersion: 1, Availability: err.(*previewError).status}
	}
	red, changed := policy.Value(v)
	b, err := canonical.NoFold.Marshal(red)
	if err != nil || len(b) > PreviewMaxCanonicalBytes {
		return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewTooLarge}
	}
	if changed {
		return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewRedacted, Value: red}
	}
	return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewAvailable, Value: red}
}

type previewCheck struct {
	items  int
	budget int
}

func (c *previewCheck) spend(n int) error {
	c.budget += n
	if c.budget > PreviewMaxDecodedBudget {
		return &previewError{PreviewTooLarge, "decoded budget exceeded"}
	}
	return nil
}

// value walks v; the root is at depth 0, so a scalar inside four nested
// containers is the deepest allowed.
func (c *previewCheck) value(v any, depth int) error {
	if depth > PreviewMaxDepth {
		return &previewError{PreviewTooLarge, "too deep"}
	}
	switch x := v.(type) {
	case nil:
		return c.spend(4)
	case bool:
		return c.spend(1)
	case string:
		if !utf8.ValidString(x) {
			return &previewError{PreviewUnsupported, "invalid UTF-8"}
		}
		if len(x) > PreviewMaxStringBytes {
			return &previewError{PreviewTooLarge, "string too long"}
		}
		return c.spend(16 + len(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		if n, ok := toInt64(x); !ok || n > PreviewMaxSafeInteger || n < -PreviewMaxSafeInteger {
			return &previewError{PreviewTooLarge, "integer outside the safe range"}
		}
		return c.spend(8)
	case float64, float32:
		f := toFloat(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &previewError{PreviewUnsupported, "non-finite number"}
		}
		if f == math.Trunc(f) && math.Abs(f) > PreviewMaxSafeInteger {
			return &previewError{PreviewTooLarge, "integral number outside the safe range"}
		}
		return c.spend(8)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return &previewError{PreviewUnsupported, "bad number"}
		}
		return c.value(f, depth)
	case []any:
		if len(x) > PreviewMaxListItems {
			return &previewError{PreviewTooLarge, "list too long"}
		}
		if err := c.spend(16); err != nil {
			return err
		}
		for _, e := range x {
			if c.items++; c.items > PreviewMaxAggregateItems {
				return &previewError{PreviewTooLarge, "too many items"}
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if len(x) > PreviewMaxObjectEntries {
			return &previewError{PreviewTooLarge, "too many entries"}
		}
		if err := c.spend(24); err != nil {
			return err
		}
		for _, k := range sortedKeys(x) {
			if len(k) < 1 || len(k) > PreviewMaxKeyBytes || !utf8.ValidString(k) {
				return &previewError{PreviewTooLarge, "key length"}
			}
			if c.items++; c.items > PreviewMaxAggregateItems {
				return &previewError{PreviewTooLarge, "too many items"}
			}
			if err := c.spend(8 + len(k)); err != nil {
				return err
			}
			if err := c.value(x[k], depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return &previewError{PreviewUnsupported, fmt.Sprintf("%T is not a JSON type", v)}
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func toFloat(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}
