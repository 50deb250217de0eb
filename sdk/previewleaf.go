package sdk

import (
	"sync"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/sdk/redact"
)

var previews = struct {
	sync.RWMutex
	m map[string]sdkrt.PreviewLeaf
}{m: map[string]sdkrt.PreviewLeaf{}}

// registerPreview makes project callable by its registered name from
// another process of the same binary (WithOutputPreview calls it).
func registerPreview[Out any](id flowgraph.Callable, project func(Out) (any, error)) {
	if !id.Resolvable || project == nil {
		return
	}
	p := &flowgraph.Preview{Callable: id, Project: func(v any) (any, error) { return project(v.(Out)) }}
	leaf := func(codec sdkrt.Codec, result []byte, policy *redact.Policy) (env progress.PreviewEnvelope) {
		defer func() {
			if recover() != nil {
				env = progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
			}
		}()
		var out Out
		if err := codec.Unmarshal(result, &out); err != nil {
			return progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
		}
		return buildPreview(p, out, policy)
	}
	previews.Lock()
	previews.m[id.Name] = leaf
	previews.Unlock()
}

// lookupPreview returns the output-preview projector registered under name
// (a step's Preview.Callable.Name).
func lookupPreview(name string) (sdkrt.PreviewLeaf, bool) {
	previews.RLock()
	defer previews.RUnlock()
	l, ok := previews.m[name]
	return l, ok
}
