package progress

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/limits"
	"github.com/rayflow/rayflow/sdk/canonical"
	"github.com/rayflow/rayflow/sdk/redact"
)

// metricsOfSize returns a mapping of string values whose canonical object
// is exactly n bytes (n within [2+8*1, 32 keys × 264]).
func metricsOfSize(n int) map[string]any {
	m := map[string]any{}
	// {"k00":"…","k01":"…"}: each entry is len(value)+8 bytes, plus commas.
	keys := (n + 263) / 264
	rest := n - 2 - (keys - 1)
	for i := range keys {
		l := min(256, rest-8*(keys-i))
		l = max(l, 0)
		m[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", l)
		rest -= l + 8
	}
	return m
}

func TestNormalizeMetrics(t *testing.T) {
	prof, pol := limits.MetricsV1, redact.Default
	keys := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%02d", i)] = i
		}
		return m
	}
	for _, n := range []int{4096, 4097} {
		if b, _ := canonical.NoFold.Marshal(metricsOfSize(n)); len(b) != n {
			t.Fatalf("metricsOfSize(%d) is %d bytes", n, len(b))
		}
	}
	big := metricsOfSize(4097)
	bigBytes, _ := canonical.NoFold.Marshal(big)
	cases := []struct {
		name      string
		in        map[string]any
		want      string // canonical output; "" with invalid
		truncated bool
		invalid   bool
	}{
		{name: "nil", in: nil, want: `{}`},
		{name: "scalars", in: map[string]any{"a": nil, "b": true, "c": int64(-9223372036854775808), "d": 2.0, "e": 1.5, "f": "x", "g": uint64(math.MaxInt64), "h": json.Number("7"), "i": float32(0.5)},
			want: `{"a":null,"b":true,"c":-9223372036854775808,"d":2.0,"e":1.5,"f":"x","g":9223372036854775807,"h":7,"i":0.5}`},
		{name: "32 keys", in: keys(32), want: string(must(canonical.NoFold.Marshal(keys(32))))},
		{name: "33 keys", in: keys(33), invalid: true},
		{name: "key 64 bytes", in: map[string]any{strings.Repeat("k", 64): 1}, want: `{"` + strings.Repeat("k", 64) + `":1}`},
		{name: "key 65 bytes", in: map[string]any{strings.Repeat("k", 65): 1}, invalid: true},
		{name: "empty key", in: map[string]any{"": 1}, invalid: true},
		{name: "string 256 bytes", in: map[string]any{"s": strings.Repeat("é", 128)}, want: `{"s":"` + strings.Repeat("é", 128) + `"}`},
		{name: "string 257 bytes", in: map[string]any{"s": strings.Repeat("é", 128) + "x"}, want: `{"s":"<omitted:oversized>"}`, truncated: true},
		{name: "redacted key dropped", in: map[string]any{"api_key": "x", "rows": 3}, want: `{"rows":3}`, truncated: true},
		{name: "redacted string", in: map[string]any{"auth": "Bearer token abc"}, want: `{"auth":"[REDACTED]"}`, truncated: true},
		{name: "object 4096 bytes", in: metricsOfSize(4096), want: string(must(canonical.NoFold.Marshal(metricsOfSize(4096))))},
		{name: "object 4097 bytes", in: big, want: `{"_omitted":"` + canonical.MetricsOmissionMarker(bigBytes)["_omitted"].(string) + `"}`, truncated: true},
		{name: "NaN", in: map[string]any{"x": math.NaN()}, invalid: true},
		{name: "Inf", in: map[string]any{"x": math.Inf(-1)}, invalid: true},
		{name: "uint64 over int64", in: map[string]any{"x": uint64(math.MaxInt64) + 1}, invalid: true},
		{name: "integer literal over int64", in: map[string]any{"x": json.Number("9223372036854775808")}, invalid: true},
		{name: "nested", in: map[string]any{"x": map[string]any{}}, invalid: true},
		{name: "list", in: map[string]any{"x": []any{1}}, invalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, tr, err := normalizeMetrics(tc.in, prof, pol)
			if tc.invalid {
				if !errors.Is(err, ErrInvalidMetrics) {
					t.Fatalf("err = %v, want ErrInvalidMetrics", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := string(must(canonical.NoFold.Marshal(out)))
			if got != tc.want || tr != tc.truncated {
				t.Fatalf("got %s truncated=%v\nwant %s truncated=%v", got, tr, tc.want, tc.truncated)
			}
		})
	}
}

func TestBoundText(t *testing.T) {
	cases := []struct {
		in, want string
		max      int64
		tr       bool
	}{
		{strings.Repeat("m", 2048), strings.Repeat("m", 2048), 2048, false},
		{strings.Repeat("m", 2049), limits.OversizedMarker, 2048, true},
		{strings.Repeat("l", 512), strings.Repeat("l", 512), 512, false},
		{strings.Repeat("l", 513), limits.OversizedMarker, 512, true},
		{"my password is", redact.Marker, 512, true},
		{"\xff", limits.OversizedMarker, 512, true},
	}
	for _, tc := range cases {
		got, tr := boundText(tc.in, tc.max, redact.Default)
		if got != tc.want || tr != tc.tr {
			t.Errorf("boundText(%.20q, %d) = %.20q, %v", tc.in, tc.max, got, tr)
		}
	}
}

func TestRoundPercentAndTimestamps(t *testing.T) {
	for in, want := range map[float64]float64{100: 100, 50: 50, 100.0 / 3: 33.3, 200.0 / 3: 66.7, 0.05: 0.1, 0.25: 0.2, 0.35: 0.3, 99.96: 100} {
		if got := roundPercent(in); got != want {
			t.Errorf("roundPercent(%v) = %v, want %v", in, got, want)
		}
	}
	if got := FormatTimestamp(t0); got != "2026-07-01T12:00:00Z" {
		t.Error(got)
	}
	if got := FormatTimestamp(t0.Add(1500 * 1000)); got != "2026-07-01T12:00:00.001500Z" {
		t.Error(got)
	}
	if got := FormatTimestamp(t0.Add(999)); got != "2026-07-01T12:00:00Z" {
		t.Error(got)
	}
}

func TestSatAdd(t *testing.T) {
	c := int64(math.MaxInt64 - 2)
	if satAdd(&c, 1) || c != math.MaxInt64-1 {
		t.Fatal(c)
	}
	if !satAdd(&c, 5) || c != math.MaxInt64 {
		t.Fatal(c)
	}
	if !satAdd(&c, 1) || c != math.MaxInt64 {
		t.Fatal(c)
	}
}
