package ray

import "github.com/rayflow/rayflow/sdk"

// batchedFlow is the no-op map with K items per task (window 256).
func batchedFlow(k, window int) (sdk.Flow[[]int, []int], bool) {
	switch {
	case window != 256:
		return sdk.Flow[[]int, []int]{}, false
	case k == 16:
		return bnoop16, true
	case k == 64:
		return bnoop64, true
	}
	return sdk.Flow[[]int, []int]{}, false
}
