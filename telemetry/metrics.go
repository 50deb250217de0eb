package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are rayflow's Prometheus collectors, registered in Registry.
// Label values come from closed sets (a queue name is an operator's
// configuration, not a per-task value): never a task id, run id, node id
// or error text.
type Metrics struct {
	// RunningTasks counts the attempts a worker of this process runs, by
	// queue.
	RunningTasks *prometheus.GaugeVec
	// ClaimLatency is the time from a task becoming claimable (enqueued,
	// or its retry backoff elapsed) to a worker claiming it, by queue.
	ClaimLatency *prometheus.HistogramVec
	// Attempts counts finished attempts by queue and outcome (succeeded,
	// failed, cancelled, lost, superseded); Retries the attempts that were
	// scheduled for an automatic retry; Swept the tasks a sweep recorded
	// (lost, cancelled, expired).
	Attempts        *prometheus.CounterVec
	AttemptDuration *prometheus.HistogramVec
	Retries         *prometheus.CounterVec
	Swept           *prometheus.CounterVec
	// LeavesSubmitted and LeavesFinished count leaf calls by engine (and
	// outcome: succeeded, failed).
	LeavesSubmitted *prometheus.CounterVec
	LeavesFinished  *prometheus.CounterVec
	// MapItemsInFlight and MapWindowSlots are the items holding a window
	// slot and the slots of the bounded maps running now, by engine: their
	// ratio is the windows' occupancy.
	MapItemsInFlight *prometheus.GaugeVec
	MapWindowSlots   *prometheus.GaugeVec
	// Publication latency and size of the progress publications of this
	// process's runs (the progress sink's Publish), by outcome (ok, error)
	// and sink.
	PublicationDuration *prometheus.HistogramVec
	PublicationBytes    *prometheus.HistogramVec
}

var (
	registry = prometheus.NewRegistry()
	// M are the process's collectors (registered in Registry).
	M = newMetrics()
)

// Outcomes of attempts and leaves (label values).
const (
	OutcomeSucceeded  = "succeeded"
	OutcomeFailed     = "failed"
	OutcomeCancelled  = "cancelled"
	OutcomeLost       = "lost"
	OutcomeExpired    = "expired"
	OutcomeSuperseded = "superseded"
	OutcomeOK         = "ok"
	OutcomeError      = "error"
)

func newMetrics() *Metrics {
	durations := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	m := &Metrics{
		RunningTasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rayflow_worker_running_tasks",
			Help: "Task attempts running in this process's durable workers, by queue."}, []string{"queue"}),
		ClaimLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rayflow_claim_latency_seconds",
			Help:    "Time from a task becoming claimable (enqueued, or its retry backoff elapsed) to its claim, by queue.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}}, []string{"queue"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_attempts_total",
			Help: "Finished task attempts of this process's workers, by queue and outcome."}, []string{"queue", "outcome"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rayflow_attempt_duration_seconds",
			Help: "Duration of task attempts from claim to outcome, by queue and outcome.", Buckets: durations}, []string{"queue", "outcome"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_retries_total",
			Help: "Attempts scheduled for an automatic retry, by queue."}, []string{"queue"}),
		Swept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_swept_tasks_total",
			Help: "Tasks a worker's sweep recorded (lost: no heartbeat; cancelled: stuck cancelling; expired: past the queue deadline), by outcome."}, []string{"outcome"}),
		LeavesSubmitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_leaves_submitted_total",
			Help: "Leaf calls submitted (started in process, or submitted to Ray), by engine."}, []string{"engine"}),
		LeavesFinished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_leaves_finished_total",
			Help: "Leaf calls finished, by engine and outcome (succeeded, failed)."}, []string{"engine", "outcome"}),
		MapItemsInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rayflow_map_items_in_flight",
			Help: "Items holding a slot of a bounded map's admission window, by engine."}, []string{"engine"}),
		MapWindowSlots: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rayflow_map_window_slots",
			Help: "Admission window slots of the bounded maps running now, by engine (occupancy: in flight / slots)."}, []string{"engine"}),
		PublicationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rayflow_progress_publication_duration_seconds",
			Help:    "Latency of progress publications (a sink's Publish), by sink and outcome.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"sink", "outcome"}),
		PublicationBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rayflow_progress_publication_bytes",
			Help:    "Canonical bytes of the summary record of each accepted progress publication, by sink.",
			Buckets: prometheus.ExponentialBuckets(256, 2, 7)}, []string{"sink"}),
	}
	registry.MustRegister(m.RunningTasks, m.ClaimLatency, m.Attempts, m.AttemptDuration, m.Retries, m.Swept,
		m.LeavesSubmitted, m.LeavesFinished, m.MapItemsInFlight, m.MapWindowSlots, m.PublicationDuration, m.PublicationBytes)
	return m
}

// Registry is the registry of M.
func Registry() *prometheus.Registry { return registry }

var runtimeRegistry = func() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}()

// Gatherer gathers Registry and the Go runtime and process collectors.
func Gatherer() prometheus.Gatherer { return prometheus.Gatherers{registry, runtimeRegistry} }

// Handler serves Gatherer in the Prometheus text format.
func Handler() http.Handler { return promhttp.HandlerFor(Gatherer(), promhttp.HandlerOpts{}) }

// ServeMetrics serves Handler at GET /metrics on addr until stop is
// called (stop shuts the server down and waits for it). The listener is
// bound before it returns, so an unusable address fails at once; the
// bound address is returned (useful with port 0).
func ServeMetrics(addr string) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// MapWindow tracks one running bounded map's window in MapWindowSlots
// and MapItemsInFlight. A zero or unbounded window (≤ 0) tracks nothing.
type MapWindow struct {
	inFlight prometheus.Gauge
	slots    prometheus.Gauge
	size     float64
}

// OpenMapWindow adds a map's window of size slots for engine.
func OpenMapWindow(engine string, size int) *MapWindow {
	if size <= 0 || size > 1<<30 {
		return &MapWindow{}
	}
	w := &MapWindow{inFlight: M.MapItemsInFlight.WithLabelValues(engine), slots: M.MapWindowSlots.WithLabelValues(engine), size: float64(size)}
	w.slots.Add(w.size)
	return w
}

// ItemStarted and ItemDone move one item in and out of the window.
func (w *MapWindow) ItemStarted() {
	if w.inFlight != nil {
		w.inFlight.Inc()
	}
}

// ItemDone is ItemStarted's end.
func (w *MapWindow) ItemDone() {
	if w.inFlight != nil {
		w.inFlight.Dec()
	}
}

// Close removes the window's slots.
func (w *MapWindow) Close() {
	if w.slots != nil {
		w.slots.Sub(w.size)
	}
}

// LeafCounters are one engine's leaf counters.
type LeafCounters struct {
	submitted, succeeded, failed prometheus.Counter
}

// Leaves returns engine's leaf counters (resolve them once: a counter
// lookup by label costs more than the count).
func Leaves(engine string) *LeafCounters {
	return &LeafCounters{submitted: M.LeavesSubmitted.WithLabelValues(engine),
		succeeded: M.LeavesFinished.WithLabelValues(engine, OutcomeSucceeded), failed: M.LeavesFinished.WithLabelValues(engine, OutcomeFailed)}
}

// Submitted counts a leaf call submitted.
func (l *LeafCounters) Submitted() { l.submitted.Inc() }

// Finished counts a leaf call's end (err nil: succeeded).
func (l *LeafCounters) Finished(err error) {
	if err != nil {
		l.failed.Inc()
	} else {
		l.succeeded.Inc()
	}
}
