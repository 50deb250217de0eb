package sdk

import (
	"sync"

	"github.com/rayflow/rayflow/sdk/flowgraph"
	"github.com/rayflow/rayflow/sdk/redact"
)

// PreviewLeaf runs one registered output-preview projector on a step's
// encoded successful result: the way a Ray leaf process calls it by name.
// It decodes the result with the codec, runs the projector (BuildPreview)
// and returns the validated, redacted envelope. It never panics and never
// fails: a result that does not decode, a projector error or panic is a
// FAILED envelope.
type PreviewLeaf func(codec Codec, result []byte, policy *redact.Policy) PreviewEnvelope

var previews = struct {
	sync.RWMutex
	m map[string]PreviewLeaf
}{m: map[string]PreviewLeaf{}}

// registerPreview makes project callable by its registered name from
// another process of the same binary (WithOutputPreview calls it).
func registerPreview[Out any](id flowgraph.Callable, project func(Out) (any, error)) {
	if !id.Resolvable || project == nil {
		return
	}
	p := &flowgraph.Preview{Callable: id, Project: func(v any) (any, error) { return project(v.(Out)) }}
	leaf := func(codec Codec, result []byte, policy *redact.Policy) (env PreviewEnvelope) {
		defer func() {
			if recover() != nil {
				env = PreviewEnvelope{SchemaVersion: 1, Availability: PreviewFailed}
			}
		}()
		var out Out
		if err := codec.Unmarshal(result, &out); err != nil {
			return PreviewEnvelope{SchemaVersion: 1, Availability: PreviewFailed}
		}
		return BuildPreview(p, out, policy)
	}
	previews.Lock()
	previews.m[id.Name] = leaf
	previews.Unlock()
}

// LookupPreview returns the output-preview projector registered under name
// (a step's Preview.Callable.Name).
func LookupPreview(name string) (PreviewLeaf, bool) {
	previews.RLock()
	defer previews.RUnlock()
	l, ok := previews.m[name]
	return l, ok
}
