package telemetry

import (
	"context"
	"time"

	"github.com/rayflow/rayflow/progress"
)

// ObserveSink wraps s so that every Publish is recorded (Recorder's
// Publication, by outcome) and, when accepted, its summary size (size,
// which may be nil; Recorder's PublicationBytes), both labelled with name
// (a fixed sink kind such as "postgres").
func ObserveSink(name string, s progress.Sink, size func(*progress.Publication) int) progress.Sink {
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
			r.PublicationBytes(name, ArtefactSummary, size(p))
		}
		return err
	})
}
