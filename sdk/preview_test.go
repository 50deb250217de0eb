package sdk

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
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
		want progress.PreviewAvailability
	}
	rows := []row{
		{"depth 4", nestList(4), progress.PreviewAvailable},
		{"depth 5", nestList(5), progress.PreviewTooLarge},
		{"16 list items", listOf(16), progress.PreviewAvailable},
		{"17 list items", listOf(17), progress.PreviewTooLarge},
		{"15 entries", objOf(15), progress.PreviewAvailable},
		{"16 entries", objOf(16), progress.PreviewTooLarge},
		{"key 64 bytes", map[string]any{strings.Repeat("k", 64): 1}, progress.PreviewAvailable},
		{"key 65 bytes", map[string]any{strings.Repeat("k", 65): 1}, progress.PreviewTooLarge},
		{"empty key", map[string]any{"": 1}, progress.PreviewTooLarge},
		{"string 256 bytes", strings.Repeat("s", 256), progress.PreviewAvailable},
		{"string 257 bytes", strings.Repeat("s", 257), progress.PreviewTooLarge},
		{"32 aggregate items", []any{listOf(16), listOf(14)}, progress.PreviewAvailable},
		{"33 aggregate items", []any{listOf(16), listOf(15)}, progress.PreviewTooLarge},
		{"safe integer", int64(1<<53 - 1), progress.PreviewAvailable},
		{"unsafe integer", int64(1 << 53), progress.PreviewTooLarge},
		{"unsafe integral float", float64(1 << 54), progress.PreviewTooLarge},
		{"512 canonical bytes", map[string]any{"a": strings.Repeat("x", 256), "b": strings.Repeat("y", 241)}, progress.PreviewAvailable},
		{"513 canonical bytes", map[string]any{"a": strings.Repeat("x", 256), "b": strings.Repeat("y", 242)}, progress.PreviewTooLarge},
		{"NaN", math.NaN(), progress.PreviewUnsupported},
		{"struct", struct{ A int }{1}, progress.PreviewUnsupported},
		{"bytes", []byte("x"), progress.PreviewUnsupported},
		{"typed slice", []string{"a"}, progress.PreviewUnsupported},
		{"redacted string", map[string]any{"note": "the api_key is 42"}, progress.PreviewRedacted},
		{"redacted key", map[string]any{"Password": "hunter2"}, progress.PreviewRedacted},
		{"plain", map[string]any{"order_id": "A-1", "items": 3, "ok": true, "none": nil}, progress.PreviewAvailable},
	}
	for _, r := range rows {
		env := validatePreview(r.v, nil)
		if env.Availability != r.want || env.SchemaVersion != 1 {
			t.Errorf("%s: %s, want %s", r.name, env.Availability, r.want)
		}
		carries := env.Value != nil
		if wantValue := r.want == progress.PreviewAvailable || r.want == progress.PreviewRedacted; carries != wantValue && r.v != nil {
			t.Errorf("%s: value present %v with status %s", r.name, carries, env.Availability)
		}
		if env.Availability == progress.PreviewRedacted && !strings.Contains(fmtValue(env.Value), "[REDACTED]") {
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
	if err := c.spend(previewMaxDecodedBudget); err != nil {
		t.Fatalf("exactly the budget: %v", err)
	}
	if err := c.spend(1); err == nil {
		t.Fatal("one over the budget was accepted")
	}
}

func TestBuildPreview(t *testing.T) {
	t.Parallel()
	ok := &flowgraph.Preview{Project: func(v any) (any, error) { return map[string]any{"n": v}, nil }}
	if env := buildPreview(ok, 3, nil); env.Availability != progress.PreviewAvailable {
		t.Fatalf("%+v", env)
	}
	failing := &flowgraph.Preview{Project: func(any) (any, error) { return nil, errors.New("no") }}
	if env := buildPreview(failing, 3, nil); env.Availability != progress.PreviewFailed || env.Value != nil {
		t.Fatalf("%+v", env)
	}
	panicking := &flowgraph.Preview{Project: func(any) (any, error) { panic("boom") }}
	if env := buildPreview(panicking, 3, nil); env.Availability != progress.PreviewFailed {
		t.Fatalf("%+v", env)
	}
	if env := buildPreview(nil, 3, nil); env.Availability != progress.PreviewNotRequested {
		t.Fatalf("%+v", env)
	}
}

func marshalForTest(v any) ([]byte, error) { return canonical.NoFold.Marshal(v) }
