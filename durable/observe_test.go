package durable

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/telemetry/prom"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// scrape reads the worker's metrics listener and returns the samples of
// queue (and the unlabelled ones) by "name{labels}".
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	var body []byte
	var err error
	testwait.Until(t, 5*time.Second, "scraping "+addr, func() bool {
		var resp *http.Response
		if resp, err = http.Get("http://" + addr + "/metrics"); err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil
	})
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// TestWorkerMetrics: after durable runs on a queue of its own, the
// worker's metrics listener shows the expected counts: claims, attempts
// by outcome (a success, a retried failure then success, a failure out of
// attempts), retries, no attempt running, progress publications; and
// every family passes the label lint.
func TestWorkerMetrics(t *testing.T) {
	e := newEnv(t)
	// Its own queue: the collectors are the process's, and count every
	// earlier test (and -count iteration) under theirs.
	queue := ownKey(t, "metrics-test")
	addr := freeAddr(t)
	o := fastOptions()
	o.Queue, o.MetricsAddr = queue, addr
	stop := runWorker(t, e.pool, o)
	ids := []string{
		e.enqueue("test.echo", `{"name":"m"}`, EnqueueOptions{Queue: queue}),
		e.enqueue("test.failonce", fmt.Sprintf("%q", ownKey(t, "metrics")), EnqueueOptions{Queue: queue}),
		e.enqueue("test.fail", `"m"`, EnqueueOptions{Queue: queue, MaxAttempts: 2}),
	}
	for _, id := range ids {
		e.wait(id, 30*time.Second)
	}
	// The worker records an attempt's metrics just before its transition:
	// wait for the last one to be counted.
	var got map[string]float64
	q := "queue=" + queue
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := testwait.Poll(ctx, 20*time.Millisecond, "3 failed attempts counted", func(context.Context) (bool, error) {
		got = scrape(t, addr)
		return got["rayflow_attempts_total{outcome=failed,"+q+"}"] == 3, nil
	}); err != nil {
		t.Log(err) // the comparison below says which samples differ
	}
	want := map[string]float64{
		"rayflow_attempts_total{outcome=succeeded," + q + "}":                 2,
		"rayflow_attempts_total{outcome=failed," + q + "}":                    3,
		"rayflow_retries_total{" + q + "}":                                    2,
		"rayflow_claim_latency_seconds{" + q + "}_count":                      5,
		"rayflow_attempt_duration_seconds{outcome=succeeded," + q + "}_count": 2,
		"rayflow_worker_running_tasks{" + q + "}":                             0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Every accepted publication writes a summary; each attempt's first
	// one a topology (pages and manifest) and detail rows.
	if got["rayflow_progress_publication_duration_seconds{outcome=ok,sink=postgres}_count"] < 5 ||
		got["rayflow_progress_publication_bytes{artefact=summary,sink=postgres}_count"] < 5 ||
		got["rayflow_progress_publication_bytes{artefact=topology,sink=postgres}_count"] < 5 ||
		got["rayflow_progress_publication_bytes{artefact=detail,sink=postgres}_count"] < 5 {
		t.Errorf("publications: %v", got)
	}
	if got["go_goroutines{}"] == 0 {
		t.Errorf("no runtime metrics")
	}
	mfs, err := prom.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range prom.LintFamilies(mfs) {
		t.Error(err)
	}
	// The listener ends with the worker.
	stop()
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("the metrics listener outlived its worker")
	}
}
