package sdk

import (
	"context"
	"sync"
	"testing"
)

func raceLeaf(_ context.Context, v int) (int, error) { return v, nil }

// One WithResources option applied by many steps at once: each step gets
// its own copy, and nothing is written to the option (go test -race).
func TestResourcesOptionSharedAcrossSteps(t *testing.T) {
	opt := WithResources(Resources{NumCPUs: 0.25, Custom: map[string]float64{"gpu_slot": 1}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { Step(raceLeaf, opt) })
	}
	wg.Wait()
}
