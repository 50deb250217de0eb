package telemetry

import (
	"context"
	"time"

	"github.com/rayflow/rayflow/progress"
)

// PublishedBytes are the canonical bytes one accepted progress
// publication wrote, by artefact kind: the summary record, the topology
// (pages and manifest, when the publication staged a new one) and the
// node detail rows it wrote. Zero: none of that kind.
type PublishedBytes struct {
	Summary, Topology, Detail int64
}

// ObserveSink wraps s so that every Publish is recorded (Recorder's
// Publication, by outcome) and, when accepted, the bytes size reports for
// it (size may be nil) by artefact kind (Recorder's PublicationBytes, one
// observation per kind written), all labelled with name (a fixed sink kind
// such as "postgres").
func ObserveSink(name string, s progress.Sink, size func(*progress.Publication) PublishedBytes) progress.Sink {
	return progress.SinkFunc(func(ctx context.Context, p *progress.Publication) error {
		start := time.Now()
		err := s.Publish(ctx, p)
		r := CurrentRecorder()
		if r == nil {
			return err
		}
		o := OutcomeOK
		if err != nil {
			o = OutcomeError
		}
		r.Publication(name, o, time.Since(start))
		if err == nil && size != nil {
			b := size(p)
			for _, a := range [...]struct {
				kind string
				n    int64
			}{{ArtefactSummary, b.Summary}, {ArtefactTopology, b.Topology}, {ArtefactDetail, b.Detail}} {
				if a.n > 0 {
					r.PublicationBytes(name, a.kind, int(a.n))
				}
			}
		}
		return err
	})
}
