package serve_test

import (
	"os/exec"
	"strings"
	"testing"
)

// An application that embeds the API links none of rayflow's examples:
// their flows and routes come with package serve/showcase, which only the
// rayflow CLI (or an application that asks) imports.
func TestServeLinksNoExamples(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/rayflow/rayflow/serve").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps: %q", out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/rayflow/rayflow/examples/") || d == "github.com/rayflow/rayflow/serve/showcase" {
			t.Errorf("serve depends on %s", d)
		}
	}
}
