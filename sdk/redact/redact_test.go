package redact

import (
	"reflect"
	"testing"
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
	if !changed || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
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
