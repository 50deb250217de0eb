package progress

import (
	"context"
	"errors"
	"sync"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
)

// Sink receives the progress of one run. It is engine-neutral: the local
// and the Ray engine feed the same Run, which publishes to the sink. The
// PostgreSQL progress storage implements it; so does a live display
// (SinkFunc).
type Sink interface {
	// Publish receives the run's bounded state. While the run goes on it
	// is called at most once per flush interval (RunConfig.FlushInterval,
	// default 1 s) and only when the state changed; after the run ended it
	// is called exactly once more with Final set and the terminal state in
	// the summary. Calls are never concurrent; p is read-only (it shares
	// state with the run) and not used by the run after Publish returns.
	//
	// Every event folded into p carried p.Identity (the fence); the sink
	// checks its own fence (for the storage: the task row is RUNNING with
	// the same attempt, generation and run id). When it is stale, Publish
	// returns an error wrapping ErrStaleFence: the run is then cancelled
	// with that error (sdk.Run returns it) and nothing more is published.
	// Any other error is logged and counted; the next publication carries
	// the latest state again, and a failing final publication is returned
	// by Run.Finish.
	Publish(ctx context.Context, p *Publication) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, p *Publication) error

// Publish calls f.
func (f SinkFunc) Publish(ctx context.Context, p *Publication) error { return f(ctx, p) }

// ErrStaleFence is wrapped by a sink's error when the run's identity no
// longer owns its task (a newer attempt or generation took over).
var ErrStaleFence = errors.New("progress: the run's fence is stale")

// Publication is one run's bounded progress at one moment.
type Publication struct {
	// Identity is the run's fence; every accepted event carried it.
	Identity common.RunIdentity
	// Final is set on the last publication, after the run ended.
	Final bool
	// Summary is the summary v3 record (docs/contracts.md#summary-v3), validated by
	// gen/summary and at most 16 KiB canonical. Its topology_version
	// advances when the topology changes, its detail_revision when any
	// node changes, and storage.manifest_id names the topology version
	// ("<run id>-t<version>"). The final summary has the reserved revision
	// 2^63-1 and the terminal state.
	Summary summary.Summary
	// Nodes and Edges are the retained topology (full policy; sorted by
	// node id and by (source, target)); nil under terminal_only and
	// disabled. TopologyChanged says whether they differ from the previous
	// publication's.
	Nodes           []topology.Node
	Edges           []topology.Edge
	TopologyChanged bool
	// Details are the node detail rows (schema 2; full policy), sorted by
	// node id.
	Details []detail.NodeDetail
	// Snapshot is the schema-v2 live snapshot with ingress diagnostics
	// (full policy; nil otherwise), for displays and diagnostics.
	Snapshot *Snapshot
}

// Latest is a Sink that keeps the latest publication (a live display's or
// a test's sink). Its methods are safe for concurrent use.
type Latest struct {
	mu    sync.Mutex
	last  *Publication
	count int
}

// Publish keeps p.
func (l *Latest) Publish(_ context.Context, p *Publication) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = p
	l.count++
	return nil
}

// Last returns the latest publication (nil before the first) and how many
// there were.
func (l *Latest) Last() (*Publication, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.count
}
