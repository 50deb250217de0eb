package prom

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rayflow/rayflow/telemetry"
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
	// process's runs (the progress sink's Publish), by sink and outcome
	// (ok, error) or artefact (summary, topology, detail).
	PublicationDuration *prometheus.HistogramVec
	PublicationBytes    *prometheus.HistogramVec
}

var (
	registry = prometheus.NewRegistry()
	// M are the process's collectors (registered in Registry).
	M = newMetrics()
)

func init() { telemetry.SetRecorder(Recorder()) }

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
			Help: "Canonical bytes each accepted progress publication wrote, by sink and artefact (summary: the summary record; " +
				"topology: the pages and manifest of a new topology; detail: the node detail rows written).",
			Buckets: prometheus.ExponentialBuckets(256, 4, 9)}, []string{"sink", "artefact"}),
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

// Recorder returns the telemetry.Recorder that records into M (the one
// this package installs).
func Recorder() telemetry.Recorder { return rec }

var rec = &recorder{}

// recorder resolves each engine's series once (a lookup by label values
// costs more than the count), in a copy-on-write map: engines are few.
type recorder struct {
	engines atomic.Pointer[map[string]*engineSeries]
	mu      sync.Mutex // serializes adding an engine
}

type engineSeries struct {
	submitted, succeeded, failed prometheus.Counter
	slots, inFlight              prometheus.Gauge
}

func (r *recorder) engine(e string) *engineSeries {
	if m := r.engines.Load(); m != nil {
		if s, ok := (*m)[e]; ok {
			return s
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.engines.Load()
	if old != nil {
		if s, ok := (*old)[e]; ok {
			return s
		}
	}
	s := &engineSeries{submitted: M.LeavesSubmitted.WithLabelValues(e),
		succeeded: M.LeavesFinished.WithLabelValues(e, telemetry.OutcomeSucceeded), failed: M.LeavesFinished.WithLabelValues(e, telemetry.OutcomeFailed),
		slots: M.MapWindowSlots.WithLabelValues(e), inFlight: M.MapItemsInFlight.WithLabelValues(e)}
	m := map[string]*engineSeries{e: s}
	if old != nil {
		maps.Copy(m, *old)
	}
	r.engines.Store(&m)
	return s
}

func (r *recorder) LeafSubmitted(engine string) { r.engine(engine).submitted.Inc() }

func (r *recorder) LeafFinished(engine, outcome string) {
	s := r.engine(engine)
	switch outcome {
	case telemetry.OutcomeSucceeded:
		s.succeeded.Inc()
	case telemetry.OutcomeFailed:
		s.failed.Inc()
	default:
		M.LeavesFinished.WithLabelValues(engine, outcome).Inc()
	}
}

func (r *recorder) MapWindowSlots(engine string, delta float64) { r.engine(engine).slots.Add(delta) }

func (r *recorder) MapItemsInFlight(engine string, delta float64) {
	r.engine(engine).inFlight.Add(delta)
}

func (r *recorder) Publication(sink, outcome string, d time.Duration) {
	M.PublicationDuration.WithLabelValues(sink, outcome).Observe(d.Seconds())
}

func (r *recorder) PublicationBytes(sink, artefact string, n int) {
	M.PublicationBytes.WithLabelValues(sink, artefact).Observe(float64(n))
}
