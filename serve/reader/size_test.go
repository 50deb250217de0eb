package reader

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// texts covers what changes the measured size: quotes and backslashes,
// C0 controls, DEL, 2-, 3- and 4-byte UTF-8 (an astral code point is a
// surrogate pair), U+2028, separators inside strings.
var texts = []string{"", "plain", `q"uote\back`, "ctl\x01\n\t\x1f", "del\x7f", "é ß", "€ \u2028 \u2029", "astral 😀 𝄞",
	"sep, : {}[]", strings.Repeat("x", 300), "mixed é\x7f😀\"\\,:"}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(4) {
		b.WriteString(texts[r.IntN(len(texts))])
	}
	return b.String()
}

// TestSpacedASCIISize: measuring the stored canonical text in one pass
// gives exactly canonical.ASCIISize of the decoded record, for topology
// nodes, edges and node details with every kind of character, and
// splitRecords cuts a stored page into exactly its records.
func TestSpacedASCIISize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var raws []string
		for i := range 1 + r.IntN(20) {
			path := randomText(r)
			env := map[string]json.RawMessage{}
			if r.IntN(2) == 0 {
				b, _ := json.Marshal(map[string]any{"k": randomText(r), "n": []any{1.5, 2, map[string]string{"é": randomText(r)}}})
				env["pip"] = b
			}
			n := topology.Node{NodeID: fmt.Sprintf("n%03d %s", i, randomText(r)), Kind: topology.NodeKindTask, Label: randomText(r),
				CallablePath: &path, RuntimeEnv: env, RayOptions: map[string]json.RawMessage{}}
			raw, err := canonical.NoFold.Marshal(&n)
			if err != nil {
				t.Fatal(err)
			}
			want, err := canonical.ASCIISize(&n, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := spacedASCIISize(raw); got != want {
				t.Fatalf("trial %d: node %s: %d, want %d", trial, raw, got, want)
			}
			raws = append(raws, string(raw))
		}
		page := []byte(`{"collection":"NODE","records":[` + strings.Join(raws, ",") + `],"schema_version":1}`)
		split, ok := splitRecords(page, "NODE")
		if !ok || len(split) != len(raws) {
			t.Fatalf("trial %d: split into %d records (%v), want %d", trial, len(split), ok, len(raws))
		}
		for i := range split {
			if string(split[i]) != raws[i] {
				t.Fatalf("trial %d: record %d %s, want %s", trial, i, split[i], raws[i])
			}
		}
		e := topology.Edge{Source: randomText(r), Target: randomText(r)}
		raw, _ := canonical.NoFold.Marshal(&e)
		if want, _ := canonical.ASCIISize(&e, true); spacedASCIISize(raw) != want {
			t.Fatalf("edge %s: %d, want %d", raw, spacedASCIISize(raw), want)
		}
		msg := randomText(r)
		d := detail.NodeDetail{SchemaVersion: 2, NodeID: randomText(r), State: detail.NodeStateRunning, Error: &msg,
			RecentEvents:  []detail.NodeRecentEvent{{Event: "node_started", Label: randomText(r), State: detail.NodeStateRunning, Timestamp: "2026-01-01T00:00:00.000000Z"}},
			OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: []byte("null")}}
		raw, err := canonical.NoFold.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := canonical.ASCIISize(&d, true); spacedASCIISize(raw) != want {
			t.Fatalf("detail %s: %d, want %d", raw, spacedASCIISize(raw), want)
		}
	}
	for _, bad := range []string{`{"collection":"EDGE","records":[{}],"schema_version":1}`, `{"collection":"NODE","records":[],"schema_version":1}`,
		`{"collection":"NODE","records":[{"a":"]"}}],"schema_version":1}`, `{"collection":"NODE","records":[{"a":"x],"schema_version":1}`} {
		if recs, ok := splitRecords([]byte(bad), "NODE"); ok {
			t.Errorf("%s split into %q", bad, recs)
		}
	}
}
