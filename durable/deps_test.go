package durable_test

import (
	"os/exec"
	"strings"
	"testing"
)

// An application embeds the worker: durable links pgx but neither
// KubeRay nor Kubernetes (the Ray Job runner, which does, is the separate
// package rayjobrunner).
func TestDurableLinksNoKubernetes(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/rayflow/rayflow/durable").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	sawPgx := false
	for _, d := range deps {
		if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/") || strings.HasPrefix(d, "github.com/ray-project/") {
			t.Errorf("durable depends on %s", d)
		}
		sawPgx = sawPgx || d == "github.com/jackc/pgx/v5/pgxpool"
	}
	if !sawPgx {
		t.Fatalf("go list -deps found no pgxpool: %q", out)
	}
}
