package prom_test

import (
	"errors"
	"testing"

	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/prom"
)

// The cost of counting one leaf (submitted and finished) through the
// Recorder (the Prometheus one, installed by importing prom), against
// the counters themselves (what the engines called before the
// interface), and with no recorder.
func BenchmarkLeafCount(b *testing.B) {
	errLeaf := errors.New("leaf")
	b.Run("recorder", func(b *testing.B) {
		l := telemetry.Leaves("bench")
		b.ReportAllocs()
		for i := range b.N {
			l.Submitted()
			if i%8 == 0 {
				l.Finished(errLeaf)
			} else {
				l.Finished(nil)
			}
		}
	})
	b.Run("counters", func(b *testing.B) {
		sub := prom.M.LeavesSubmitted.WithLabelValues("bench")
		ok, failed := prom.M.LeavesFinished.WithLabelValues("bench", telemetry.OutcomeSucceeded), prom.M.LeavesFinished.WithLabelValues("bench", telemetry.OutcomeFailed)
		b.ReportAllocs()
		for i := range b.N {
			sub.Inc()
			if i%8 == 0 {
				failed.Inc()
			} else {
				ok.Inc()
			}
		}
	})
	b.Run("no recorder", func(b *testing.B) {
		prev := telemetry.CurrentRecorder()
		telemetry.SetRecorder(nil)
		b.Cleanup(func() { telemetry.SetRecorder(prev) })
		l := telemetry.Leaves("bench")
		b.ReportAllocs()
		for range b.N {
			l.Submitted()
			l.Finished(nil)
		}
	})
}
