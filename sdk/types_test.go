package sdk_test

import (
	"reflect"
	"testing"

	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// TestOptionTypesAreTheGraphTypes: an option an application gives is the
// graph's own type, with no hand-written copy to convert field by field
// (a field added to one and not the other would be dropped silently).
func TestOptionTypesAreTheGraphTypes(t *testing.T) {
	for _, c := range []struct {
		name       string
		sdk, graph reflect.Type
	}{
		{"Limits", reflect.TypeFor[sdk.Limits](), reflect.TypeFor[flowgraph.Limits]()},
		{"Resources", reflect.TypeFor[sdk.Resources](), reflect.TypeFor[flowgraph.Resources]()},
		{"ActorOptions", reflect.TypeFor[sdk.ActorOptions](), reflect.TypeFor[flowgraph.ActorOptions]()},
		{"ResultBuffer", reflect.TypeFor[sdk.ResultBuffer](), reflect.TypeFor[flowgraph.ResultBuffer]()},
	} {
		if c.sdk != c.graph {
			t.Errorf("sdk.%s is %v, a copy of %v", c.name, c.sdk, c.graph)
		}
	}
}
