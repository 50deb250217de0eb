package ray

import (
	"runtime"
	"time"

	"github.com/rayflow/rayflow/internal/executor"
)

// taskOverhead is the Ray engine's fixed cost of one task beside its
// items' own time (submitting it, Ray scheduling and starting it, its
// results coming back): about 2 ms of CPU on one head, the figure the
// native driver of bench_native.py pays per leaf. Automatic item batching
// (sdk's WithAutoBatching) sizes batches so that it is
// executor.OverheadShare of a task.
const taskOverhead = 2 * time.Millisecond

// ClusterCPUs is the CPUs of the cluster the bridge connected to, as Ray
// reported them then (0: unknown).
func (b *rayBridge) ClusterCPUs() int { return b.cpus }

// taskCost is what automatic batching knows of this engine: taskOverhead
// and the cluster's CPUs (GOMAXPROCS when the runtime cannot tell).
func (r *runner) taskCost() executor.TaskCost {
	c := executor.TaskCost{Overhead: taskOverhead}
	if cc, ok := r.e.rt.(interface{ ClusterCPUs() int }); ok {
		c.CPUs = cc.ClusterCPUs()
	}
	if c.CPUs <= 0 {
		c.CPUs = runtime.GOMAXPROCS(0)
	}
	return c
}
