package rayjob_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The application side of Ray Job mode (the coordinator, and an
// application such as examples/fanout that calls it) must not link
// KubeRay or Kubernetes: only the submitting side (this package) does.
func TestCoordinatorLinksNoKubernetes(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"github.com/rayflow/rayflow/rayjob/coordinator", "github.com/rayflow/rayflow/examples/fanout"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s: %q", pkg, out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/") || strings.HasPrefix(d, "github.com/ray-project/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
