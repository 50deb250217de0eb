package ray

import "github.com/rayflow/rayflow/sdk"

// batchedFlow is the no-op map with K items per task, once item batching
// is wired (false until then).
func batchedFlow(k, window int) (sdk.Flow[[]int, []int], bool) {
	_, _ = k, window
	return sdk.Flow[[]int, []int]{}, false
}
