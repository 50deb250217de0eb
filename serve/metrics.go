package serve

import (
	"context"
	_ "embed"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rayflow/rayflow/durable"
	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/serve/reader"
	"github.com/rayflow/rayflow/telemetry/prom"
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

var taskDesc = prometheus.NewDesc("rayflow_tasks", "Durable tasks by queue and state (of the flows the scraping principal may see).", []string{"queue", "state"}, nil)

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

// taskCounts is a collector of one scrape's task counts by queue. Every
// state of every queue that has tasks (and of the default queue always) is
// a series, zeros included, so a state that empties reads 0 rather than
// disappearing. Queue names are the operator's own small set, like the
// queue label of the latency families.
type taskCounts map[string]map[durable.State]float64

func (c taskCounts) add(queue string, st durable.State, n float64) {
	if c[queue] == nil {
		c[queue] = map[durable.State]float64{}
	}
	c[queue][st] = n
}

func (c taskCounts) Describe(ch chan<- *prometheus.Desc) { ch <- taskDesc }
func (c taskCounts) Collect(ch chan<- prometheus.Metric) {
	if c[durable.DefaultQueue] == nil {
		c[durable.DefaultQueue] = map[durable.State]float64{}
	}
	for queue, byState := range c {
		for _, st := range allStates {
			ch <- prometheus.MustNewConstMetric(taskDesc, prometheus.GaugeValue, byState[st], queue, string(st))
		}
	}
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request, principal string) {
	flows := s.tokens.Flows(principal)
	if len(flows) == 0 {
		s.fail(w, r, &reader.Error{Code: gread.ErrorCodeAccessDenied, Message: "access denied"})
		return
	}
	var flowArg []string
	if !slices.Contains(flows, "*") {
		flowArg = flows
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	counts := taskCounts{}
	rows, err := store.TaskCountsByQueue(ctx, s.pool, flowArg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for rows.Next() {
		var queue, st string
		var n int64
		if err := rows.Scan(&queue, &st, &n); err != nil {
			rows.Close()
			s.fail(w, r, err)
			return
		}
		if durable.State(st).Valid() { // bounded label values
			counts.add(queue, durable.State(st), float64(n))
		}
	}
	if err := rows.Err(); err != nil {
		s.fail(w, r, err)
		return
	}
	db, err := queryLatencies(ctx, s.pool, flowArg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	scrape := prometheus.NewRegistry()
	scrape.MustRegister(counts, db)
	if flowArg == nil {
		// A queue's admission gauges count the tasks of every flow: only
		// for a principal that may see every flow.
		adm, err := queryAdmission(ctx, s.pool, counts)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		scrape.MustRegister(adm)
	}
	w.Header().Set("Cache-Control", "no-store") // a principal's own counts
	promhttp.HandlerFor(prometheus.Gatherers{s.metrics.reg, scrape, prom.Gatherer()}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// Latencies derived from the database, so that /metrics shows them for
// every worker whatever process it runs in (each worker's own histograms
// are on its metrics listener: rayflow worker --metrics-addr):
//
//   - rayflow_recent_claim_latency_seconds{queue,stat}: statistics
//     (p50, p90, p99, max) of claim − max(enqueued, run after) over the
//     tasks claimed in the last RecentWindow; rayflow_recent_claims{queue}
//     counts them.
//   - rayflow_queue_oldest_eligible_seconds{queue}: how long the oldest
//     claimable QUEUED task has waited (0 when none).
//   - rayflow_progress_publication_lag_seconds{stat}: for the running
//     tasks with stored progress, now − the stored summary's updated_at:
//     how far behind the latest publication a reader is (a run publishes
//     only when its state changed, at most once per flush interval; the
//     summary's time is the worker's clock, now() the database's);
//     rayflow_progress_live_runs counts them.
//
// All are scoped to the scraping principal's flows, like rayflow_tasks.

// RecentWindow is the window of rayflow_recent_claim_latency_seconds.
const RecentWindow = 15 * time.Minute

var (
	claimLatencyDesc = prometheus.NewDesc("rayflow_recent_claim_latency_seconds",
		"Claim latency (claim time minus the time the task became claimable) of the tasks claimed in the last 15 minutes, by queue and statistic (p50, p90, p99, max).",
		[]string{"queue", "stat"}, nil)
	recentClaimsDesc = prometheus.NewDesc("rayflow_recent_claims",
		"Tasks claimed in the last 15 minutes (the claims of rayflow_recent_claim_latency_seconds), by queue.", []string{"queue"}, nil)
	oldestEligibleDesc = prometheus.NewDesc("rayflow_queue_oldest_eligible_seconds",
		"How long the oldest claimable QUEUED task has waited, by queue.", []string{"queue"}, nil)
	publicationLagDesc = prometheus.NewDesc("rayflow_progress_publication_lag_seconds",
		"Age of the stored progress summary of running tasks (now minus its updated_at), by statistic (p50, p90, p99, max).", []string{"stat"}, nil)
	liveRunsDesc = prometheus.NewDesc("rayflow_progress_live_runs",
		"Running tasks with stored progress (the runs of rayflow_progress_publication_lag_seconds).", nil, nil)
)

// stats are the label values of the database-derived latency gauges (a
// window's statistics, not a Prometheus summary: their counts are not
// cumulative).
var stats = []string{"p50", "p90", "p99", "max"}

type queueLatency struct {
	queue     string
	quantiles []float64
	count     int64
}

// dbLatencies is a collector of one scrape's database-derived latencies.
type dbLatencies struct {
	claims   []queueLatency
	oldest   map[string]float64
	lag      []float64
	liveRuns int64
}

func (c *dbLatencies) Describe(ch chan<- *prometheus.Desc) {
	ch <- claimLatencyDesc
	ch <- recentClaimsDesc
	ch <- oldestEligibleDesc
	ch <- publicationLagDesc
	ch <- liveRunsDesc
}

func (c *dbLatencies) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.claims {
		ch <- prometheus.MustNewConstMetric(recentClaimsDesc, prometheus.GaugeValue, float64(q.count), q.queue)
		for i, v := range q.quantiles {
			ch <- prometheus.MustNewConstMetric(claimLatencyDesc, prometheus.GaugeValue, v, q.queue, stats[i])
		}
	}
	for queue, v := range c.oldest {
		ch <- prometheus.MustNewConstMetric(oldestEligibleDesc, prometheus.GaugeValue, v, queue)
	}
	for i, v := range c.lag {
		ch <- prometheus.MustNewConstMetric(publicationLagDesc, prometheus.GaugeValue, v, stats[i])
	}
	ch <- prometheus.MustNewConstMetric(liveRunsDesc, prometheus.GaugeValue, float64(c.liveRuns))
}

// queryLatencies reads the database-derived latencies (three statements).
func queryLatencies(ctx context.Context, pool *pgxpool.Pool, flows []string) (*dbLatencies, error) {
	c := &dbLatencies{oldest: map[string]float64{}}
	rows, err := store.ClaimLatencies(ctx, pool, flows, RecentWindow.Seconds())
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var q queueLatency
		if err := rows.Scan(&q.queue, &q.count, &q.quantiles); err != nil {
			rows.Close()
			return nil, err
		}
		if len(q.quantiles) == len(stats) {
			c.claims = append(c.claims, q)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = store.OldestRunnable(ctx, pool, flows)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var queue string
		var v float64
		if err := rows.Scan(&queue, &v); err != nil {
			rows.Close()
			return nil, err
		}
		c.oldest[queue] = max(v, 0)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var lag []float64
	err = store.PublicationLag(ctx, pool, flows).Scan(&c.liveRuns, &lag)
	if err != nil {
		return nil, err
	}
	if len(lag) == len(stats) {
		c.lag = lag
	}
	return c, nil
}

// Fair admission gauges (docs/durable.md#fair-admission), one series per
// queue and family, never a concurrency key label: for every queue of
// rayflow_tasks and every queue with limits or keyed tasks (at most 64
// of those), zeros included. They count every flow's tasks, so only a
// principal allowed every flow scrapes them.
var (
	keyedQueuedDesc = prometheus.NewDesc("rayflow_queue_keyed_queued_tasks",
		"Queued tasks with a concurrency key, by queue.", []string{"queue"}, nil)
	keysRunningDesc = prometheus.NewDesc("rayflow_queue_keys_running",
		"Concurrency keys with a running (or cancelling) task, by queue.", []string{"queue"}, nil)
	keysAtLimitDesc = prometheus.NewDesc("rayflow_queue_keys_at_limit",
		"Concurrency keys whose running tasks reach the queue's per-key running limit, by queue.", []string{"queue"}, nil)
	perKeyLimitDesc = prometheus.NewDesc("rayflow_queue_per_key_running_limit",
		"The queue's per-key running limit (0: none), by queue.", []string{"queue"}, nil)
	rateLimitDesc = prometheus.NewDesc("rayflow_queue_starts_per_second_limit",
		"The queue's start rate limit in tasks per second, for all its workers together (0: none), by queue.", []string{"queue"}, nil)
	burstDesc = prometheus.NewDesc("rayflow_queue_start_burst",
		"The size of the queue's start-rate token bucket (0: no rate), by queue.", []string{"queue"}, nil)
	tokensDesc = prometheus.NewDesc("rayflow_queue_start_tokens",
		"The tokens in the queue's start-rate bucket now, one per start (0: no rate), by queue.", []string{"queue"}, nil)
)

// queueAdmission is one queue's fair admission gauges.
type queueAdmission struct {
	perKey, burst                     int64
	rate, tokens                      float64
	keyedQueued, keysRunning, atLimit int64
}

// admission is a collector of one scrape's fair admission gauges, by
// queue.
type admission map[string]queueAdmission

func (c admission) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{keyedQueuedDesc, keysRunningDesc, keysAtLimitDesc, perKeyLimitDesc, rateLimitDesc, burstDesc, tokensDesc} {
		ch <- d
	}
}

func (c admission) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, queue string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, queue)
	}
	for queue, a := range c {
		gauge(keyedQueuedDesc, float64(a.keyedQueued), queue)
		gauge(keysRunningDesc, float64(a.keysRunning), queue)
		gauge(keysAtLimitDesc, float64(a.atLimit), queue)
		gauge(perKeyLimitDesc, float64(a.perKey), queue)
		gauge(rateLimitDesc, a.rate, queue)
		gauge(burstDesc, float64(a.burst), queue)
		gauge(tokensDesc, a.tokens, queue)
	}
}

// queryAdmission reads the fair admission gauges (one statement): the
// queues with limits or keyed tasks, and zeros for the other queues of
// counts.
func queryAdmission(ctx context.Context, pool *pgxpool.Pool, counts taskCounts) (admission, error) {
	c := admission{}
	for queue := range counts {
		c[queue] = queueAdmission{}
	}
	c[durable.DefaultQueue] = queueAdmission{}
	rows, err := store.QueueAdmission(ctx, pool)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var queue string
		var perKey, burst *int64
		var rate, tokens *float64
		var a queueAdmission
		if err := rows.Scan(&queue, &perKey, &rate, &burst, &tokens, &a.keyedQueued, &a.keysRunning, &a.atLimit); err != nil {
			return nil, err
		}
		a.perKey, a.burst, a.rate, a.tokens = orZero(perKey), orZero(burst), orZero(rate), orZero(tokens)
		c[queue] = a
	}
	return c, rows.Err()
}

// orZero is *p, or the zero value for nil.
func orZero[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

//go:embed openapi.json
var openAPI []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(s.openAPI)
}
