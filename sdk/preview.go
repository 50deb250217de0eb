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

// Preview profile v1 limits (docs/contracts.md#output-previews).
const (
	previewMaxDepth          = 4
	previewMaxAggregateItems = 32
	previewMaxListItems      = 16
	previewMaxObjectEntries  = 15
	previewMaxKeyBytes       = 64
	previewMaxStringBytes    = 256
	previewMaxCanonicalBytes = 512
	previewMaxDecodedBudget  = 2048
	previewMaxSafeInteger    = 1<<53 - 1
)

// previewError classifies a projection that cannot be shown.
type previewError struct {
	status progress.PreviewAvailability
	msg    string
}

func (e *previewError) Error() string { return string(e.status) + ": " + e.msg }

// buildPreview runs a step's projector on its successful result and
// returns the validated, redacted envelope: FAILED when the projector
// fails or panics, UNSUPPORTED for a value outside the JSON types,
// TOO_LARGE over a preview profile v1 limit, REDACTED when the policy
// replaced text, else AVAILABLE. It never fails the leaf. The Ray engine
// calls it beside the leaf; local runs do not run previews.
func buildPreview(p *flowgraph.Preview, result any, policy *redact.Policy) progress.PreviewEnvelope {
	if p == nil {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewNotRequested}
	}
	v, err := project(p, result)
	if err != nil {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
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
func validatePreview(v any, policy *redact.Policy) progress.PreviewEnvelope {
	if policy == nil {
		policy = redact.Default
	}
	c := previewCheck{}
	if err := c.value(v, 0); err != nil {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: err.(*previewError).status}
	}
	red, changed := policy.Value(v)
	b, err := canonical.NoFold.Marshal(red)
	if err != nil || len(b) > previewMaxCanonicalBytes {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewTooLarge}
	}
	if changed {
		return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewRedacted, Value: red}
	}
	return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewAvailable, Value: red}
}

type previewCheck struct {
	items  int
	budget int
}

func (c *previewCheck) spend(n int) error {
	c.budget += n
	if c.budget > previewMaxDecodedBudget {
		return &previewError{progress.PreviewTooLarge, "decoded budget exceeded"}
	}
	return nil
}

// value walks v; the root is at depth 0, so a scalar inside four nested
// containers is the deepest allowed.
func (c *previewCheck) value(v any, depth int) error {
	if depth > previewMaxDepth {
		return &previewError{progress.PreviewTooLarge, "too deep"}
	}
	switch x := v.(type) {
	case nil:
		return c.spend(4)
	case bool:
		return c.spend(1)
	case string:
		if !utf8.ValidString(x) {
			return &previewError{progress.PreviewUnsupported, "invalid UTF-8"}
		}
		if len(x) > previewMaxStringBytes {
			return &previewError{progress.PreviewTooLarge, "string too long"}
		}
		return c.spend(16 + len(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		if n, ok := toInt64(x); !ok || n > previewMaxSafeInteger || n < -previewMaxSafeInteger {
			return &previewError{progress.PreviewTooLarge, "integer outside the safe range"}
		}
		return c.spend(8)
	case float64, float32:
		f := toFloat(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &previewError{progress.PreviewUnsupported, "non-finite number"}
		}
		if f == math.Trunc(f) && math.Abs(f) > previewMaxSafeInteger {
			return &previewError{progress.PreviewTooLarge, "integral number outside the safe range"}
		}
		return c.spend(8)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return &previewError{progress.PreviewUnsupported, "bad number"}
		}
		return c.value(f, depth)
	case []any:
		if len(x) > previewMaxListItems {
			return &previewError{progress.PreviewTooLarge, "list too long"}
		}
		if err := c.spend(16); err != nil {
			return err
		}
		for _, e := range x {
			if c.items++; c.items > previewMaxAggregateItems {
				return &previewError{progress.PreviewTooLarge, "too many items"}
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if len(x) > previewMaxObjectEntries {
			return &previewError{progress.PreviewTooLarge, "too many entries"}
		}
		if err := c.spend(24); err != nil {
			return err
		}
		for _, k := range sortedKeys(x) {
			if len(k) < 1 || len(k) > previewMaxKeyBytes || !utf8.ValidString(k) {
				return &previewError{progress.PreviewTooLarge, "key length"}
			}
			if c.items++; c.items > previewMaxAggregateItems {
				return &previewError{progress.PreviewTooLarge, "too many items"}
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
	return &previewError{progress.PreviewUnsupported, fmt.Sprintf("%T is not a JSON type", v)}
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
