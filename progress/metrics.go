package progress

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/redact"
)

// ErrInvalidMetrics is wrapped by normalizeMetrics for a mapping that cannot
// be bounded: too many keys, a key outside 1–64 UTF-8 bytes, or a value that
// is not null, bool, an int64, a finite float or a string.
var ErrInvalidMetrics = errors.New("progress: invalid metrics")

// normalizeMetrics validates, redacts and bounds an application metrics
// mapping (docs/contracts.md#metrics-and-metadata, docs/contracts.md#redaction) and returns it as canonical raw values
// ready for an application_progress payload:
//
//   - more than prof.Keys keys, a key outside 1..prof.KeyBytes UTF-8 bytes,
//     or a value of another type (containers, NaN, ±Inf, integers outside
//     int64) is invalid: the whole mapping is refused (ErrInvalidMetrics);
//   - a key matching the redaction policy is dropped; a string matching it
//     becomes redact.Marker;
//   - a string over prof.StringBytes bytes (or not valid UTF-8) becomes
//     limits.OversizedMarker;
//   - a canonical object over prof.CanonicalBytes becomes
//     {"_omitted":"sha256:<hex of those canonical bytes>"}.
//
// truncated reports whether any of the last three happened. A nil or empty
// mapping yields an empty, non-nil map.
func normalizeMetrics(in map[string]any, prof limits.MetricsProfile, pol *redact.Policy) (out map[string]json.RawMessage, truncated bool, err error) {
	if int64(len(in)) > prof.Keys {
		return nil, false, fmt.Errorf("%w: %d keys, at most %d", ErrInvalidMetrics, len(in), prof.Keys)
	}
	out = make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		if int64(len(k)) < prof.KeyMinBytes || int64(len(k)) > prof.KeyBytes || !utf8.ValidString(k) {
			return nil, false, fmt.Errorf("%w: key %q must be %d-%d UTF-8 bytes", ErrInvalidMetrics, k, prof.KeyMinBytes, prof.KeyBytes)
		}
		raw, t, err := metricValue(v, prof, pol)
		if err != nil {
			return nil, false, fmt.Errorf("%w: key %q: %v", ErrInvalidMetrics, k, err)
		}
		if pol != nil && pol.Matches(k) {
			truncated = true // the key and its value are dropped
			continue
		}
		truncated = truncated || t
		out[k] = raw
	}
	b, err := canonical.NoFold.Marshal(out)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrInvalidMetrics, err)
	}
	if int64(len(b)) > prof.CanonicalBytes {
		m := canonical.MetricsOmissionMarker(b)
		return map[string]json.RawMessage{"_omitted": json.RawMessage(strconv.Quote(m["_omitted"].(string)))}, true, nil
	}
	return out, truncated, nil
}

// metricValue encodes one scalar metric value canonically.
func metricValue(v any, prof limits.MetricsProfile, pol *redact.Policy) (json.RawMessage, bool, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), false, nil
	case bool:
		if x {
			return json.RawMessage("true"), false, nil
		}
		return json.RawMessage("false"), false, nil
	case string:
		s, t := boundText(x, prof.StringBytes, pol)
		b, err := canonical.NoFold.Marshal(s)
		return b, t, err
	case int:
		return strconv.AppendInt(nil, int64(x), 10), false, nil
	case int8:
		return strconv.AppendInt(nil, int64(x), 10), false, nil
	case int16:
		return strconv.AppendInt(nil, int64(x), 10), false, nil
	case int32:
		return strconv.AppendInt(nil, int64(x), 10), false, nil
	case int64:
		return strconv.AppendInt(nil, x, 10), false, nil
	case uint:
		return uintValue(uint64(x))
	case uint8:
		return uintValue(uint64(x))
	case uint16:
		return uintValue(uint64(x))
	case uint32:
		return uintValue(uint64(x))
	case uint64:
		return uintValue(x)
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return strconv.AppendInt(nil, i, 10), false, nil
		}
		if f, err := x.Float64(); err == nil && !isIntLiteral(string(x)) {
			return floatValue(f)
		}
		return nil, false, fmt.Errorf("number %s is outside int64 or not finite", x)
	}
	return nil, false, fmt.Errorf("unsupported value type %T", v)
}

func uintValue(u uint64) (json.RawMessage, bool, error) {
	if u > math.MaxInt64 {
		return nil, false, fmt.Errorf("integer %d is outside int64", u)
	}
	return strconv.AppendUint(nil, u, 10), false, nil
}

func floatValue(f float64) (json.RawMessage, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false, errors.New("float is not finite")
	}
	b, err := canonical.NoFold.Marshal(f)
	return b, false, err
}

func isIntLiteral(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
