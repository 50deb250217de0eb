package schema_test

import (
	"os"
	"testing"

	"github.com/rayflow/rayflow/gen/registry"
)

// BenchmarkDecodeValidate compares, in one run, the generated strict decoder
// (decode + validate) with CUE's evaluator (JSON extract + unify + concrete
// validate) on the same inputs.
func BenchmarkDecodeValidate(b *testing.B) {
	inputs := []struct{ name, def, path string }{
		{"summary-compact", "Summary", "testdata/valid/Summary/base.json"},
		{"summary-16KiB", "Summary", "testdata/valid/Summary/bytes_at_cap.json"},
		{"lifecycle-64-outputs", "LifecycleSnapshot", "testdata/valid/LifecycleSnapshot/outputs_at_cap.json"},
		{"plan-64-nodes", "Plan", "testdata/valid/Plan/nodes_at_cap.json"},
		{"topology-page-256-nodes", "TopologyPage", "testdata/valid/TopologyPage/nodes_at_cap.json"},
		{"node-detail", "NodeDetail", "testdata/valid/NodeDetail/base.json"},
		{"event-edges-32", "Event", "testdata/valid/Event/edges_at_cap.json"},
		{"read-page-256-nodes", "ReadPage", "testdata/valid/ReadPage/nodes_at_cap.json"},
	}
	ref := reference(b)
	for _, in := range inputs {
		data, err := os.ReadFile(in.path)
		if err != nil {
			continue // schema not there yet
		}
		s, ok := registry.Lookup(in.def)
		if !ok {
			continue
		}
		b.Run(in.name+"/generated", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/cue", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ref.Check(in.def, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
