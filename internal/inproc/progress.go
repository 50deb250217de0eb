package inproc

import (
	"context"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

// The local engine reports the same events as the Ray engine, through the
// run's progress.Run: a step outside any map is a graph node whose leaf
// gets a producer (STARTED, application progress under full, the output
// preview, then COMPLETED or FAILED); a map reports its fan-out counters
// as items finish and settles when it ends; map items report nothing.

// leafStart opens the progress session of the leaf at node id (nil when it
// does not report: a map item's never does) and returns the context the
// leaf runs in.
func (r *runner) leafStart(ctx context.Context, s *flowgraph.Step, id nodeRef) (context.Context, *progress.Producer) {
	if id.bare {
		return ctx, nil // no reporter to hide
	}
	if id.item >= 0 {
		return progress.WithReporter(ctx, nil), nil
	}
	prod := r.opts.Progress.Producer(id.id)
	if prod == nil {
		return progress.WithReporter(ctx, nil), nil
	}
	prod.Started(detail.NodeExecution{AssignedResources: map[string]float64{}})
	if s.Preview != nil {
		prod.OutputPreview(progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewPending})
	}
	return progress.Context(ctx, prod), prod
}

// leafEnd closes the leaf's session: the preview of its result (or
// UNAVAILABLE after a failure), then COMPLETED or FAILED.
func (r *runner) leafEnd(prod *progress.Producer, s *flowgraph.Step, out any, err error) {
	if prod == nil {
		return
	}
	if err != nil {
		if s.Preview != nil {
			prod.OutputPreview(progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewUnavailable})
		}
		prod.Fail(err.Error())
		return
	}
	if s.Preview != nil {
		env := progress.PreviewEnvelope{SchemaVersion: 1, Availability: progress.PreviewFailed}
		if r.opts.Preview != nil {
			env = r.opts.Preview(s.Preview, out)
		}
		prod.OutputPreview(env)
	}
	prod.Complete()
}

// mapReport reports a map's counters (as the Ray engine does).
func (r *runner) mapReport(p progress.MapCounters) { r.opts.Progress.Map(p) }
