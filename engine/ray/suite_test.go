package ray

import (
	"context"
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

// runOn runs f on e as an application does (sdk.Run with sdk.WithEngine),
// materializing with opts.
func runOn[In, Out any](ctx context.Context, e *Engine, f sdk.Flow[In, Out], in In, opts ...sdk.MaterializeOption) (Out, error) {
	return sdk.Run(ctx, f, in, sdk.WithEngine(e), sdk.WithPlanOptions(opts...))
}
