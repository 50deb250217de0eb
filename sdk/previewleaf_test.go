package sdk_test

import (
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// WithOutputPreview registers its projector by name for leaf processes.
func TestLookupPreview(t *testing.T) {
	f := sdk.Step(Inc).WithOutputPreview(PreviewInt)
	name := sdkrt.Graph(f).Step.Preview.Callable.Name
	p, ok := sdkrt.LookupPreview(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	if env := p(sdk.DefaultCodec, []byte("7"), nil); env.Availability != progress.PreviewAvailable {
		t.Errorf("got %+v", env)
	}
	if env := p(sdk.DefaultCodec, []byte(`"x"`), nil); env.Availability != progress.PreviewFailed {
		t.Errorf("undecodable result: got %+v", env)
	}
	if _, ok := sdkrt.LookupPreview("no/such.Projector"); ok {
		t.Error("found an unregistered projector")
	}
}
