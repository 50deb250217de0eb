package serve

import (
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rayflow/rayflow/telemetry/prom"
)

// TestMetricsLatencies: /metrics derives claim latency, the oldest
// claimable task's wait and the progress publication lag from the
// database, scoped to the principal's flows; every family passes the
// label lint.
func TestMetricsLatencies(t *testing.T) {
	e := newEnv(t, 4)
	ctx := t.Context()
	// The fixture's running task became claimable 3 s before its claim.
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET enqueued_at = now() - interval '4 s', run_after = now() - interval '4 s',
  started_at = now() - interval '1 s' WHERE task_id = $1::uuid`, e.taskID); err != nil {
		t.Fatal(err)
	}
	// A claimable task has waited 10 s; one not yet claimable is ignored.
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, enqueued_at, run_after) VALUES
  (gen_random_uuid(), 'chain', '1', now() - interval '10 s', now() - interval '10 s'),
  (gen_random_uuid(), 'chain', '1', now() - interval '60 s', now() + interval '1 h')`); err != nil {
		t.Fatal(err)
	}
	// A task of another queue is counted under its queue.
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, queue_name, run_after) VALUES
  (gen_random_uuid(), 'chain', '1', 'bulk', now() + interval '1 h')`); err != nil {
		t.Fatal(err)
	}
	scrape := func(principal string) map[string]float64 {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tokensOf[principal])
		w := httptest.NewRecorder()
		e.s.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("/metrics as %s: %d %s", principal, w.Code, w.Body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(w.Body.String()))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		var list []*dto.MetricFamily
		for name, mf := range mfs {
			list = append(list, mf)
			for _, m := range mf.GetMetric() {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+"="+l.GetValue())
				}
				if m.Gauge != nil {
					out[name+"{"+strings.Join(ls, ",")+"}"] = m.Gauge.GetValue()
				}
			}
		}
		for _, err := range prom.LintFamilies(list) {
			t.Errorf("%s: %v", principal, err)
		}
		return out
	}
	got := scrape("chain")
	within := func(key string, lo, hi float64) {
		t.Helper()
		if v, ok := got[key]; !ok || v < lo || v > hi {
			t.Errorf("%s = %v (present %v), want %v…%v", key, v, ok, lo, hi)
		}
	}
	within("rayflow_recent_claims{queue=default}", 1, 1)
	for _, st := range stats {
		within("rayflow_recent_claim_latency_seconds{queue=default,stat="+st+"}", 2.5, 3.5)
	}
	within("rayflow_queue_oldest_eligible_seconds{queue=default}", 9.5, 30)
	within("rayflow_progress_live_runs{}", 1, 1)
	within("rayflow_progress_publication_lag_seconds{stat=max}", 1, 1e9) // the fixture's summary is from fixture.T0
	within("rayflow_tasks{queue=default,state=QUEUED}", 2, 2)
	within("rayflow_tasks{queue=bulk,state=QUEUED}", 1, 1)
	within("rayflow_tasks{queue=bulk,state=RUNNING}", 0, 0)

	got = scrape("other")
	within("rayflow_progress_live_runs{}", 0, 0)
	for k := range got {
		if strings.HasPrefix(k, "rayflow_recent_claim") || strings.HasPrefix(k, "rayflow_queue_oldest") || strings.HasPrefix(k, "rayflow_progress_publication_lag") {
			t.Errorf("another flow's principal sees %s", k)
		}
	}
}
