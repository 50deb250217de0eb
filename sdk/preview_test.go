package sdk

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

func nestList(depth int) any {
	var v any = 1
	for range depth {
		v = []any{v}
	}
	return v
}

func listOf(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = i
	}
	return l
}

func objOf(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[string(rune('a'+i%26))+strings.Repeat("k", i/26)] = i
	}
	return m
}

func TestValidatePreviewEdges(t *testing.T) {
	t.Parallel()
	type row struct {
		name string
		v    any
		want PreviewAvailability
	}
	rows := []row{
		{"depth 4", nestList(4), PreviewAvailable},
		{"depth 5", nestList(5), PreviewTooLarge},
		{"16 list items", listOf(16), PreviewAvailable},
		{"17 list items", listOf(17), PreviewTooLarge},
		{"15 entries", objOf(15), PreviewAvailable},
		{"16 entries", objOf(16), PreviewTooLarge},
		{"key 64 bytes", map[string]any{strings.Repeat("k", 64): 1}, PreviewAvailable},
		{"key 65 bytes", map[string]any{strings.Repeat("k", 65): 1}, PreviewTooLarge},
		{"empty key", map[string]any{"": 1}, PreviewTooLarge},
		{"string 256 bytes", strings.Repeat("s", 256), PreviewAvailable},
		{"string 257 bytes", strings.Repeat("s", 257), PreviewTooLarge},
		{"32 aggregate items", []any{listOf(16), listOf(14)}, PreviewAvailable},
		{"33 aggregate items", []any{listOf(16), listOf(15)}, PreviewTooLarge},
		{"safe integer", int64(1<<53 - 1), PreviewAvailable},
		{"unsafe integer", int64(1 << 53), PreviewTooLarge},
		{"unsafe integral float", float64(1 << 54), PreviewTooLarge},
		{"512 canonical bytes", map[string]any{"a": strings.Repeat("x", 256), "b": strings.Repeat("y", 241)}, PreviewAvailable},
		{"513 canonical bytes", map[string]any{"a": strings.Repeat("x", 256), "b": strings.Repeat("y", 242)}, PreviewTooLarge},
		{"NaN", math.NaN(), PreviewUnsupported},
		{"struct", struct{ A int }{1}, PreviewUnsupported},
		{"bytes", []byte("x"), PreviewUnsupported},
		{"typed slice", []string{"a"}, PreviewUnsupported},
		{"redacted string", map[string]any{"note": "the api_key is 42"}, PreviewRedacted},
		{"redacted key", map[string]any{"Password": "hunter2"}, PreviewRedacted},
		{"plain", map[string]any{"order_id": "A-1", "items": 3, "ok": true, "none": nil}, PreviewAvailable},
	}
	for _, r := range rows {
		env := validatePreview(r.v, nil)
		if env.Availability != r.want || env.SchemaVersion != 1 {
			t.Errorf("%s: %s, want %s", r.name, env.Availability, r.want)
		}
		carries := env.Value != nil
		if wantValue := r.want == PreviewAvailable || r.want == PreviewRedacted; carries != wantValue && r.v != nil {
			t.Errorf("%s: value present %v with status %s", r.name, carries, env.Availability)
		}
		if env.Availability == PreviewRedacted && !strings.Contains(fmtValue(env.Value), "[REDACTED]") {
			t.Errorf("%s: REDACTED without the marker: %v", r.name, env.Value)
		}
		// Every envelope satisfies the schema's preview envelope (gen/detail).
		b, err := canonical.NoFold.Marshal(env)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if _, err := detail.DecodeOutputPreview(b); err != nil {
			t.Errorf("%s: envelope %s fails the schema: %v", r.name, b, err)
		}
	}
}

func fmtValue(v any) string {
	b, _ := marshalForTest(v)
	return string(b)
}

func TestPreviewBudgetEdge(t *testing.T) {
	t.Parallel()
	var c previewCheck
	if err := c.spend(PreviewMaxDecodedBudget); err != nil {
		t.Fatalf("exactly the budget: %v", err)
	}
	if err := c.spend(1); err == nil {
		t.Fatal("one over the budget was accepted")
	}
}

func TestBuildPreview(t *testing.T) {
	t.Parallel()
	ok := &flowgraph.Preview{Project: func(v any) (any, error) { return map[string]any{"n": v}, nil }}
	if env := buildPreview(ok, 3, nil); env.Availability != PreviewAvailable {
		t.Fatalf("%+v", env)
	}
	failing := &flowgraph.Preview{Project: func(any) (any, error) { return nil, errors.New("no") }}
	if env := buildPreview(failing, 3, nil); env.Availability != PreviewFailed || env.Value != nil {
		t.Fatalf("%+v", env)
	}
	panicking := &flowgraph.Preview{Project: func(any) (any, error) { panic("boom") }}
	if env := buildPreview(panicking, 3, nil); env.Availability != PreviewFailed {
		t.Fatalf("%+v", env)
	}
	if env := buildPreview(nil, 3, nil); env.Availability != PreviewNotRequested {
		t.Fatalf("%+v", env)
	}
}

func marshalForTest(v any) ([]byte, error) { return canonical.NoFold.Marshal(v) }
