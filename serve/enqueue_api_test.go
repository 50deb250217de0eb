package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/serve/internal/fixture"
)

// squaresIn is the input of app.squares, a flow only its application's
// worker registers (not the server).
type squaresIn struct {
	Numbers []int    `json:"numbers"`
	Scale   *float64 `json:"scale,omitempty"`
}

func squares(_ context.Context, in squaresIn) (int, error) {
	total := 0
	for _, n := range in.Numbers {
		total += n * n
	}
	return total, nil
}

// TestEnqueueAPI: POST /api/tasks enqueues a flow the server registered
// (checked against its Go type) and a flow only a live worker publishes
// (checked against the published schema); every bad request is a 400
// InputError naming the body field (input.<path> inside the input), a
// queue no live worker serves is refused unless allow_unserved, and a
// principal without the body's flow gets 403 before the input is looked
// at. Nothing refused is written.
func TestEnqueueAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s, count := enqueueServer(t)
	appReg := durable.NewRegistry()
	durable.RegisterIn(appReg, "app.squares", sdk.Step(squares))
	w, err := durable.NewWorker(s.pool, durable.WorkerOptions{ID: "app-worker", Registry: appReg, Queue: "apps",
		PollMaxInterval: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	testwait.Until(t, 20*time.Second, "app.squares published", func() bool {
		flows, err := s.client.Flows(t.Context(), "app.squares")
		return err == nil && len(flows) == 1
	})
	before := count()
	fixture.PostInvalid(t, s, tokensOf["admin"], [][3]string{
		{"/api/tasks", "", ``},
		{"/api/tasks", "", `{"flow":"app.squares"`},
		{"/api/tasks", "color", `{"flow":"app.squares","color":"red"}`},
		{"/api/tasks", "priority", `{"flow":"app.squares","priority":"high"}`},
		{"/api/tasks", "flow", `{"input":{"numbers":[1]}}`},
		{"/api/tasks", "flow", `{"flow":"app.nope","input":1,"queue":"apps"}`},
		{"/api/tasks", "input.numbers[1]", `{"flow":"app.squares","input":{"numbers":[1,"2"]},"queue":"apps"}`},
		{"/api/tasks", "input.numbers", `{"flow":"app.squares","input":{},"queue":"apps"}`},
		{"/api/tasks", "input.extra", `{"flow":"app.squares","input":{"numbers":[],"extra":1},"queue":"apps"}`},
		{"/api/tasks", "input", `{"flow":"app.squares","input":null,"queue":"apps"}`},
		{"/api/tasks", "input", `{"flow":"serve_echo","input":{"count":"3"}}`},
		{"/api/tasks", "queue", `{"flow":"app.squares","input":{"numbers":[1]}}`},
		{"/api/tasks", "queue", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"\u0001"}`},
		{"/api/tasks", "priority", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","priority":101}`},
		{"/api/tasks", "priority", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","priority":-101}`},
		{"/api/tasks", "max_attempts", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","max_attempts":101}`},
		{"/api/tasks", "timeout_seconds", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","timeout_seconds":-1}`},
		{"/api/tasks", "run_at", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","run_at":"tomorrow"}`},
		{"/api/tasks", "run_at", `{"flow":"app.squares","input":{"numbers":[1]},"queue":"apps","run_at":1}`},
	})
	for _, denied := range []string{"chain", "nobody"} {
		var body map[string]any
		code := fixture.DoJSON(t, s, "POST", "/api/tasks", tokensOf[denied], `{"flow":"app.squares","input":{"numbers":"bad"},"queue":"apps"}`, &body)
		if code != http.StatusForbidden || body["code"] != "ACCESS_DENIED" {
			t.Errorf("as %s: %d %v", denied, code, body)
		}
	}
	if n := count(); n != before {
		t.Fatalf("%d tasks written by refused requests", n-before)
	}
	for _, c := range []struct {
		body, flow, queue, input string
		maxAttempts              int
		state                    durable.State
	}{
		{`{"flow":"app.squares","input":{"numbers":[1,2,3]},"queue":"apps","priority":100,"max_attempts":100}`, "app.squares", "apps", `{"numbers":[1,2,3]}`, 100, durable.StateSucceeded},
		{`{"flow":"app.squares","input":{"numbers":[4]},"queue":"later","allow_unserved":true,"priority":-100}`, "app.squares", "later", `{"numbers":[4]}`, 3, durable.StateQueued},
		{`{"flow":"serve_echo","input":{"count":3,"ratio":0.5},"timeout_seconds":2147483647}`, "serve_echo", "default", `{"count":3,"ratio":0.5}`, 3, durable.StateQueued},
		{`{"flow":"app.squares","input":{"numbers":[5]},"queue":"apps","run_at":"2999-01-01T00:00:00Z"}`, "app.squares", "apps", `{"numbers":[5]}`, 3, durable.StateQueued},
	} {
		var body Enqueued
		code := fixture.DoJSON(t, s, "POST", "/api/tasks", tokensOf["admin"], c.body, &body)
		if code != http.StatusCreated || body.Flow != c.flow || body.MaxAttempts != c.maxAttempts || body.State != "QUEUED" ||
			body.StatusURL != "/api/tasks/"+body.TaskID {
			t.Fatalf("POST %s: %d %+v", c.body, code, body)
		}
		var task *durable.Task
		testwait.Until(t, 20*time.Second, "task "+body.TaskID+" "+string(c.state), func() bool {
			task, err = s.client.Get(t.Context(), body.TaskID)
			return err == nil && task.State == c.state
		})
		var in any
		if task.Queue != c.queue || task.MaxAttempts != c.maxAttempts || json.Unmarshal(task.Input, &in) != nil || string(task.Input) != c.input {
			t.Errorf("task %s: queue %s, max attempts %d, input %s", body.TaskID, task.Queue, task.MaxAttempts, task.Input)
		}
		if c.flow == "app.squares" && c.queue == "apps" && c.state == durable.StateQueued && !task.RunAfter.Equal(time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("task %s: run after %v, want 2999-01-01", body.TaskID, task.RunAfter)
		}
		if c.state == durable.StateSucceeded && string(task.Result) != "14" {
			t.Errorf("task %s: result %s", body.TaskID, task.Result)
		}
	}
}

// TestEnqueueAPIUnique: POST /api/tasks with unique_key answers 201 for
// a new task and 200 with "duplicate": true and the holder for a held
// key; the key's bounds are checked at the cap and one over (400 naming
// the field); a retry of a task whose key another task took answers 409
// UNIQUE_KEY_HELD naming the holder.
func TestEnqueueAPIUnique(t *testing.T) {
	s, count := enqueueServer(t)
	key200, key201 := strings.Repeat("k", durable.MaxUniqueKeyBytes), strings.Repeat("k", durable.MaxUniqueKeyBytes+1)
	before := count()
	fixture.PostInvalid(t, s, tokensOf["admin"], [][3]string{
		{"/api/tasks", "unique_key", `{"flow":"serve_echo","input":{"count":1},"unique_key":"` + key201 + `"}`},
		{"/api/tasks", "unique_key", `{"flow":"serve_echo","input":{"count":1},"unique_key":"a\nb"}`},
		{"/api/tasks", "unique_key", `{"flow":"serve_echo","input":{"count":1},"unique_global":true}`},
		{"/api/tasks", "unique_key", `{"flow":"serve_echo","input":{"count":1},"unique_for_seconds":60}`},
		{"/api/tasks", "unique_key", `{"flow":"serve_echo","input":{"count":1},"unique_key":5}`},
		{"/api/tasks", "unique_for_seconds", `{"flow":"serve_echo","input":{"count":1},"unique_key":"k","unique_for_seconds":-1}`},
		{"/api/tasks", "unique_for_seconds", `{"flow":"serve_echo","input":{"count":1},"unique_key":"k","unique_for_seconds":2147483648}`},
		{"/api/tasks", "unique_global", `{"flow":"serve_echo","input":{"count":1},"unique_key":"k","unique_global":"yes"}`},
	})
	if testing.Short() {
		return
	}
	if n := count(); n != before {
		t.Fatalf("%d tasks written by refused requests", n-before)
	}
	enqueue := func(body string, want int) Enqueued {
		t.Helper()
		var out Enqueued
		if code := fixture.DoJSON(t, s, "POST", "/api/tasks", tokensOf["admin"], body, &out); code != want {
			t.Fatalf("POST %s: %d %+v, want %d", body, code, out, want)
		}
		return out
	}
	for _, c := range []struct{ name, first, dup string }{
		{"key at the cap", `{"flow":"serve_echo","input":{"count":1},"unique_key":"` + key200 + `"}`,
			`{"flow":"serve_echo","input":{"count":2},"unique_key":"` + key200 + `"}`},
		{"global, period at the cap", `{"flow":"serve_echo","input":{"count":1},"unique_key":"g","unique_global":true,"unique_for_seconds":2147483647}`,
			`{"flow":"serve_echo","input":{"count":3},"unique_key":"g","unique_global":true}`},
	} {
		first := enqueue(c.first, http.StatusCreated)
		dup := enqueue(c.dup, http.StatusOK)
		if first.Duplicate || !dup.Duplicate || dup.TaskID != first.TaskID || dup.State != "QUEUED" || dup.StatusURL != "/api/tasks/"+first.TaskID {
			t.Errorf("%s: first %+v, duplicate %+v", c.name, first, dup)
		}
	}
	held := enqueue(`{"flow":"serve_echo","input":{"count":1},"unique_key":"r","queue":"nobody"}`, http.StatusCreated)
	if code, body := post(t, s, "admin", "/api/tasks/"+held.TaskID+"/cancel", ""); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %v", code, body)
	}
	holder := enqueue(`{"flow":"serve_echo","input":{"count":1},"unique_key":"r","queue":"nobody"}`, http.StatusCreated)
	code, body := post(t, s, "admin", "/api/tasks/"+held.TaskID+"/retry", "")
	if code != http.StatusConflict || body["outcome"] != OutcomeUniqueKeyHeld || body["held_by"] != holder.TaskID {
		t.Fatalf("retry of a task whose key is held: %d %v, want 409 %s held by %s", code, body, OutcomeUniqueKeyHeld, holder.TaskID)
	}
}
