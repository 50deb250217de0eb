package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
)

// TestWriteTaskList: a page without concurrency keys is printed exactly
// as before keys existed (the columns and the spacing); a page where a
// task has a key gets a KEY column, "-" for the tasks without one.
func TestWriteTaskList(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	task := func(id, key string) *durable.Task {
		return &durable.Task{ID: id, State: durable.StateQueued, Flow: "sleep", Queue: "tenants", Priority: 5, Attempt: 1, MaxAttempts: 3,
			CreatedAt: at, ConcurrencyKey: key}
	}
	a, b := "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
	for _, tc := range []struct {
		name  string
		tasks []*durable.Task
		want  string
	}{
		{"no tasks", nil, "TASK ID  STATE  FLOW  QUEUE  PRIORITY  ATTEMPT  CREATED\n"},
		{"no keys", []*durable.Task{task(a, ""), task(b, "")},
			"TASK ID                               STATE   FLOW   QUEUE    PRIORITY  ATTEMPT  CREATED\n" +
				a + "  QUEUED  sleep  tenants  5         1/3      2026-12-04T17:00:00Z\n" +
				b + "  QUEUED  sleep  tenants  5         1/3      2026-12-04T17:00:00Z\n"},
		{"one key", []*durable.Task{task(a, "acme corp"), task(b, "")},
			"TASK ID                               STATE   FLOW   QUEUE    PRIORITY  ATTEMPT  CREATED               KEY\n" +
				a + "  QUEUED  sleep  tenants  5         1/3      2026-12-04T17:00:00Z  acme corp\n" +
				b + "  QUEUED  sleep  tenants  5         1/3      2026-12-04T17:00:00Z  -\n"},
	} {
		var out bytes.Buffer
		writeTaskList(&out, tc.tasks)
		if d := cmp.Diff(tc.want, out.String()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestQueuesCommands on a real PostgreSQL: queues set at the bounds'
// edges, show (text and JSON), clear; tasks enqueue --concurrency-key
// with a key of 200 bytes (201 is refused: TestFlagRangesAsDocumented),
// shown by tasks show and in tasks list's KEY column; and, with a worker
// running a per-key limit of 1, queues show's counts of the running key
// at its limit.
func TestQueuesCommands(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	show := func(queue string) durable.QueueStatus {
		t.Helper()
		code, out, errOut := runCLI(t, "", "queues", "show", queue, "--json")
		var st durable.QueueStatus
		if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("queues show %s --json: %d %q %q", queue, code, out, errOut)
		}
		return st
	}
	q128 := strings.Repeat("é", durable.MaxQueueNameLen)
	for _, tc := range []struct {
		name  string
		args  []string
		want  durable.QueueLimits
		lines []string // in the text output
	}{
		// A new queue row: the bucket starts full.
		{"every limit at its cap", []string{"set", "q", "--per-key-running", "1000000", "--starts-per-second", "1000000", "--burst", "1000000"},
			durable.QueueLimits{PerKeyRunning: durable.MaxPerKeyRunning, StartsPerSecond: durable.MaxStartsPerSecond, Burst: durable.MaxPerKeyRunning},
			[]string{"per-key running:    1000000", "starts per second:  1e+06 (burst 1000000)", "tokens:             1000000.00"}},
		{"per-key limit 1", []string{"set", "q", "--per-key-running", "1"}, durable.QueueLimits{PerKeyRunning: 1},
			[]string{"per-key running:    1", "starts per second:  no limit"}},
		{"a rate replaces every limit, burst by default", []string{"set", "q", "--starts-per-second", "0.5"}, durable.QueueLimits{StartsPerSecond: 0.5, Burst: 1},
			[]string{"per-key running:    no limit", "starts per second:  0.5 (burst 1)"}},
		{"burst 1", []string{"set", "q", "--starts-per-second", "2.5", "--burst", "1"}, durable.QueueLimits{StartsPerSecond: 2.5, Burst: 1}, nil},
		{"all zero is no limit", []string{"set", "q", "--per-key-running", "0", "--starts-per-second", "0"}, durable.QueueLimits{},
			[]string{"per-key running:    no limit", "starts per second:  no limit"}},
		{"queue of 128 characters", []string{"set", q128, "--per-key-running", "3"}, durable.QueueLimits{PerKeyRunning: 3}, nil},
		{"clear", []string{"clear", q128}, durable.QueueLimits{}, []string{"queue:              " + q128, "per-key running:    no limit"}},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"queues"}, tc.args...)...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%s: queues %q: exit %d %q %q", tc.name, tc.args, code, out, errOut)
		}
		for _, l := range tc.lines {
			if !strings.Contains(out, l+"\n") {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, l, out)
			}
		}
		if got := show(tc.args[1]).Limits; got != tc.want {
			t.Errorf("%s: limits %+v, want %+v", tc.name, got, tc.want)
		}
	}

	// Keys: 200 bytes are stored and shown; a list without keys has no
	// KEY column.
	key200 := strings.Repeat("k", durable.MaxConcurrencyKeyBytes)
	enqueue := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"tasks", "enqueue", "sleep"}, args...)...)
		if code != exitOK {
			t.Fatalf("enqueue %q: exit %d %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	plain := enqueue("--input", "1", "--queue", "plain")
	if _, out, _ := runCLI(t, "", "tasks", "list", "--queue", "plain"); strings.Contains(out, "KEY") || !strings.Contains(out, plain) {
		t.Errorf("list without keys:\n%s", out)
	}
	long := enqueue("--input", "1", "--queue", "plain", "--concurrency-key", key200)
	if code, out, _ := runCLI(t, "", "tasks", "show", long); code != exitOK || !strings.Contains(out, "concurrency key:") || !strings.Contains(out, ` "`+key200+`"`+"\n") {
		t.Errorf("show of a keyed task: %d\n%s", code, out)
	}
	code, out, _ := runCLI(t, "", "tasks", "list", "--queue", "plain")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 3 || !strings.HasSuffix(lines[0], "  KEY") ||
		!strings.HasSuffix(lines[1], "  "+key200) || !strings.HasSuffix(lines[2], "  -") {
		t.Errorf("list with a key: %d\n%s", code, out)
	}
	if _, out, _ := runCLI(t, "", "tasks", "show", plain); strings.Contains(out, "concurrency key") {
		t.Errorf("show of a task without a key:\n%s", out)
	}

	// A per-key limit of 1 with a worker: one task of the key runs, the
	// others wait, and queues show counts the key at its limit.
	if code, _, errOut := runCLI(t, "", "queues", "set", "tenants", "--per-key-running", "1"); code != exitOK {
		t.Fatalf("queues set: %d %s", code, errOut)
	}
	var ids []string
	for range 3 {
		ids = append(ids, enqueue("--input", "60000", "--queue", "tenants", "--concurrency-key", "acme"))
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var b strings.Builder
		done <- run(ctx, []string{"worker", "--queue", "tenants", "--concurrency", "4", "--poll-max-interval", "200ms"},
			env{stdin: strings.NewReader(""), stdout: &b, stderr: &b})
	}()
	t.Cleanup(func() { stop(); <-done })
	var st durable.QueueStatus
	testwait.Until(t, 30*time.Second, "one task of acme running", func() bool {
		st = show("tenants")
		return st.Running == 1
	})
	want := durable.QueueStatus{Queue: "tenants", Limits: durable.QueueLimits{PerKeyRunning: 1}, Queued: 2, Running: 1, KeysQueued: 1,
		KeysRunning: 1, KeysAtLimit: 1}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("queues show (-want +got):\n%s", d)
	}
	_, out, _ = runCLI(t, "", "queues", "show", "tenants")
	for _, l := range []string{"queued:             2", "running:            1", "keys at limit:      1"} {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("queues show lacks %q:\n%s", l, out)
		}
	}
	for _, id := range ids {
		runCLI(t, "", "tasks", "cancel", id)
	}
	testwait.Until(t, 30*time.Second, "the tasks of acme cancelled", func() bool {
		st = show("tenants")
		return st.Running == 0 && st.Queued == 0
	})
	if st.KeysAtLimit != 0 || st.KeysRunning != 0 {
		t.Errorf("after cancel: %+v", st)
	}
}
