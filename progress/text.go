package progress

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/sdk/redact"
)

// FormatTimestamp returns the canonical UTC timestamp of t (docs/contracts.md#summary-v3):
// YYYY-MM-DDTHH:MM:SSZ, or with six fractional digits when the microseconds
// are not zero. Sub-microsecond precision is truncated, as Python's datetime
// holds microseconds.
func FormatTimestamp(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// parseTimestamp parses a canonical timestamp (the decoder checked its form).
func parseTimestamp(s string) (time.Time, bool) {
	t, err := time.ParseInLocation(time.RFC3339Nano, s, time.UTC)
	return t, err == nil
}

// epochSeconds is t as Unix seconds with microsecond precision, the
// schema-v2 snapshot's epoch float.
func epochSeconds(t time.Time) float64 {
	us := t.UnixMicro()
	return float64(us/1e6) + float64(us%1e6)/1e6
}

// boundText bounds descriptive text (a label or a progress message): text
// that matches the redaction policy becomes redact.Marker, text longer than
// maxBytes UTF-8 bytes (or not valid UTF-8) becomes limits.OversizedMarker;
// either sets truncated.
func boundText(s string, maxBytes int64, pol *redact.Policy) (out string, truncated bool) {
	if int64(len(s)) > maxBytes || !utf8.ValidString(s) {
		return limits.OversizedMarker, true
	}
	if pol != nil && pol.Matches(s) {
		return redact.Marker, true
	}
	return s, false
}

// identityText checks identity-like text (node ids, Ray ids): non-empty,
// within maxBytes, valid UTF-8 and unchanged by redaction (docs/contracts.md#live-events).
func identityText(s string, maxBytes int64, pol *redact.Policy) bool {
	return s != "" && int64(len(s)) <= maxBytes && utf8.ValidString(s) && (pol == nil || !pol.Matches(s))
}

// roundPercent is Python's round(x, 1): the correctly rounded one-decimal
// value of the binary double (ties to even on the exact value).
func roundPercent(x float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 1, 64), 64)
	return f
}

// satAdd adds non-negative d to *c, sticking at 2^63-1; it reports whether
// the counter is saturated.
func satAdd(c *int64, d int64) bool {
	const maxInt = 1<<63 - 1
	if d < 0 {
		return false
	}
	if *c > maxInt-d {
		*c = maxInt
		return true
	}
	*c += d
	return *c == maxInt
}
