package durable

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestFairAdmissionOptionBounds: a concurrency key at its byte cap and
// one over, control characters, invalid UTF-8; queue limits at their caps
// and one over; each refused with an *OptionError naming its field.
func TestFairAdmissionOptionBounds(t *testing.T) {
	check := func(name string, err error, option string) {
		t.Helper()
		var oe *OptionError
		switch {
		case option == "" && err != nil:
			t.Errorf("%s: %v, want accepted", name, err)
		case option != "" && (!errors.As(err, &oe) || oe.Option != option || !errors.Is(err, ErrInvalidOption)):
			t.Errorf("%s: %v, want an OptionError naming %s", name, err, option)
		}
	}
	for _, c := range []struct {
		name, key, option string
	}{
		{"none", "", ""},
		{"one byte", "k", ""},
		{"200 bytes", strings.Repeat("k", MaxConcurrencyKeyBytes), ""},
		{"200 bytes of 2-byte characters", strings.Repeat("é", MaxConcurrencyKeyBytes/2), ""},
		{"201 bytes", strings.Repeat("k", MaxConcurrencyKeyBytes+1), "ConcurrencyKey"},
		{"newline", "a\nb", "ConcurrencyKey"},
		{"NUL", "a\x00", "ConcurrencyKey"},
		{"invalid UTF-8", "a\xff", "ConcurrencyKey"},
	} {
		_, err := EnqueueOptions{ConcurrencyKey: c.key}.normalize()
		check("key "+c.name, err, c.option)
	}
	for _, c := range []struct {
		name   string
		l      QueueLimits
		option string
		burst  int // the normalized burst, when accepted
	}{
		{"none", QueueLimits{}, "", 0},
		{"per key 1", QueueLimits{PerKeyRunning: 1}, "", 0},
		{"per key at the cap", QueueLimits{PerKeyRunning: MaxPerKeyRunning}, "", 0},
		{"per key one over", QueueLimits{PerKeyRunning: MaxPerKeyRunning + 1}, "PerKeyRunning", 0},
		{"per key negative", QueueLimits{PerKeyRunning: -1}, "PerKeyRunning", 0},
		{"rate, default burst rounds up", QueueLimits{StartsPerSecond: 2.5}, "", 3},
		{"small rate, burst 1", QueueLimits{StartsPerSecond: 0.01}, "", 1},
		{"rate at the cap", QueueLimits{StartsPerSecond: MaxStartsPerSecond}, "", MaxStartsPerSecond},
		{"rate over the cap", QueueLimits{StartsPerSecond: MaxStartsPerSecond * (1 + 1e-9)}, "StartsPerSecond", 0},
		{"rate NaN", QueueLimits{StartsPerSecond: math.NaN()}, "StartsPerSecond", 0},
		{"rate negative", QueueLimits{StartsPerSecond: -1}, "StartsPerSecond", 0},
		{"burst at the cap", QueueLimits{StartsPerSecond: 1, Burst: MaxPerKeyRunning}, "", MaxPerKeyRunning},
		{"burst one over", QueueLimits{StartsPerSecond: 1, Burst: MaxPerKeyRunning + 1}, "Burst", 0},
		{"burst without a rate", QueueLimits{Burst: 5}, "Burst", 0},
	} {
		got, err := c.l.normalize()
		check("limits "+c.name, err, c.option)
		if err == nil && got.Burst != c.burst {
			t.Errorf("limits %s: burst %d, want %d", c.name, got.Burst, c.burst)
		}
	}
}

// A bad key or bad limits write nothing.
func TestFairAdmissionRefusesBadInputAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.c.EnqueueJSON(ctx, "test.noop", []byte(`1`), EnqueueOptions{ConcurrencyKey: strings.Repeat("k", MaxConcurrencyKeyBytes+1)}); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("enqueue with a 201-byte key: %v, want ErrInvalidOption", err)
	}
	if err := e.c.SetQueueLimits(ctx, "default", QueueLimits{PerKeyRunning: MaxPerKeyRunning + 1}); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("limits one over the cap: %v, want ErrInvalidOption", err)
	}
	if n := e.count(`SELECT (SELECT count(*) FROM rayflow_tasks) + (SELECT count(*) FROM rayflow_queues)`); n != 0 {
		t.Fatalf("%d rows written by refused calls", n)
	}
}

// Limits round-trip through Client.Queue, a zero QueueLimits removes
// them, and a task and its repair keep their key.
func TestQueueLimitsAndKeyRecords(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if err := e.c.SetQueueLimits(ctx, "tenants", QueueLimits{PerKeyRunning: 3, StartsPerSecond: 2.5}); err != nil {
		t.Fatal(err)
	}
	id := e.enqueue("test.fail", `"boom"`, EnqueueOptions{Queue: "tenants", ConcurrencyKey: "acme", MaxAttempts: 1})
	e.enqueue("test.noop", `1`, EnqueueOptions{Queue: "tenants", ConcurrencyKey: "globex"})
	st, err := e.c.Queue(ctx, "tenants")
	if err != nil {
		t.Fatal(err)
	}
	want := QueueStatus{Queue: "tenants", Limits: QueueLimits{PerKeyRunning: 3, StartsPerSecond: 2.5, Burst: 3}, Tokens: 3, Queued: 2, KeysQueued: 2}
	if *st != want {
		t.Fatalf("Queue = %+v, want %+v", *st, want)
	}
	o := fastOptions()
	o.Queue = "tenants"
	e.startWorker(o)
	task := e.wait(id, 20*time.Second)
	if task.State != StateFailed || task.ConcurrencyKey != "acme" {
		t.Fatalf("task %s: %s key %q, want FAILED with key acme", id, task.State, task.ConcurrencyKey)
	}
	repair, err := e.c.Repair(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := e.c.Get(ctx, repair); err != nil || r.ConcurrencyKey != "acme" {
		t.Fatalf("repair task: %+v, %v; want key acme", r, err)
	}
	if err := e.c.SetQueueLimits(ctx, "tenants", QueueLimits{}); err != nil {
		t.Fatal(err)
	}
	if st, err := e.c.Queue(ctx, "tenants"); err != nil || st.Limits != (QueueLimits{}) {
		t.Fatalf("after removing the limits: %+v, %v", st, err)
	}
}

// Many workers, each claiming several tasks at once, never run more than
// the per-key limit (checked from the attempt rows); a tenant that
// enqueues after another's backlog starts at once; tasks without a key
// run beside them.
func TestWorkersHoldThePerKeyLimit(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const limit = 2
	if err := e.c.SetQueueLimits(ctx, "default", QueueLimits{PerKeyRunning: limit}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		e.enqueue("test.sleep", `40`, EnqueueOptions{ConcurrencyKey: fmt.Sprint("big-", i%2)})
	}
	for range 4 {
		o := fastOptions()
		o.Concurrency = 5
		e.startWorker(o)
	}
	e.waitState(e.enqueue("test.sleep", `40`, EnqueueOptions{ConcurrencyKey: "late"}), StateSucceeded, 20*time.Second)
	plain := e.enqueue("test.noop", `7`, EnqueueOptions{})
	e.wait(plain, 20*time.Second)
	if n := e.count(`SELECT count(*) FROM rayflow_tasks WHERE state = 'QUEUED' AND concurrency_key LIKE 'big-%'`); n == 0 {
		t.Fatal("the backlog ran out before the late tenant's task ran: the test proves nothing; enlarge it")
	}
	testwaitAll(t, e, 60*time.Second)
	var maxAtOnce int
	if err := e.pool.QueryRow(ctx, `SELECT max(n) FROM (
  SELECT (SELECT count(*) FROM rayflow_task_attempts b JOIN rayflow_tasks u ON u.id = b.task_pk
     WHERE u.concurrency_key = t.concurrency_key AND b.started_at <= a.started_at AND b.finished_at > a.started_at) AS n
  FROM rayflow_task_attempts a JOIN rayflow_tasks t ON t.id = a.task_pk WHERE t.concurrency_key IS NOT NULL) x`).Scan(&maxAtOnce); err != nil {
		t.Fatal(err)
	}
	if maxAtOnce != limit {
		t.Fatalf("attempt rows: at most %d tasks of one key ran at once, want exactly the limit %d", maxAtOnce, limit)
	}
}

// testwaitAll waits until every task of e succeeded.
func testwaitAll(t *testing.T, e *env, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for e.count(`SELECT count(*) FROM rayflow_tasks WHERE state <> 'SUCCEEDED'`) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks not SUCCEEDED after %v", e.count(`SELECT count(*) FROM rayflow_tasks WHERE state <> 'SUCCEEDED'`), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A start rate bounds the tasks the queue's workers start per second,
// together; workers that started before the limits were set obey them.
func TestWorkersHoldTheStartRate(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	for range 2 {
		e.startWorker(fastOptions())
	}
	e.wait(e.enqueue("test.noop", `1`, EnqueueOptions{}), 20*time.Second) // the workers claim plainly
	const rate, burst, n = 20.0, 1, 21
	if err := e.c.SetQueueLimits(ctx, "default", QueueLimits{StartsPerSecond: rate, Burst: burst}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e.enqueue("test.noop", fmt.Sprint(100+i), EnqueueOptions{})
	}
	testwaitAll(t, e, 30*time.Second)
	var span float64
	if err := e.pool.QueryRow(ctx, `SELECT extract(epoch FROM max(started_at) - min(started_at)) FROM rayflow_tasks WHERE input_json <> '1'`).Scan(&span); err != nil {
		t.Fatal(err)
	}
	// n starts take at least (n − burst) / rate seconds.
	if least := float64(n-burst) / rate; span < least*0.95 {
		t.Fatalf("%d starts spanned %.3f s, want ≥ %.3f s at %v per second", n, span, least, rate)
	}
}
