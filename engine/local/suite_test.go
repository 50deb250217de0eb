package local_test

import (
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/executor/executortest"
)

// The executor's backend suite on the in-process engine (sdk.Run's
// default), in real time.
func TestExecutorSuite(t *testing.T) {
	executortest.Run(t, executortest.SDK(nil), executortest.Options{Slack: 2 * time.Second})
}
