package telemetry_test

import (
	"os/exec"
	"strings"
	"testing"
)

// An application that links only the SDK (sdk → engine/local →
// telemetry) links no Prometheus client: metrics go through
// telemetry.Recorder, which the processes that serve metrics install
// (package telemetry/prom).
func TestSDKLinksNoPrometheus(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/rayflow/rayflow/sdk/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	sawTelemetry := false
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/prometheus/") || d == "github.com/rayflow/rayflow/telemetry/prom" {
			t.Errorf("the sdk depends on %s", d)
		}
		sawTelemetry = sawTelemetry || d == "github.com/rayflow/rayflow/telemetry"
	}
	if !sawTelemetry {
		t.Fatalf("go list -deps found no telemetry package: %q", out)
	}
}
