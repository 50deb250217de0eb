package serve

import (
	"context"
	_ "embed"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rayflow/rayflow/engine/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/read"
)

// Read kinds, the one label of the read latency histogram (bounded).
const (
	readSummary = "summary"
	readNodes   = "topology_nodes"
	readEdges   = "topology_edges"
	readDetails = "node_details"
	readNode    = "node"
	readGraph   = "graph_page"
)

// metrics are the server's Prometheus collectors. Task counts are not a
// registered collector: /metrics counts, in one query per scrape, the
// tasks of the flows the scraping principal may see.
type metrics struct {
	reg         *prometheus.Registry
	readLatency *prometheus.HistogramVec
}

var allStates = []durable.State{durable.StateQueued, durable.StateRunning, durable.StateCancelling, durable.StateCancelled,
	durable.StateSucceeded, durable.StateFailed, durable.StateLost, durable.StateExpired}

var taskDesc = prometheus.NewDesc("rayflow_tasks", "Durable tasks by state (of the flows the scraping principal may see).", []string{"state"}, nil)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), readLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rayflow_read_duration_seconds", Help: "Latency of the progress reads and graph pages served, by read kind.",
		Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5},
	}, []string{"read"})}
	m.reg.MustRegister(m.readLatency)
	return m
}

// observe records one read's latency (kind is one of the read constants).
func (m *metrics) observe(kind string, start time.Time) {
	m.readLatency.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// taskCounts is a collector of one scrape's task counts.
type taskCounts map[durable.State]float64

func (c taskCounts) Describe(ch chan<- *prometheus.Desc) { ch <- taskDesc }
func (c taskCounts) Collect(ch chan<- prometheus.Metric) {
	for _, st := range allStates {
		ch <- prometheus.MustNewConstMetric(taskDesc, prometheus.GaugeValue, c[st], string(st))
	}
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request, principal string) {
	flows := s.tokens.Flows(principal)
	if len(flows) == 0 {
		s.fail(w, r, &read.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"})
		return
	}
	var flowArg []string
	if !slices.Contains(flows, "*") {
		flowArg = flows
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	counts := taskCounts{}
	rows, err := s.pool.Query(ctx, `SELECT state, count(*) FROM rayflow_tasks WHERE ($1::text[] IS NULL OR flow_name = ANY($1)) GROUP BY state`, flowArg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			s.fail(w, r, err)
			return
		}
		if durable.State(st).Valid() { // bounded label values
			counts[durable.State(st)] = float64(n)
		}
	}
	if err := rows.Err(); err != nil {
		s.fail(w, r, err)
		return
	}
	scrape := prometheus.NewRegistry()
	scrape.MustRegister(counts)
	promhttp.HandlerFor(prometheus.Gatherers{s.metrics.reg, scrape}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

//go:embed openapi.json
var openAPI []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPI)
}
