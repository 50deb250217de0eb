// Package redact replaces sensitive text in operator-facing values (output
// previews, progress messages and metrics) before they leave a leaf.
//
// Matching is a case-insensitive search anywhere in the text; a matching
// string is replaced entirely by Marker and a matching mapping key redacts
// its value. It is defense in depth, not an authorization or encryption
// boundary: never put credentials in previews in the first place.
package redact

import (
	"fmt"
	"regexp"
	"strings"
)

// Marker replaces redacted text.
const Marker = "[REDACTED]"

// DefaultPatterns are always on (CONTRACTS §6.5).
var DefaultPatterns = []string{
	`password`, `passwd`, `secret`, `token`, `api[_-]?key`, `authorization`, `cookie`, `credential`, `private[_-]?key`,
}

// Limits of configured patterns.
const (
	MaxPatterns     = 64
	MaxPatternBytes = 256
	MaxConfigBytes  = 4096
)

// Policy is a compiled set of patterns.
type Policy struct {
	re *regexp.Regexp
}

// New compiles the default patterns plus extra ones. Anchors, lookaround,
// backreferences and flags are not part of the supported syntax.
func New(extra ...string) (*Policy, error) {
	if len(extra) > MaxPatterns {
		return nil, fmt.Errorf("redact: %d patterns, at most %d", len(extra), MaxPatterns)
	}
	total := 0
	for _, p := range extra {
		total += len(p)
		if len(p) == 0 || len(p) > MaxPatternBytes {
			return nil, fmt.Errorf("redact: pattern %q must be 1..%d bytes", p, MaxPatternBytes)
		}
		if strings.ContainsAny(p, "^$") || strings.Contains(p, `\b`) || strings.Contains(p, `\A`) || strings.Contains(p, `\z`) || strings.Contains(p, "(?") && !strings.Contains(p, "(?:") {
			return nil, fmt.Errorf("redact: pattern %q uses unsupported syntax (anchors, flags or special groups)", p)
		}
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("redact: pattern %q: %w", p, err)
		}
	}
	if total > MaxConfigBytes {
		return nil, fmt.Errorf("redact: %d configured pattern bytes, at most %d", total, MaxConfigBytes)
	}
	all := append(append([]string(nil), DefaultPatterns...), extra...)
	return &Policy{re: regexp.MustCompile(`(?i)(?:` + strings.Join(all, ")|(?:") + `)`)}, nil
}

// Default is the policy of DefaultPatterns alone.
var Default, _ = New()

// Matches reports whether s contains sensitive text.
func (p *Policy) Matches(s string) bool { return p.re.MatchString(s) }

// Value returns v with every matching string replaced by Marker and the
// value of every matching key replaced by Marker, and whether anything
// changed. v must hold only JSON types (nil, bool, numbers, string, []any,
// map[string]any); other values are returned unchanged.
func (p *Policy) Value(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if p.Matches(x) {
			return Marker, true
		}
		return x, false
	case []any:
		out, changed := make([]any, len(x)), false
		for i, e := range x {
			var c bool
			out[i], c = p.Value(e)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		out, changed := make(map[string]any, len(x)), false
		for k, e := range x {
			if p.Matches(k) {
				out[k], changed = Marker, true
				continue
			}
			var c bool
			out[k], c = p.Value(e)
			changed = changed || c
		}
		return out, changed
	}
	return v, false
}
