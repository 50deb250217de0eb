package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/sdk"
)

func TestRunSucceeds(t *testing.T) {
	e := newEnv(t)
	e.startWorker(fastOptions())
	id := e.enqueue("test.echo", `{"name":"ray"}`, EnqueueOptions{})
	task := e.wait(id, 20*time.Second)
	if task.State != StateSucceeded {
		t.Fatalf("state %s (%s: %s)", task.State, task.ErrorType, task.ErrorMessage)
	}
	var got string
	if err := json.Unmarshal(task.Result, &got); err != nil || got != "hello ray" {
		t.Fatalf("result %s (%v)", task.Result, err)
	}
	if task.Attempt != 1 || task.Generation != 1 || task.RunID == "" || task.PinnedAttempt != 1 || task.PlanFingerprint == "" {
		t.Fatalf("attempt %d generation %d run %q pinned %d fp %q", task.Attempt, task.Generation, task.RunID, task.PinnedAttempt, task.PlanFingerprint)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_plans WHERE fingerprint = $1 AND plan_json::jsonb IS NOT NULL`, task.PlanFingerprint); n != 1 {
		t.Fatalf("pinned plan stored %d times", n)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_tasks WHERE workflow_plan_selection::jsonb ? 'selected_strategy'`); n != 1 {
		t.Fatalf("selection not recorded")
	}
	if len(task.Attempts) != 1 || task.Attempts[0].State != StateSucceeded || task.Attempts[0].RunID != task.RunID ||
		string(task.Attempts[0].Result) != string(task.Result) {
		t.Fatalf("attempts %+v", task.Attempts)
	}
}

func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	url := pgtest.URL(t)
	pool := pgtest.PoolAt(t, url)
	ctx := t.Context()
	st, err := MigrationStatuses(ctx, pool)
	if err != nil || len(st) == 0 || !st[0].AppliedAt.IsZero() {
		t.Fatalf("fresh database: %+v, %v", st, err)
	}
	var wg sync.WaitGroup
	applied := make([][]int64, 6)
	errs := make([]error, 6)
	for i := range applied {
		wg.Go(func() { applied[i], errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += len(applied[i])
	}
	ms, _ := Migrations()
	if total != len(ms) {
		t.Fatalf("%d migrations applied in all, want each of %d once", total, len(ms))
	}
	st, err = MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.AppliedAt.IsZero() {
			t.Fatalf("migration %d not applied", s.Version)
		}
	}
	// A database migrated by a newer binary is refused.
	if _, err := pool.Exec(ctx, `INSERT INTO rayflow_schema_migrations (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, pool); !errors.Is(err, ErrSchemaAhead) {
		t.Fatalf("Migrate on a newer schema: %v, want ErrSchemaAhead", err)
	}
}

// Every bound is also a CHECK constraint: at the cap accepted, one over refused.
func TestSchemaChecks(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	insert := func(col string, val any) error {
		if col == "flow_name" {
			_, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, input_json, flow_name) VALUES (gen_random_uuid(), '1', $1)`, val)
			return err
		}
		_, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, `+col+`) VALUES (gen_random_uuid(), 'f', '1', $1)`, val)
		return err
	}
	mib := 1 << 20
	cases := []struct {
		col     string
		ok, bad any
	}{
		{"priority", 100, 101},
		{"priority", -100, -101},
		{"max_attempts", 100, 101},
		{"max_attempts", 1, 0},
		{"timeout_seconds", 1, 0},
		{"queue_timeout_seconds", 2147483647, 0},
		{"queue_name", strings.Repeat("q", 128), strings.Repeat("q", 129)},
		{"flow_name", strings.Repeat("f", 256), strings.Repeat("f", 257)},
		{"state", "EXPIRED", "DONE"},
		{"cancellation_status", "INDETERMINATE", "MAYBE"},
		{"workflow_plan_fingerprint", "sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 65)},
		{"execution_generation", 0, -1},
		{"error_message", strings.Repeat("e", 65536), strings.Repeat("e", 65537)},
	}
	for _, c := range cases {
		if c.col == "workflow_plan_fingerprint" {
			continue // needs its pinned attempt; below
		}
		if err := insert(c.col, c.ok); err != nil {
			t.Errorf("%s = %.20v refused: %v", c.col, c.ok, err)
		}
		if err := insert(c.col, c.bad); !isCheckViolation(err) {
			t.Errorf("%s = %.20v: %v, want a check violation", c.col, c.bad, err)
		}
	}
	ins2 := func(fp string) error {
		_, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, workflow_plan_fingerprint, workflow_plan_pinned_attempt) VALUES (gen_random_uuid(), 'f', '1', $1, 1)`, fp)
		return err
	}
	if err := ins2("sha256:" + strings.Repeat("a", 64)); err != nil {
		t.Error(err)
	}
	if err := ins2("sha256:" + strings.Repeat("a", 65)); !isCheckViolation(err) {
		t.Errorf("72-character fingerprint: %v", err)
	}
	// Input and result: 1 MiB accepted, one byte more refused.
	atCap := `"` + strings.Repeat("x", mib-2) + `"`
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json) VALUES (gen_random_uuid(), 'f', $1)`, atCap); err != nil {
		t.Errorf("1 MiB input refused: %v", err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json) VALUES (gen_random_uuid(), 'f', $1)`, atCap+" "); !isCheckViolation(err) {
		t.Errorf("1 MiB + 1 input: %v", err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, result_data) VALUES (gen_random_uuid(), 'f', '1', 'SUCCEEDED', $1)`, atCap); err != nil {
		t.Errorf("1 MiB result refused: %v", err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, result_data) VALUES (gen_random_uuid(), 'f', '1', 'SUCCEEDED', $1)`, atCap+" "); !isCheckViolation(err) {
		t.Errorf("1 MiB + 1 result: %v", err)
	}
	// A running task must be claimed; a result only on SUCCEEDED.
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state) VALUES (gen_random_uuid(), 'f', '1', 'RUNNING')`); !isCheckViolation(err) {
		t.Errorf("unclaimed RUNNING row: %v", err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, result_data) VALUES (gen_random_uuid(), 'f', '1', 'FAILED', '1')`); !isCheckViolation(err) {
		t.Errorf("result on a FAILED row: %v", err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO rayflow_tasks (task_id, flow_name, input_json) VALUES (gen_random_uuid(), 'f', '{')`); err == nil {
		t.Error("invalid input JSON accepted")
	}
}

func TestEnqueueRefusesBadInputAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	mib := 1 << 20
	cases := []struct {
		name, flow, input string
		o                 EnqueueOptions
		want              error
	}{
		{"unknown flow", "nope", `1`, EnqueueOptions{}, ErrUnknownFlow},
		{"wrong type", "test.noop", `"one"`, EnqueueOptions{}, ErrInvalidInput},
		{"unknown field", "test.echo", `{"name":"a","age":3}`, EnqueueOptions{}, ErrInvalidInput},
		{"trailing data", "test.noop", `1 2`, EnqueueOptions{}, ErrInvalidInput},
		{"not JSON", "test.noop", `{`, EnqueueOptions{}, ErrInvalidInput},
		{"input over 1 MiB", "test.upper", `"` + strings.Repeat("x", mib-1) + `"`, EnqueueOptions{}, ErrInputTooLarge},
		{"priority 101", "test.noop", `1`, EnqueueOptions{Priority: 101}, ErrInvalidOption},
		{"priority -101", "test.noop", `1`, EnqueueOptions{Priority: -101}, ErrInvalidOption},
		{"max attempts 101", "test.noop", `1`, EnqueueOptions{MaxAttempts: 101}, ErrInvalidOption},
		{"timeout 1.5 s", "test.noop", `1`, EnqueueOptions{Timeout: 1500 * time.Millisecond}, ErrInvalidOption},
		{"queue name 129", "test.noop", `1`, EnqueueOptions{Queue: strings.Repeat("q", 129)}, ErrInvalidOption},
	}
	for _, c := range cases {
		_, err := e.c.EnqueueJSON(ctx, c.flow, []byte(c.input), c.o)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if n := e.count(`SELECT count(*) FROM rayflow_tasks`); n != 0 {
		t.Fatalf("%d rows written by refused enqueues", n)
	}
	// At the caps: accepted.
	e.enqueue("test.upper", `"`+strings.Repeat("x", mib-2)+`"`, EnqueueOptions{Priority: 100, MaxAttempts: 100, Queue: strings.Repeat("q", 128)})
	e.enqueue("test.noop", `1`, EnqueueOptions{Priority: -100, Timeout: time.Second})
	// By value: only a registered flow.
	if _, err := Enqueue(ctx, e.c, sdk.Step(Echo), EchoIn{"x"}, EnqueueOptions{}); !errors.Is(err, ErrUnknownFlow) {
		t.Fatalf("unregistered flow value: %v", err)
	}
	if _, err := Enqueue(ctx, e.c, EchoFlow, EchoIn{"x"}, EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_tasks`); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}

func TestEnqueueTxFollowsTheCallersTransaction(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnqueueTx(ctx, e.c, tx, EchoFlow, EchoIn{"rolled back"}, EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_tasks`); n != 0 {
		t.Fatalf("rolled-back enqueue left %d rows", n)
	}
	tx, err = e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.c.EnqueueJSONTx(ctx, tx, "test.echo", []byte(`{"name":"committed"}`), EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.startWorker(fastOptions())
	if task := e.wait(id, 20*time.Second); task.State != StateSucceeded {
		t.Fatalf("%s", task.State)
	}
}

func TestAutomaticRetryUntilMaxAttempts(t *testing.T) {
	e := newEnv(t)
	e.startWorker(fastOptions())
	id := e.enqueue("test.fail", `"x"`, EnqueueOptions{})
	task := e.wait(id, 20*time.Second)
	if task.State != StateFailed || task.Attempt != 3 || len(task.Attempts) != 3 {
		t.Fatalf("state %s attempt %d archived %d", task.State, task.Attempt, len(task.Attempts))
	}
	for i, a := range task.Attempts {
		if a.State != StateFailed || a.Attempt != i+1 || a.ErrorType != "*durable.boomError" || !strings.HasSuffix(a.ErrorMessage, "boom: x") {
			t.Fatalf("attempt %d: %+v", i+1, a)
		}
		if i > 0 && a.Generation <= task.Attempts[i-1].Generation {
			t.Fatalf("generations not increasing: %+v", task.Attempts)
		}
	}
	// Retried once and then succeeds.
	id = e.enqueue("test.failonce", fmt.Sprintf("%q", ownKey(t, "k1")), EnqueueOptions{})
	task = e.wait(id, 20*time.Second)
	if task.State != StateSucceeded || task.Attempt != 2 || task.Attempts[0].State != StateFailed {
		t.Fatalf("fail once: %s at %d, %+v", task.State, task.Attempt, task.Attempts)
	}
	// MaxAttempts 1: no retry.
	id = e.enqueue("test.fail", `"y"`, EnqueueOptions{MaxAttempts: 1})
	if task = e.wait(id, 20*time.Second); task.State != StateFailed || task.Attempt != 1 {
		t.Fatalf("max 1: %s at %d", task.State, task.Attempt)
	}
}

func TestRetryDenylist(t *testing.T) {
	for _, tc := range []struct {
		r    runner
		name string
	}{
		{runners[0], "boomError"}, {runners[0], "durable.boomError"}, {runners[0], "github.com/rayflow/rayflow/durable.boomError"},
		// From a Ray leaf the error's package path does not cross the wire:
		// its short and package names match.
		{runners[1], "boomError"}, {runners[1], "durable.boomError"},
	} {
		t.Run(tc.r.name+"/"+tc.name, func(t *testing.T) {
			e := newEnv(t)
			o := fastOptions()
			o.RetryDenylist = []string{tc.name}
			e.startRunner(tc.r, o)
			id := e.enqueue("test.fail", `"x"`, EnqueueOptions{})
			if task := e.wait(id, 60*time.Second); task.State != StateFailed || task.Attempt != 1 {
				t.Fatalf("denylisted as %q: %s at attempt %d", tc.name, task.State, task.Attempt)
			}
		})
	}
}

func TestBackoffSchedule(t *testing.T) {
	for k, want := range map[int]float64{2: 60, 3: 120, 4: 240} {
		if got := backoffSeconds(DefaultRetryBackoff, k); got != want {
			t.Errorf("attempt %d: %v s, want %v", k, got, want)
		}
	}
	// The default backoff is applied to the row: attempt 2 not before 60 s.
	e := newEnv(t)
	o := fastOptions()
	o.NoRetryBackoff = false
	e.startWorker(o)
	id := e.enqueue("test.fail", `"x"`, EnqueueOptions{})
	task := e.waitState(id, StateQueued, 10*time.Second)
	for task.Attempt != 2 {
		task = e.waitState(id, StateQueued, 10*time.Second)
	}
	if d := task.RunAfter.Sub(task.EnqueuedAt); d < 59*time.Second || d > 61*time.Second {
		t.Fatalf("run_after - enqueued_at = %v, want 60 s", d)
	}
	if d := task.QueueDeadline.Sub(task.RunAfter); d != DefaultQueueTimeout {
		t.Fatalf("queue deadline %v after run_after, want %v", d, DefaultQueueTimeout)
	}
}

func TestTimeoutFailsWithoutRetry(t *testing.T) {
	e := newEnv(t)
	e.startWorker(fastOptions())
	id := e.enqueue("test.sleep", `60000`, EnqueueOptions{Timeout: time.Second})
	task := e.wait(id, 20*time.Second)
	if task.State != StateFailed || task.Attempt != 1 || task.ErrorType != "Timeout" {
		t.Fatalf("%s at %d: %s %s", task.State, task.Attempt, task.ErrorType, task.ErrorMessage)
	}
}

func TestResultSizeBound(t *testing.T) {
	e := newEnv(t)
	e.startWorker(fastOptions())
	// A JSON string of n characters encodes to n+2 bytes.
	ok := e.enqueue("test.big", fmt.Sprint(MaxResultBytes-2), EnqueueOptions{})
	over := e.enqueue("test.big", fmt.Sprint(MaxResultBytes-1), EnqueueOptions{})
	if task := e.wait(ok, 30*time.Second); task.State != StateSucceeded || len(task.Result) != MaxResultBytes {
		t.Fatalf("result at the cap: %s, %d bytes", task.State, len(task.Result))
	}
	task := e.wait(over, 30*time.Second)
	if task.State != StateFailed || task.Attempt != 1 || task.Result != nil || !strings.Contains(task.ErrorMessage, "over 1 MiB") {
		t.Fatalf("result over the cap: %s at %d, %d bytes, %q", task.State, task.Attempt, len(task.Result), task.ErrorMessage)
	}
}

func TestQueueDeadlineExpires(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue("test.noop", `1`, EnqueueOptions{QueueTimeout: time.Second})
	// Past the deadline, on the server's clock, before any worker exists.
	testwait.Until(t, 10*time.Second, "the queue deadline passed", func() bool {
		return e.count(`SELECT count(*) FROM rayflow_tasks WHERE task_id = $1 AND queue_deadline_at < now()`, id) == 1
	})
	e.startWorker(fastOptions())
	task := e.wait(id, 20*time.Second)
	if task.State != StateExpired || len(task.Attempts) != 1 || task.Attempts[0].State != StateExpired {
		t.Fatalf("%s, %+v", task.State, task.Attempts)
	}
	if out, err := e.c.Retry(t.Context(), id, Expect{}); err != nil || out != RetryAccepted {
		t.Fatalf("retry expired: %s %v", out, err)
	}
	if task = e.wait(id, 20*time.Second); task.State != StateSucceeded || task.Attempt != 2 {
		t.Fatalf("after retry: %s at %d", task.State, task.Attempt)
	}
}

func TestCancelAndRetryOutcomes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// QUEUED → CANCELLED at once.
	q := e.enqueue("test.noop", `1`, EnqueueOptions{RunAfter: time.Now().Add(time.Hour)})
	if out, err := e.c.Cancel(ctx, q, Expect{Attempt: 2}); err != nil || out != CancelStaleAttempt {
		t.Fatalf("stale cancel: %s %v", out, err)
	}
	if out, err := e.c.Cancel(ctx, q, Expect{Generation: 5}); err != nil || out != CancelStaleGeneration {
		t.Fatalf("stale cancel: %s %v", out, err)
	}
	if out, err := e.c.Cancel(ctx, q, Expect{Attempt: 1}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel queued: %s %v", out, err)
	}
	task, _ := e.c.Get(ctx, q)
	if task.State != StateCancelled || task.CancellationStatus != CancellationNotApplicable || len(task.Attempts) != 1 || task.Attempts[0].State != StateCancelled {
		t.Fatalf("cancelled queued: %+v", task)
	}
	if out, _ := e.c.Cancel(ctx, q, Expect{}); out != CancelAlreadyTerminal {
		t.Fatalf("cancel cancelled: %s", out)
	}
	if out, _ := e.c.Cancel(ctx, "00000000-0000-4000-8000-000000000000", Expect{}); out != CancelNotFound {
		t.Fatalf("cancel missing: %s", out)
	}
	if out, _ := e.c.Retry(ctx, "not-a-uuid", Expect{}); out != RetryNotFound {
		t.Fatalf("retry missing: %s", out)
	}
	// RUNNING → CANCELLING → CANCELLED, quickly (NOTIFY, not the heartbeat).
	o := fastOptions()
	o.HeartbeatInterval = time.Second
	e.startWorker(o)
	r := e.enqueue("test.sleep", `60000`, EnqueueOptions{})
	e.waitState(r, StateRunning, 10*time.Second)
	start := time.Now()
	if out, err := e.c.Cancel(ctx, r, Expect{}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel running: %s %v", out, err)
	}
	if out, _ := e.c.Cancel(ctx, r, Expect{}); out != CancelAlreadyRequested && out != CancelAlreadyTerminal {
		t.Fatalf("second cancel: %s", out)
	}
	task = e.wait(r, 10*time.Second)
	if task.State != StateCancelled || task.CancellationStatus != CancellationRequested || task.Attempts[0].State != StateCancelled {
		t.Fatalf("cancelled running: %s %s %+v", task.State, task.CancellationStatus, task.Attempts)
	}
	t.Logf("running task cancelled in %v", time.Since(start))
	// Retry outcomes.
	if out, _ := e.c.Retry(ctx, r, Expect{RunID: sdkrt.NewRunID()}); out != RetryStaleWorkflowIdentity {
		t.Fatalf("retry with another run id: %s", out)
	}
	if out, _ := e.c.Retry(ctx, r, Expect{Generation: task.Generation + 1}); out != RetryStaleGeneration {
		t.Fatalf("retry with another generation: %s", out)
	}
	if out, _ := e.c.Retry(ctx, r, Expect{Attempt: 7}); out != RetryStaleAttempt {
		t.Fatalf("retry with another attempt: %s", out)
	}
	if out, err := e.c.Retry(ctx, r, Expect{Attempt: 1, Generation: task.Generation, RunID: task.RunID}); err != nil || out != RetryAccepted {
		t.Fatalf("retry: %s %v", out, err)
	}
	e.waitState(r, StateRunning, 10*time.Second)
	if out, _ := e.c.Retry(ctx, r, Expect{}); out != RetryNotRetryable {
		t.Fatalf("retry running: %s", out)
	}
	if out, _ := e.c.Cancel(ctx, r, Expect{}); out != CancelAccepted {
		t.Fatalf("cancel again: %s", out)
	}
	task = e.wait(r, 10*time.Second)
	if task.State != StateCancelled || task.Attempt != 2 || len(task.Attempts) != 2 {
		t.Fatalf("%s at %d with %d archived", task.State, task.Attempt, len(task.Attempts))
	}
	s := e.enqueue("test.noop", `2`, EnqueueOptions{})
	e.wait(s, 10*time.Second)
	if out, _ := e.c.Retry(ctx, s, Expect{}); out != RetryNotRetryable {
		t.Fatalf("retry succeeded: %s", out)
	}
}

func TestCancelRunIgnoringContextIsIndeterminate(t *testing.T) {
	e := newEnv(t)
	o := fastOptions()
	o.CancelTimeout = 300 * time.Millisecond
	e.startWorker(o)
	id := e.enqueue("test.ignorectx", `3000`, EnqueueOptions{})
	e.waitState(id, StateRunning, 10*time.Second)
	if out, _ := e.c.Cancel(t.Context(), id, Expect{}); out != CancelAccepted {
		t.Fatal(out)
	}
	task := e.wait(id, 2*time.Second)
	if task.State != StateCancelled || task.CancellationStatus != CancellationIndeterminate || task.CancellationError == "" {
		t.Fatalf("%s %s %q", task.State, task.CancellationStatus, task.CancellationError)
	}
}

func TestListKeysetPagination(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	var ids []string
	for i := range 7 {
		ids = append(ids, e.enqueue("test.noop", fmt.Sprint(i), EnqueueOptions{RunAfter: time.Now().Add(time.Hour)}))
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		p, err := e.c.List(ctx, ListOptions{Limit: 3, Cursor: cursor, State: StateQueued})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, task := range p.Tasks {
			got = append(got, task.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if pages != 3 || len(got) != 7 {
		t.Fatalf("%d pages, %d tasks", pages, len(got))
	}
	for i := range got {
		if got[i] != ids[len(ids)-1-i] {
			t.Fatalf("order: %v vs %v", got, ids)
		}
	}
	if p, err := e.c.List(ctx, ListOptions{State: StateRunning}); err != nil || len(p.Tasks) != 0 {
		t.Fatalf("running: %v %v", p, err)
	}
	for _, bad := range []ListOptions{{Limit: 1001}, {Limit: -1}, {State: "DONE"}, {Cursor: "!!"}} {
		if _, err := e.c.List(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if p, err := e.c.List(ctx, ListOptions{Limit: 1000}); err != nil || len(p.Tasks) != 7 || p.Next != "" {
		t.Fatalf("limit 1000: %v", err)
	}
}

func TestClaimOrderPriorityThenAge(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, p := range []int{0, 5, -3, 5, 100, -100} {
		ids = append(ids, e.enqueue("test.noop", `1`, EnqueueOptions{Priority: p}))
	}
	want := []string{ids[4], ids[1], ids[3], ids[0], ids[2], ids[5]}
	o := fastOptions()
	o.Concurrency = 1
	e.startWorker(o)
	for _, id := range ids {
		e.wait(id, 10*time.Second)
	}
	rows, err := e.pool.Query(t.Context(), `SELECT task_id::text FROM rayflow_tasks ORDER BY started_at`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claim order\n got %v\nwant %v", got, want)
	}
}

// A retry whose plan only a changed binary's worker is alive to run is
// not claimed by it (build-aware claiming): at its queue deadline it
// fails, before any leaf, with a reason naming both fingerprints.
func TestPlanPinningRefusesAChangedPlan(t *testing.T) {
	e := newEnv(t)
	old, newer := NewRegistry(), NewRegistry()
	RegisterIn(old, "app.flow", FailFlow)
	RegisterIn(newer, "app.flow", UpperFlow) // same name and input type, another plan
	mNew, err := sdk.Materialize(UpperFlow)
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewClient(e.pool, old).EnqueueJSON(t.Context(), "app.flow", []byte(`"x"`), EnqueueOptions{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOptions()
	o.Registry, o.NoRetryBackoff, o.RetryBackoff = old, false, time.Hour
	stop := runWorker(t, e.pool, o)
	first := e.waitState(id, StateQueued, 10*time.Second)
	for first.Attempt != 2 {
		first = e.waitState(id, StateQueued, 10*time.Second)
	}
	stop()
	if first.PlanFingerprint == "" || first.PinnedAttempt != 1 || first.PlanFingerprint == mNew.Fingerprint {
		t.Fatalf("pin after attempt 1: %q at %d", first.PlanFingerprint, first.PinnedAttempt)
	}
	if _, err := e.pool.Exec(t.Context(), `UPDATE rayflow_tasks SET run_after = now(), queue_deadline_at = now() + interval '1 second' WHERE task_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	before := upperRuns.Load()
	o2 := fastOptions()
	o2.Registry = newer
	runWorker(t, e.pool, o2)
	task := e.wait(id, 10*time.Second)
	if task.State != StateFailed || task.Attempt != 2 || !errors.Is(ErrPlanChanged, ErrPlanChanged) ||
		!strings.Contains(task.ErrorMessage, first.PlanFingerprint) || !strings.Contains(task.ErrorMessage, mNew.Fingerprint) ||
		!strings.Contains(task.ErrorMessage, "pinned plan") {
		t.Fatalf("%s at %d: %q", task.State, task.Attempt, task.ErrorMessage)
	}
	if upperRuns.Load() != before {
		t.Fatal("a leaf ran although the plan changed")
	}
	if task.PlanFingerprint != first.PlanFingerprint || task.PinnedAttempt != 1 {
		t.Fatalf("the pin moved: %q at %d", task.PlanFingerprint, task.PinnedAttempt)
	}
}
