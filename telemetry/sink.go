package telemetry

import (
	"context"
	"time"

	"github.com/rayflow/rayflow/progress"
)

// ObserveSink wraps s so that every Publish is measured in
// PublicationDuration (by outcome) and, when accepted, its summary size
// (size, which may be nil) in PublicationBytes, both labelled with name
// (a fixed sink kind such as "postgres").
func ObserveSink(name string, s progress.Sink, size func(*progress.Publication) int) progress.Sink {
	return progress.SinkFunc(func(ctx context.Context, p *progress.Publication) error {
		start := time.Now()
		err := s.Publish(ctx, p)
		o := OutcomeOK
		if err != nil {
			o = OutcomeError
		}
		M.PublicationDuration.WithLabelValues(name, o).Observe(time.Since(start).Seconds())
		if err == nil && size != nil {
			M.PublicationBytes.WithLabelValues(name).Observe(float64(size(p)))
		}
		return err
	})
}
