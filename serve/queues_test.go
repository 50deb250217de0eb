package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve/internal/fixture"
)

// TestQueueRoutesRefused: the queue routes need a principal of every
// flow (403 for the others, before the request is looked at); a bad
// queue name, a limit out of its range (one over each cap), a burst
// without a rate and a body that is not a QueueLimits are a 400
// InputError naming the field; an enqueue's concurrency key over 200
// bytes, with a control character or not a string is a 400 naming
// concurrency_key. Nothing is written (decided before the
// database: it runs without one in -short).
func TestQueueRoutesRefused(t *testing.T) {
	s, count := enqueueServer(t)
	before := count()
	q129 := strings.Repeat("q", durable.MaxQueueNameLen+1)
	for _, tc := range []struct {
		name, principal, method, target, body string
		code                                  int
		field                                 string // of a 400
	}{
		{"read as a principal of some flows", "chain", "GET", "/api/queues/q", "", 403, ""},
		{"read as a principal of no flow", "nobody", "GET", "/api/queues/q", "", 403, ""},
		{"set as a principal of some flows", "chain", "PUT", "/api/queues/q/limits", `{"per_key_running":1}`, 403, ""},
		{"set a bad body as a principal of some flows", "other", "PUT", "/api/queues/" + q129 + "/limits", `{"per_key_running":-1}`, 403, ""},
		{"read a queue of 129 characters", "admin", "GET", "/api/queues/" + q129, "", 400, "queue"},
		{"read a queue with a control character", "admin", "GET", "/api/queues/a%01b", "", 400, "queue"},
		{"set a queue of 129 characters", "admin", "PUT", "/api/queues/" + q129 + "/limits", `{"per_key_running":1}`, 400, "queue"},
		{"per_key_running -1", "admin", "PUT", "/api/queues/q/limits", `{"per_key_running":-1}`, 400, "per_key_running"},
		{"per_key_running one over", "admin", "PUT", "/api/queues/q/limits", `{"per_key_running":1000001}`, 400, "per_key_running"},
		{"per_key_running not an integer", "admin", "PUT", "/api/queues/q/limits", `{"per_key_running":1.5}`, 400, "per_key_running"},
		{"starts_per_second one over", "admin", "PUT", "/api/queues/q/limits", `{"starts_per_second":1000001}`, 400, "starts_per_second"},
		{"starts_per_second just over", "admin", "PUT", "/api/queues/q/limits", `{"starts_per_second":1000000.001}`, 400, "starts_per_second"},
		{"starts_per_second negative", "admin", "PUT", "/api/queues/q/limits", `{"starts_per_second":-0.5}`, 400, "starts_per_second"},
		{"starts_per_second a string", "admin", "PUT", "/api/queues/q/limits", `{"starts_per_second":"5"}`, 400, "starts_per_second"},
		{"burst one over", "admin", "PUT", "/api/queues/q/limits", `{"starts_per_second":1,"burst":1000001}`, 400, "burst"},
		{"burst without a rate", "admin", "PUT", "/api/queues/q/limits", `{"burst":5}`, 400, "burst"},
		{"an unknown field", "admin", "PUT", "/api/queues/q/limits", `{"per_key":1}`, 400, "per_key"},
		{"no body", "admin", "PUT", "/api/queues/q/limits", ``, 400, ""},
		{"two objects", "admin", "PUT", "/api/queues/q/limits", `{} {}`, 400, ""},
		{"a body over 4 KiB", "admin", "PUT", "/api/queues/q/limits", `{"per_key_running":1` + strings.Repeat(" ", 4<<10) + `}`, 400, ""},
		{"enqueue a key of 201 bytes", "admin", "POST", "/api/tasks",
			`{"flow":"serve_echo","input":{"count":1},"concurrency_key":"` + strings.Repeat("k", durable.MaxConcurrencyKeyBytes+1) + `"}`, 400, "concurrency_key"},
		{"enqueue a key with a newline", "admin", "POST", "/api/tasks", `{"flow":"serve_echo","input":{"count":1},"concurrency_key":"a\nb"}`, 400, "concurrency_key"},
		{"enqueue a key that is a number", "admin", "POST", "/api/tasks", `{"flow":"serve_echo","input":{"count":1},"concurrency_key":5}`, 400, "concurrency_key"},
	} {
		var body map[string]any
		code := fixture.DoJSON(t, s, tc.method, tc.target, tokensOf[tc.principal], tc.body, &body)
		switch {
		case code != tc.code:
			t.Errorf("%s: %s %.60s: %d %v, want %d", tc.name, tc.method, tc.target, code, body, tc.code)
		case code == 403 && body["code"] != "ACCESS_DENIED":
			t.Errorf("%s: 403 %v", tc.name, body)
		case code == 400 && (body["code"] != "INVALID_ARGUMENT" || body["field"] != tc.field || body["message"] == ""):
			t.Errorf("%s: 400 %v, want INVALID_ARGUMENT naming %q", tc.name, body, tc.field)
		}
	}
	if n := count(); n != before {
		t.Fatalf("%d tasks written by refused requests", n-before)
	}
}

// Block is the step of test.block: it runs until released.
func Block(ctx context.Context, _ int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-released:
		return 1, nil
	}
}

// released ends the running Block steps (TestQueueRoutes makes it).
var released chan struct{}

// TestQueueRoutes on a real PostgreSQL: PUT /api/queues/{queue}/limits
// at every cap and with {} (no limits), GET /api/queues/{queue} (also of
// a queue name with a slash), an enqueue with a concurrency key of 200
// bytes shown in the task's status; then, with a worker and a per-key
// limit of 1, the queue's counts and the fair admission gauges of
// /metrics: one series per queue, no key in any label, and only for a
// principal of every flow.
func TestQueueRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s, _ := enqueueServer(t)
	released = make(chan struct{})
	do := func(method, target, body string, want int) durable.QueueStatus {
		t.Helper()
		var st durable.QueueStatus
		if code := fixture.DoJSON(t, s, method, target, tokensOf["admin"], body, &st); code != want {
			t.Fatalf("%s %s %s: %d %+v, want %d", method, target, body, code, st, want)
		}
		return st
	}
	for _, tc := range []struct {
		name, queue, body string
		want              durable.QueueLimits
		tokens            float64
	}{
		{"every limit at its cap", "caps", `{"per_key_running":1000000,"starts_per_second":1000000,"burst":1000000}`,
			durable.QueueLimits{PerKeyRunning: durable.MaxPerKeyRunning, StartsPerSecond: durable.MaxStartsPerSecond, Burst: durable.MaxPerKeyRunning}, 1000000},
		{"the smallest limits", "small", `{"per_key_running":1,"starts_per_second":0.001,"burst":1}`,
			durable.QueueLimits{PerKeyRunning: 1, StartsPerSecond: 0.001, Burst: 1}, 1},
		{"the default burst", "rate", `{"starts_per_second":2.5}`, durable.QueueLimits{StartsPerSecond: 2.5, Burst: 3}, 3},
		{"a queue of 128 characters", strings.Repeat("é", durable.MaxQueueNameLen), `{"per_key_running":7}`, durable.QueueLimits{PerKeyRunning: 7}, 0},
		{"a queue with a slash", "a/b", `{"per_key_running":2}`, durable.QueueLimits{PerKeyRunning: 2}, 0},
		{"{} removes the limits", "caps", `{}`, durable.QueueLimits{}, 0},
	} {
		target := "/api/queues/" + url.PathEscape(tc.queue)
		put := do("PUT", target+"/limits", tc.body, http.StatusOK)
		got := do("GET", target, "", http.StatusOK)
		if put.Queue != tc.queue || got.Queue != tc.queue || put.Limits != tc.want || got.Limits != tc.want {
			t.Errorf("%s: PUT %+v, GET %+v; want limits %+v", tc.name, put, got, tc.want)
		}
		if got.Tokens > tc.tokens || got.Tokens < tc.tokens*0.999 {
			t.Errorf("%s: %v tokens, want %v", tc.name, got.Tokens, tc.tokens)
		}
	}
	if st := do("GET", "/api/queues/never-used", "", http.StatusOK); st != (durable.QueueStatus{Queue: "never-used"}) {
		t.Errorf("a queue without limits or tasks: %+v", st)
	}

	// A key of 200 bytes in the task's status.
	key200 := strings.Repeat("k", durable.MaxConcurrencyKeyBytes)
	var en Enqueued
	if code := fixture.DoJSON(t, s, "POST", "/api/tasks", tokensOf["admin"],
		`{"flow":"serve_echo","input":{"count":1},"queue":"nobody","concurrency_key":"`+key200+`"}`, &en); code != http.StatusCreated {
		t.Fatalf("enqueue with a key: %d %+v", code, en)
	}
	var st TaskStatus
	if code := fixture.DoJSON(t, s, "GET", "/api/tasks/"+en.TaskID, tokensOf["admin"], "", &st); code != 200 || st.ConcurrencyKey != key200 {
		t.Errorf("status of a keyed task: %d %q", code, st.ConcurrencyKey)
	}

	// A worker, a per-key limit of 1: acme runs one of its three tasks,
	// beta its one.
	reg := durable.NewRegistry()
	durable.RegisterIn(reg, "test.block", sdk.Step(Block))
	c := durable.NewClient(s.pool, reg)
	do("PUT", "/api/queues/tenants/limits", `{"per_key_running":1}`, http.StatusOK)
	for _, key := range []string{"acme", "acme", "acme", "beta"} {
		if _, err := c.EnqueueJSON(t.Context(), "test.block", json.RawMessage("1"), durable.EnqueueOptions{Queue: "tenants", ConcurrencyKey: key}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := durable.NewWorker(s.pool, durable.WorkerOptions{ID: "tenants-worker", Registry: reg, Queue: "tenants", Concurrency: 4,
		PollMaxInterval: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { close(released); stop(); <-done })
	var tenants durable.QueueStatus
	testwait.Until(t, 20*time.Second, "two tasks of tenants running", func() bool {
		tenants = do("GET", "/api/queues/tenants", "", http.StatusOK)
		return tenants.Running == 2
	})
	want := durable.QueueStatus{Queue: "tenants", Limits: durable.QueueLimits{PerKeyRunning: 1}, Queued: 2, Running: 2, KeysQueued: 1,
		KeysRunning: 2, KeysAtLimit: 2}
	if d := cmp.Diff(want, tenants); d != "" {
		t.Errorf("GET /api/queues/tenants (-want +got):\n%s", d)
	}
	scrape := func(principal string) string {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tokensOf[principal])
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("/metrics as %s: %d %s", principal, w.Code, w.Body)
		}
		return w.Body.String()
	}
	body := scrape("admin")
	for _, line := range []string{
		`rayflow_queue_keyed_queued_tasks{queue="tenants"} 2`,
		`rayflow_queue_keys_running{queue="tenants"} 2`,
		`rayflow_queue_keys_at_limit{queue="tenants"} 2`,
		`rayflow_queue_per_key_running_limit{queue="tenants"} 1`,
		`rayflow_queue_starts_per_second_limit{queue="tenants"} 0`,
		`rayflow_queue_start_burst{queue="tenants"} 0`,
		`rayflow_queue_start_tokens{queue="tenants"} 0`,
		`rayflow_queue_keyed_queued_tasks{queue="nobody"} 1`,
		`rayflow_queue_per_key_running_limit{queue="small"} 1`,
		`rayflow_queue_starts_per_second_limit{queue="small"} 0.001`,
		`rayflow_queue_start_burst{queue="rate"} 3`,
		`rayflow_queue_keyed_queued_tasks{queue="default"} 0`,
	} {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	// One series per queue and family: the queues with limits (small,
	// rate, a/b, é…; caps has none now), with keyed tasks (nobody,
	// tenants) or with tasks (default, the queues the enqueues made).
	queues := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		if q, ok := strings.CutPrefix(l, `rayflow_queue_keyed_queued_tasks{queue="`); ok {
			q, _, _ = strings.Cut(q, `"`)
			if queues[q] {
				t.Errorf("two series of queue %q", q)
			}
			queues[q] = true
		}
	}
	for _, q := range []string{"small", "rate", "a/b", "nobody", "tenants", "default"} {
		if !queues[q] {
			t.Errorf("no series of queue %q: %v", q, queues)
		}
	}
	if strings.Contains(body, "acme") || strings.Contains(body, "beta") || strings.Contains(body, key200) {
		t.Error("a concurrency key is in /metrics")
	}
	if body := scrape("chain"); strings.Contains(body, "rayflow_queue_keys_running") {
		t.Error("a principal of some flows sees the queues' admission gauges")
	}
}

// FuzzDecodeQueueLimits: any body either decodes to limits that encode
// back to the same limits, or is refused with an INVALID_ARGUMENT
// InputError; nothing panics.
func FuzzDecodeQueueLimits(f *testing.F) {
	for _, seed := range []string{`{}`, `{"per_key_running":2,"starts_per_second":0.5,"burst":1}`, `{"burst":"x"}`, `{"x":1}`,
		`{} {}`, ``, `[1]`, `{"per_key_running":1e3}`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l, ie := decodeQueueLimits(bytes.NewReader(body))
		if ie != nil {
			if ie.Code != "INVALID_ARGUMENT" || ie.Message == "" {
				t.Fatalf("%q: refused with %+v", body, ie)
			}
			return
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		again, ie := decodeQueueLimits(bytes.NewReader(b))
		if ie != nil || again != l {
			t.Fatalf("%q: %+v encodes as %s, which decodes to %+v (%v)", body, l, b, again, ie)
		}
	})
}
