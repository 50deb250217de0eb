package rayjob_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/rayjob"
)

func int32p(v int32) *int32 { return &v }

// TestManifestValidation: every option is used as given or refused with
// ErrInvalidManifest; nothing is silently rewritten (it used to turn
// negative workers into 1 and a negative TTL into 300, and accepted names
// Kubernetes refuses). Each bound is tested at its edge.
func TestManifestValidation(t *testing.T) {
	t.Parallel()
	ok := rayjob.ManifestOptions{Name: "fanout", Image: "ghcr.io/x/fanout:1", Executable: "/opt/fanout", Flow: "fanout", Input: []byte("1")}
	for _, tc := range []struct {
		name       string
		edit       func(*rayjob.ManifestOptions)
		wantErr    string // "" when valid
		replicas   int32
		ttlSeconds int32
	}{
		{"defaults", func(*rayjob.ManifestOptions) {}, "", 1, 300},
		{"workers 0 is the default", func(o *rayjob.ManifestOptions) { o.Workers = 0 }, "", 1, 300},
		{"workers 7", func(o *rayjob.ManifestOptions) { o.Workers = 7 }, "", 7, 300},
		{"workers -1", func(o *rayjob.ManifestOptions) { o.Workers = -1 }, "workers -1", 0, 0},
		{"ttl 0 is kept", func(o *rayjob.ManifestOptions) { o.TTLSecondsAfterFinished = int32p(0) }, "", 1, 0},
		{"ttl 60", func(o *rayjob.ManifestOptions) { o.TTLSecondsAfterFinished = int32p(60) }, "", 1, 60},
		{"ttl -1", func(o *rayjob.ManifestOptions) { o.TTLSecondsAfterFinished = int32p(-1) }, "ttl -1", 0, 0},
		{"name of 47", func(o *rayjob.ManifestOptions) { o.Name = "a" + strings.Repeat("b", 46) }, "", 1, 300},
		{"name of 48", func(o *rayjob.ManifestOptions) { o.Name = "a" + strings.Repeat("b", 47) }, "longer than 47", 0, 0},
		{"name upper case", func(o *rayjob.ManifestOptions) { o.Name = "Fanout" }, "DNS-1035", 0, 0},
		{"name with underscore", func(o *rayjob.ManifestOptions) { o.Name = "fan_out" }, "DNS-1035", 0, 0},
		{"name starting with a digit", func(o *rayjob.ManifestOptions) { o.Name = "1fanout" }, "DNS-1035", 0, 0},
		{"name ending with a dash", func(o *rayjob.ManifestOptions) { o.Name = "fanout-" }, "DNS-1035", 0, 0},
		{"no name", func(o *rayjob.ManifestOptions) { o.Name = "" }, "no name", 0, 0},
		{"namespace", func(o *rayjob.ManifestOptions) { o.Namespace = "flows-1" }, "", 1, 300},
		{"namespace with a dot", func(o *rayjob.ManifestOptions) { o.Namespace = "flows.prod" }, "namespace", 0, 0},
		{"namespace of 64", func(o *rayjob.ManifestOptions) { o.Namespace = strings.Repeat("n", 64) }, "namespace", 0, 0},
		{"flow label value of 63", func(o *rayjob.ManifestOptions) { o.Flow = strings.Repeat("f", 63) }, "", 1, 300},
		{"flow label value of 64", func(o *rayjob.ManifestOptions) { o.Flow = strings.Repeat("f", 64) }, "label rayflow.dev/flow", 0, 0},
		{"flow with a slash", func(o *rayjob.ManifestOptions) { o.Flow = "team/fanout" }, "label rayflow.dev/flow", 0, 0},
		{"no flow", func(o *rayjob.ManifestOptions) { o.Flow = "" }, "no flow", 0, 0},
		{"image with a space", func(o *rayjob.ManifestOptions) { o.Image = "ghcr.io/x fanout" }, "image", 0, 0},
		{"relative executable", func(o *rayjob.ManifestOptions) { o.Executable = "bin/fanout" }, "absolute path", 0, 0},
		{"cpu 0", func(o *rayjob.ManifestOptions) { o.CPU = "0" }, "must be positive", 0, 0},
		{"cpu 500m", func(o *rayjob.ManifestOptions) { o.CPU = "500m" }, "", 1, 300},
		{"memory -1Gi", func(o *rayjob.ManifestOptions) { o.Memory = "-1Gi" }, "must be positive", 0, 0},
		{"memory lots", func(o *rayjob.ManifestOptions) { o.Memory = "lots" }, "memory", 0, 0},
		{"input not JSON", func(o *rayjob.ManifestOptions) { o.Input = []byte("{") }, "not JSON", 0, 0},
	} {
		o := ok
		tc.edit(&o)
		job, err := rayjob.Manifest(o)
		if tc.wantErr != "" {
			if !errors.Is(err, rayjob.ErrInvalidManifest) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want ErrInvalidManifest mentioning %q", tc.name, err, tc.wantErr)
			}
			if strings.Count(err.Error(), "rayflow: ") > 0 {
				t.Errorf("%s: %q names rayflow (the CLI adds the one prefix)", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := *job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas; got != tc.replicas {
			t.Errorf("%s: %d replicas, want %d", tc.name, got, tc.replicas)
		}
		if got := job.Spec.TTLSecondsAfterFinished; got != tc.ttlSeconds {
			t.Errorf("%s: ttl %d, want %d", tc.name, got, tc.ttlSeconds)
		}
	}
}
