package ray

import (
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/executor/executortest"
	"github.com/rayflow/rayflow/sdk"
)

// The executor's backend suite on real Ray: the same scenarios as the
// fake backend's (internal/executor) and the in-process engine's.
func TestExecutorSuite(t *testing.T) {
	needRay(t)
	executortest.Run(t, executortest.SDK([]sdk.RunOption{sdk.WithEngine(testEngine)}, quarter),
		executortest.Options{Slack: 15 * time.Second})
}
