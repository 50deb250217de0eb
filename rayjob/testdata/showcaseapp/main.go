// Command showcaseapp is a Ray Job application for the rayjob
// tests: it runs the complex and recovery showcases (examples/complex,
// examples/recovery) as a job's coordinator and as their Ray leaves.
package main

import (
	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/rayjob/coordinator"

	// The flows, registered by name (sdk.RegisterFlow) in their packages.
	_ "github.com/rayflow/rayflow/examples/complex/workflow"
	_ "github.com/rayflow/rayflow/examples/recovery/workflow"
)

func main() {
	rayengine.ServeLeafIfRequested()
	coordinator.ServeIfRequested()
}
