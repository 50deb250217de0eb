package redact

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Marker replaces redacted text.
const Marker = "[REDACTED]"

// Markers of bounded work (docs/contracts.md#redaction).
const (
	MaxDepthMarker = "<max-depth>"
	BudgetKey      = "<redacted>"
)

// DefaultPatterns are always on (docs/contracts.md#redaction).
var DefaultPatterns = []string{
	`password`, `passwd`, `secret`, `token`, `api[_-]?key`, `authorization`, `cookie`, `credential`, `private[_-]?key`,
}

// Limits of configured patterns and of the work per value (docs/contracts.md#redaction).
const (
	MaxPatterns        = 64
	MaxPrograms        = 80
	MaxPatternBytes    = 256
	MaxConfigBytes     = 4096
	MaxRepeat          = 128
	MaxGroupDepth      = 32
	MaxDepth           = 20
	MaxRootItems       = 4096
	MaxRootRunes       = 65536
	MaxTextRunes       = 64 << 10
	allowedEscapeChars = "dDsSwWabfnrtv0xuUN"
)

// Policy is a compiled set of patterns.
type Policy struct {
	re *regexp.Regexp
}

// New compiles the default patterns plus extra ones. Only a portable
// subset is accepted: no anchors or word boundaries, no flags, no named or
// special groups (only "(?:"), no backreferences, no alphabetic escapes
// other than \d \D \s \S \w \W \a \b \f \n \r \t \v \0 \x \u \U \N,
// repeat counts ≤ 128 and group nesting ≤ 32.
func New(extra ...string) (*Policy, error) {
	if len(extra) > MaxPatterns || len(extra)+len(DefaultPatterns) > MaxPrograms {
		return nil, fmt.Errorf("redact: %d patterns, at most %d", len(extra), MaxPatterns)
	}
	total := 0
	for _, p := range extra {
		total += len(p)
		if err := checkPattern(p); err != nil {
			return nil, err
		}
	}
	if total > MaxConfigBytes {
		return nil, fmt.Errorf("redact: %d configured pattern bytes, at most %d", total, MaxConfigBytes)
	}
	all := append(append([]string(nil), DefaultPatterns...), extra...)
	return &Policy{re: regexp.MustCompile(`(?i)(?:` + strings.Join(all, ")|(?:") + `)`)}, nil
}

func checkPattern(p string) error {
	if len(p) == 0 || len(p) > MaxPatternBytes {
		return fmt.Errorf("redact: pattern %q must be 1..%d bytes", p, MaxPatternBytes)
	}
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			c := p[i+1]
			if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && !strings.ContainsRune(allowedEscapeChars, rune(c)) {
				return fmt.Errorf("redact: pattern %q: escape \\%c is not supported", p, c)
			}
			if c >= '1' && c <= '9' {
				return fmt.Errorf("redact: pattern %q: backreferences are not supported", p)
			}
			i++
		case p[i] == '(' && i+1 < len(p) && p[i+1] == '?' && !strings.HasPrefix(p[i:], "(?:"):
			return fmt.Errorf("redact: pattern %q: only (?: groups are supported (no flags, names or lookaround)", p)
		case p[i] == '^' || p[i] == '$':
			if i > 0 && p[i-1] == '[' && p[i] == '^' {
				continue // a negated class, not an anchor
			}
			return fmt.Errorf("redact: pattern %q: anchors are not supported", p)
		}
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return fmt.Errorf("redact: pattern %q: %w", p, err)
	}
	return checkTree(p, re, 0)
}

func checkTree(p string, re *syntax.Regexp, depth int) error {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return fmt.Errorf("redact: pattern %q: anchors are not supported", p)
	case syntax.OpRepeat:
		if re.Max > MaxRepeat || re.Min > MaxRepeat {
			return fmt.Errorf("redact: pattern %q: repeat counts over %d are not supported", p, MaxRepeat)
		}
	case syntax.OpCapture:
		if depth++; depth > MaxGroupDepth {
			return fmt.Errorf("redact: pattern %q: groups nest deeper than %d", p, MaxGroupDepth)
		}
	}
	for _, s := range re.Sub {
		if err := checkTree(p, s, depth); err != nil {
			return err
		}
	}
	return nil
}

// Default is the policy of DefaultPatterns alone.
var Default, _ = New()

// Matches reports whether s contains sensitive text, as written or once
// terminal formatting is removed.
func (p *Policy) Matches(s string) bool {
	if p.re.MatchString(s) {
		return true
	}
	if n := Normalize(s); n != s {
		return p.re.MatchString(n)
	}
	return false
}

// Normalize removes terminal formatting: ANSI CSI, OSC and DCS escape
// sequences, C0 and C1 control characters and format (Cf) characters such
// as zero-width spaces and joiners. Tabs and newlines become spaces.
func Normalize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b && i+1 < len(s):
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r < 0x20 || r >= 0x7f && r < 0xa0 || unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s (ESC).
func escapeLen(s string) int {
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		return 2 + csiLen(s[2:])
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ST (ESC \)
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	return 2 // a two-byte escape
}

func csiLen(s string) int {
	for j := 0; j < len(s); j++ {
		if s[j] >= 0x40 && s[j] <= 0x7e {
			return j + 1
		}
	}
	return len(s)
}

// budget tracks the work spent on one root value.
type budget struct {
	items, runes int
	over         bool
}

// Value returns v with every matching string replaced by Marker and the
// value of every matching key replaced by Marker, and whether anything
// changed. v must hold only JSON types (nil, bool, numbers, string, []any,
// map[string]any); other values are returned unchanged.
func (p *Policy) Value(v any) (any, bool) {
	var b budget
	return p.value(v, 0, &b)
}

func (p *Policy) value(v any, depth int, b *budget) (any, bool) {
	if depth > MaxDepth {
		return MaxDepthMarker, true
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if b.runes += n; n > MaxTextRunes || b.runes > MaxRootRunes {
			b.over = true
			return Marker, true
		}
		if p.Matches(x) {
			return Marker, true
		}
		return x, false
	case []any:
		if b.items += len(x); b.items > MaxRootItems {
			b.over = true
			return []any{Marker}, true
		}
		out, changed := make([]any, len(x)), false
		for i, e := range x {
			var c bool
			out[i], c = p.value(e, depth+1, b)
			changed = changed || c
			if b.over {
				return []any{Marker}, true
			}
		}
		return out, changed
	case map[string]any:
		if b.items += len(x); b.items > MaxRootItems {
			b.over = true
			return map[string]any{BudgetKey: Marker}, true
		}
		out, changed := make(map[string]any, len(x)), false
		for k, e := range x {
			if b.runes += utf8.RuneCountInString(k); b.runes > MaxRootRunes {
				b.over = true
			}
			if b.over {
				return map[string]any{BudgetKey: Marker}, true
			}
			if p.Matches(k) {
				out[k], changed = Marker, true
				continue
			}
			var c bool
			out[k], c = p.value(e, depth+1, b)
			changed = changed || c
			if b.over {
				return map[string]any{BudgetKey: Marker}, true
			}
		}
		return out, changed
	}
	return v, false
}
