package durable

import (
	"context"
	"strings"
	"time"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/prom"
)

// The worker's telemetry: every attempt runs in a telemetry.SpanAttempt
// span (the run's span and its nodes' below it) and counts in the
// prom.M collectors under the worker's queue: claim latency,
// running attempts, attempts by outcome and their duration, retries,
// swept tasks and the progress publications (latency, and bytes by artefact).
// WorkerOptions.MetricsAddr serves them.

// observeClaim records the claim latency of the claimed tasks.
func (w *Worker) observeClaim(got []claimed) {
	h := prom.M.ClaimLatency.WithLabelValues(w.o.Queue)
	for _, c := range got {
		h.Observe(max(c.waited, 0).Seconds())
	}
}

// observeAttempt starts attempt c's span and counts it running; end
// records its outcome (nil: superseded, nothing recorded).
func (w *Worker) observeAttempt(ctx context.Context, c claimed) (_ context.Context, end func(o *outcome)) {
	start := time.Now()
	running := prom.M.RunningTasks.WithLabelValues(w.o.Queue)
	running.Inc()
	ctx, span := telemetry.StartAttempt(ctx, telemetry.AttemptInfo{TaskID: c.id, TaskPK: c.pk, Flow: c.flow, Queue: w.o.Queue,
		Attempt: int64(c.attempt), Generation: c.gen, RunID: c.runID})
	return ctx, func(o *outcome) {
		running.Dec()
		label := telemetry.OutcomeSuperseded
		var err error
		if o != nil {
			label = outcomeLabel(o.state)
			if o.state != StateSucceeded {
				err = attemptError{o}
			}
			if o.retry {
				prom.M.Retries.WithLabelValues(w.o.Queue).Inc()
			}
		}
		prom.M.Attempts.WithLabelValues(w.o.Queue, label).Inc()
		prom.M.AttemptDuration.WithLabelValues(w.o.Queue, label).Observe(time.Since(start).Seconds())
		telemetry.End(span, err)
	}
}

// observeSwept counts a task a sweep recorded.
func observeSwept(o outcome) { prom.M.Swept.WithLabelValues(outcomeLabel(o.state)).Inc() }

// observeSink measures sink's publications.
func observeSink(sink *pgstore.Sink) progress.Sink {
	return telemetry.ObserveSink("postgres", sink, func(*progress.Publication) telemetry.PublishedBytes {
		st := sink.LastStats()
		return telemetry.PublishedBytes{Summary: st.SummaryBytes, Topology: st.TopologyBytes, Detail: st.DetailBytes}
	})
}

func outcomeLabel(s State) string {
	if !s.Valid() {
		return "unknown"
	}
	return strings.ToLower(string(s))
}

// attemptError is a failed attempt's outcome as a span error (a
// cancelled attempt's wraps context.Canceled).
type attemptError struct{ o *outcome }

func (e attemptError) Error() string {
	if e.o.errType != "" {
		return e.o.errType + ": " + e.o.errMsg
	}
	return string(e.o.state)
}

func (e attemptError) Unwrap() error {
	if e.o.state == StateCancelled {
		return context.Canceled
	}
	return nil
}

// serveMetrics starts the metrics listener of WorkerOptions.MetricsAddr;
// stop ends it.
func (w *Worker) serveMetrics() (stop func(), err error) {
	if w.o.MetricsAddr == "" {
		return func() {}, nil
	}
	addr, stop, err := prom.ServeMetrics(w.o.MetricsAddr)
	if err != nil {
		return nil, err
	}
	w.log.Info("serving metrics", "addr", addr.String(), "path", "/metrics")
	return stop, nil
}
