package redact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValue(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"order":       "A-1",
		"Api-Key":     "k",
		"note":        "my PASSWORD is x",
		"items":       []any{"ok", "bearer Token abc", 3.5, nil},
		"nested":      map[string]any{"authorization": map[string]any{"x": 1}},
		"credentials": true,
	}
	got, changed := Default.Value(in)
	want := map[string]any{
		"order": "A-1", "Api-Key": Marker, "note": Marker,
		"items": []any{"ok", Marker, 3.5, nil}, "nested": map[string]any{"authorization": Marker}, "credentials": Marker,
	}
	if !changed {
		t.Error("changed = false, want true")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("redacted (-want +got):\n%s", diff)
	}
	if _, changed := Default.Value(map[string]any{"a": "fine"}); changed {
		t.Fatal("clean value reported as redacted")
	}
}

func TestNewLimits(t *testing.T) {
	t.Parallel()
	if _, err := New("^anchored"); err == nil {
		t.Fatal("anchors must be rejected")
	}
	if _, err := New("(?i)flags"); err == nil {
		t.Fatal("flags must be rejected")
	}
	p, err := New("internal[-_]id")
	if err != nil || !p.Matches("INTERNAL-ID 7") {
		t.Fatalf("extra pattern: %v", err)
	}
	many := make([]string, MaxPatterns+1)
	for i := range many {
		many[i] = "x"
	}
	if _, err := New(many[:MaxPatterns]...); err != nil {
		t.Fatalf("%d patterns must be accepted: %v", MaxPatterns, err)
	}
	if _, err := New(many...); err == nil {
		t.Fatalf("%d patterns must be rejected", MaxPatterns+1)
	}
}

func TestTerminalFormattingCannotHideATerm(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"pass\x1b[31mword",           // CSI color inside the word
		"to\u200bken",                // zero-width space
		"se\x1b]0;title\x07cret",     // OSC
		"api\x1bP1$r\x1b\\_key",      // DCS
		"cook\u0085ie",               // C1 control
		"cred\u009b1mential",         // C1 CSI
		"author\u2060ization header", // word joiner
	} {
		if !Default.Matches(s) {
			t.Errorf("%q was not redacted", s)
		}
	}
	if Default.Matches("plain \x1b[1mbold\x1b[0m text") {
		t.Error("formatting alone must not redact")
	}
	if got := Normalize("a\x1b[2Jb\tc\u200dd"); got != "ab cd" {
		t.Errorf("Normalize = %q", got)
	}
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	deep := any("leaf")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	got, changed := Default.Value(deep)
	for range MaxDepth {
		got = got.([]any)[0]
	}
	if diff := cmp.Diff([]any{MaxDepthMarker}, got); !changed || diff != "" {
		t.Fatalf("depth %d: changed %v (-want +got):\n%s", MaxDepth+1, changed, diff)
	}
	items := make([]any, MaxRootItems)
	if _, changed := Default.Value(items); changed {
		t.Fatalf("exactly %d items must pass", MaxRootItems)
	}
	got, _ = Default.Value(append(items, nil))
	if diff := cmp.Diff([]any{Marker}, got); diff != "" {
		t.Fatalf("%d items (-want +got):\n%s", MaxRootItems+1, diff)
	}
	long := strings.Repeat("a", MaxTextRunes)
	if got, _ := Default.Value(long); got != long {
		t.Fatal("a text exactly at the cap must pass")
	}
	if got, _ := Default.Value(long + "a"); got != Marker {
		t.Fatal("a text over the cap must be replaced")
	}
	got, _ = Default.Value(map[string]any{"a": long, "b": "x"})
	if diff := cmp.Diff(map[string]any{BudgetKey: Marker}, got); diff != "" {
		t.Fatalf("root character budget (-want +got):\n%s", diff)
	}
}

func TestPatternSyntax(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`\bword`, `(?i)x`, `(?P<n>x)`, `(?=x)`, `a{129}`, `\1`, `\p{L}`, `x$`, `\Aabc`} {
		if _, err := New(bad); err == nil {
			t.Errorf("%q must be rejected", bad)
		}
	}
	for _, ok := range []string{`a{128}`, `[^a-z]+`, `(?:ab)+`, `\d{3}-\w+`, `x\.y`} {
		if _, err := New(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	nested := strings.Repeat("(", MaxGroupDepth) + "x" + strings.Repeat(")", MaxGroupDepth)
	if _, err := New(nested); err != nil {
		t.Errorf("%d nested groups: %v", MaxGroupDepth, err)
	}
	if _, err := New("(" + nested + ")"); err == nil {
		t.Errorf("%d nested groups must be rejected", MaxGroupDepth+1)
	}
}
