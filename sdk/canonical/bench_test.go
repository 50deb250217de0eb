package canonical

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchNode and benchPlan mimic the effective plan IR's shape: typed
// structs, small maps, lists of identifiers, a few floats.
type benchNode struct {
	NodeID       string            `json:"node_id"`
	Operation    string            `json:"operation"`
	Callable     *int              `json:"callable"`
	Dependencies []string          `json:"dependencies"`
	Label        string            `json:"label"`
	RayOptions   map[string]any    `json:"ray_options"`
	Labels       map[string]string `json:"labels"`
	RetrySafety  string            `json:"retry_safety"`
	Environment  *string           `json:"runtime_env"`
	Description  string            `json:"description"`
}

type benchPlan struct {
	PlanFormat        string      `json:"plan_format"`
	PlanFormatVersion int         `json:"plan_format_version"`
	DefinitionName    string      `json:"definition_name"`
	Callables         []string    `json:"callables"`
	Nodes             []benchNode `json:"nodes"`
	Edges             [][2]string `json:"edges"`
	Capabilities      map[string]bool
}

func makeBenchPlan() benchPlan {
	p := benchPlan{PlanFormat: "rayflow.workflow-plan", PlanFormatVersion: 1, DefinitionName: "bench", Capabilities: map[string]bool{"dynamic_map": true, "compiled_graph": false}}
	for i := range 16 {
		p.Callables = append(p.Callables, fmt.Sprintf("example.com/bench/steps.Step%02d", i))
	}
	env := "sha256:" + strings.Repeat("ab", 32)
	for i := range 64 {
		c := i % 16
		n := benchNode{
			NodeID: fmt.Sprintf("0.%d", i), Operation: "step", Callable: &c, Label: fmt.Sprintf("step number %d", i),
			RayOptions:  map[string]any{"num_cpus": 1.0, "num_gpus": 0.25, "max_retries": 3, "memory": 512 << 20, "scheduling_strategy": "SPREAD", "resources": map[string]any{"accel": 1.0}},
			Labels:      map[string]string{"team": "data", "tier": "gold", "stage": fmt.Sprintf("s%d", i%4)},
			RetrySafety: "idempotent", Environment: &env,
			Description: strings.Repeat("Bounded fan-out of cheap observable tasks. ", 14),
		}
		if i > 0 {
			n.Dependencies = []string{fmt.Sprintf("0.%d", i-1)}
			p.Edges = append(p.Edges, [2]string{fmt.Sprintf("0.%d", i-1), n.NodeID})
		}
		p.Nodes = append(p.Nodes, n)
	}
	return p
}

// makeMixed returns ~size bytes of mixed JSON as decoded Go values, within
// the V1 caps: objects of strings (some non-ASCII), ints, floats, bools.
func makeMixed(size int) any {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "Grüße", "naïve", "東京", "😀 ok", "line\nbreak", "quote\"d"}
	var rows []any
	total := 0
	for total < size {
		row := map[string]any{}
		for j := range 24 {
			var v any
			switch j % 6 {
			case 0:
				v = words[r.IntN(len(words))] + strings.Repeat(" filler", r.IntN(8))
			case 1:
				v = r.Int64N(1 << 40)
			case 2:
				v = r.Float64() * 1000
			case 3:
				v = float64(r.IntN(1000))
			case 4:
				v = r.IntN(2) == 0
			case 5:
				v = []any{words[r.IntN(len(words))], r.Float64(), nil}
			}
			row[fmt.Sprintf("field_%02d", j)] = v
		}
		b, _ := json.Marshal(row)
		total += len(b)
		rows = append(rows, row)
	}
	var chunks []any
	for len(rows) > 0 {
		n := min(len(rows), 256)
		chunks = append(chunks, map[string]any{"rows": rows[:n]})
		rows = rows[n:]
	}
	return map[string]any{"chunks": chunks}
}

func benchValue(b *testing.B, v any) {
	canon, err := Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	text, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("canonical+fingerprint", func(b *testing.B) {
		b.SetBytes(int64(len(canon)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := Fingerprint(DomainPlan, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("canonical", func(b *testing.B) {
		b.SetBytes(int64(len(canon)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transform-text+fingerprint", func(b *testing.B) {
		b.SetBytes(int64(len(canon)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := Transform(text)
			if err != nil {
				b.Fatal(err)
			}
			DomainPlan.Sum(out)
		}
	})
	b.Run("encoding-json.Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(canon)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(canon)))
		b.ReportAllocs()
		for b.Loop() {
			sha256.Sum256(canon)
		}
	})
}

// BenchmarkPlan64 compares canonicalize+fingerprint of a 64-node plan value
// (~64 KiB canonical) with encoding/json.Marshal and raw SHA-256.
func BenchmarkPlan64(b *testing.B) { benchValue(b, makeBenchPlan()) }

// BenchmarkMixed1MiB does the same for ~1 MiB of mixed decoded JSON.
func BenchmarkMixed1MiB(b *testing.B) { benchValue(b, makeMixed(1<<20)) }

func TestBenchValuesAreRepresentative(t *testing.T) {
	t.Parallel()
	plan, err := Marshal(makeBenchPlan())
	if err != nil || len(plan) < 56<<10 || len(plan) > 72<<10 {
		t.Fatalf("plan value is %d bytes (%v), want ~64 KiB", len(plan), err)
	}
	mixed, err := Marshal(makeMixed(1 << 20))
	if err != nil || len(mixed) < 1<<20 || len(mixed) > 1<<20+64<<10 {
		t.Fatalf("mixed value is %d bytes (%v), want ~1 MiB", len(mixed), err)
	}
}
