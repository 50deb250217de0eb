// Command envapp is a Ray Job application for the rayjob tests: its
// flow "leafenv" reports, from a Ray leaf, whether the progress database
// URL reached the leaf's environment.
package main

import (
	"context"
	"os"
	"strings"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

// LeafEnv is what a leaf sees.
type LeafEnv struct {
	URL            bool   `json:"url"`            // RAYFLOW_DATABASE_URL is set
	JobConfigHasIt bool   `json:"job_config_has"` // Ray's job config names it
	Leaf           bool   `json:"leaf"`           // it ran in a Ray leaf
	Other          string `json:"other"`          // $OTHER (the job's other env_vars still arrive)
}

func leafEnv(_ context.Context, marker string) (LeafEnv, error) {
	cfg := os.Getenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
	return LeafEnv{URL: os.Getenv(coordinator.DatabaseURLEnv) != "", JobConfigHasIt: strings.Contains(cfg, marker),
		Leaf: os.Getenv("RAYFLOW_LEAF") != "", Other: os.Getenv("OTHER")}, nil
}

func init() { sdk.RegisterFlow("leafenv", sdk.Step(leafEnv)) }

func main() {
	rayengine.ServeLeafIfRequested()
	coordinator.ServeIfRequested()
}
