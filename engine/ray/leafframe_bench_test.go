package ray

import (
	"context"
	"testing"
)

// BenchmarkServeLeafFrame is the leaf library's entry point on a no-op
// leaf: the Go side of an in-process leaf.
func BenchmarkServeLeafFrame(b *testing.B) {
	var fr []byte
	{
		var w frameBuf
		_ = writeFrame(&w, map[string]any{"name": "github.com/rayflow/rayflow/engine/ray.NoOp", "node": "0.1[3]", "bound": false, "bootstrap": false, "kind": ""}, []byte{}, []byte("41"))
		fr = w.b
	}
	for b.Loop() {
		serveLeafFrame(context.Background(), fr, func([]byte) {})
	}
}

type frameBuf struct{ b []byte }

func (f *frameBuf) Write(p []byte) (int, error) { f.b = append(f.b, p...); return len(p), nil }
