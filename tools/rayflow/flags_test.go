package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/sdk"
)

// TestFlagRangesAsDocumented: flag values outside the ranges the help
// states are refused with exit 2 and a message naming the range or form,
// before anything is connected to; the values at the edges are accepted.
// (The accepted edges of tasks are stored: TestTaskFlagEdgesStored.)
func TestFlagRangesAsDocumented(t *testing.T) {
	t.Parallel()
	manifest := []string{"rayjob", "manifest", "--name", "fanout", "--image", "ghcr.io/x/fanout:1", "--exe", "/opt/fanout", "--input", "1"}
	m := func(extra ...string) []string {
		return append(append(append([]string{}, manifest...), extra...), "fanout")
	}
	queueForm := "durable: invalid option: queue name of "
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // prefix of stderr ("" when it must be empty)
	}{
		{"enqueue max-attempts 0", []string{"tasks", "enqueue", "fanout", "--input", "1", "--max-attempts", "0"}, exitUsage, "rayflow: --max-attempts 0: must be between 1 and 100\n"},
		{"enqueue max-attempts 101", []string{"tasks", "enqueue", "fanout", "--input", "1", "--max-attempts", "101"}, exitUsage, "rayflow: --max-attempts 101: must be between 1 and 100\n"},
		{"enqueue max-attempts -1", []string{"tasks", "enqueue", "fanout", "--input", "1", "--max-attempts", "-1"}, exitUsage, "rayflow: --max-attempts -1: must be between 1 and 100\n"},
		{"list limit 0", []string{"tasks", "list", "--limit", "0"}, exitUsage, "rayflow: --limit 0: must be between 1 and 1000\n"},
		{"list limit 1001", []string{"tasks", "list", "--limit", "1001"}, exitUsage, "rayflow: --limit 1001: must be between 1 and 1000\n"},
		{"enqueue empty queue", []string{"tasks", "enqueue", "fanout", "--input", "1", "--queue", ""}, exitUsage, "rayflow: --queue: " + queueForm + "0 characters (1–128)\n"},
		{"list empty queue", []string{"tasks", "list", "--queue", ""}, exitUsage, "rayflow: --queue: " + queueForm + "0 characters (1–128)\n"},
		{"enqueue queue of 129", []string{"tasks", "enqueue", "fanout", "--input", "1", "--queue", strings.Repeat("q", 129)}, exitUsage, "rayflow: --queue: " + queueForm + "129 characters (1–128)\n"},
		{"enqueue queue with a newline", []string{"tasks", "enqueue", "fanout", "--input", "1", "--queue", "a\nb"}, exitUsage,
			`rayflow: --queue: durable: invalid option: queue name "a\nb" has a control character (1–128 characters, none of them a control character)` + "\n"},
		{"list queue with a tab", []string{"tasks", "list", "--queue", "a\tb"}, exitUsage, `rayflow: --queue: durable: invalid option: queue name "a\tb" has a control character`},
		{"enqueue fanout without --input", []string{"tasks", "enqueue", "fanout"}, exitUsage,
			"rayflow: tasks enqueue fanout: the flow's input is required (int): pass --input JSON, or --input - to read it from stdin\n"},
		{"enqueue sleep without --input", []string{"tasks", "enqueue", "sleep", "--priority", "1"}, exitUsage, "rayflow: tasks enqueue sleep: the flow's input is required (int): "},
		{"enqueue recovery without --input", []string{"tasks", "enqueue", "recovery"}, exitUsage, "rayflow: tasks enqueue recovery: the flow's input is required (recoveryflow.Request): "},
		{"enqueue unique key of 201 bytes", []string{"tasks", "enqueue", "fanout", "--input", "1", "--unique-key", strings.Repeat("k", 201)}, exitUsage,
			"rayflow: --unique-key: durable: invalid option: a unique key is 1 to 200 bytes of UTF-8 without control characters (got 201 bytes)\n"},
		{"enqueue unique key with a newline", []string{"tasks", "enqueue", "fanout", "--input", "1", "--unique-key", "a\nb"}, exitUsage, "rayflow: --unique-key: durable: invalid option: a unique key is 1 to 200 bytes"},
		{"enqueue unique-global without a key", []string{"tasks", "enqueue", "fanout", "--input", "1", "--unique-global"}, exitUsage,
			"rayflow: --unique-key: durable: invalid option: a unique scope (global or a period) without a unique key\n"},
		{"enqueue unique-for 1.5s", []string{"tasks", "enqueue", "fanout", "--input", "1", "--unique-key", "k", "--unique-for", "1500ms"}, exitUsage,
			"rayflow: --unique-for: durable: invalid option: unique period 1.5s is not a whole number of seconds in 1…2147483647\n"},
		{"manifest memory at the largest", m("--memory", "9223372036854775806"), exitOK, ""},
		{"manifest memory 7Ei", m("--memory", "7Ei"), exitOK, ""},
		{"manifest memory one over", m("--memory", "9223372036854775807"), exitUsage, `rayflow: invalid RayJob manifest: memory "9223372036854775807": must be at most 9223372036854775806 bytes` + "\n"},
		{"manifest memory 8Ei", m("--memory", "8Ei"), exitUsage, `rayflow: invalid RayJob manifest: memory "8Ei": must be at most 9223372036854775806 bytes` + "\n"},
		{"manifest memory 99999999999999999999Ei", m("--memory", "99999999999999999999Ei"), exitUsage, `rayflow: invalid RayJob manifest: memory "99999999999999999999Ei": must be at most`},
		{"manifest cpu at the largest", m("--cpu", "9223372036854775.807"), exitOK, ""},
		{"manifest cpu one millicore over", m("--cpu", "9223372036854775.808"), exitUsage, `rayflow: invalid RayJob manifest: cpu "9223372036854775.808": must be at most 9223372036854775.807 cores` + "\n"},
		{"manifest id", m("--id", "fanout-200-1"), exitOK, ""},
		{"manifest id of 253", m("--id", strings.Repeat("a.", 126)+"b"), exitOK, ""},
		{"manifest id of 254", m("--id", strings.Repeat("a.", 127)), exitUsage, `rayflow: invalid RayJob manifest: submission id "`},
		{"manifest id bad id!", m("--id", "bad id!"), exitUsage, `rayflow: invalid RayJob manifest: submission id "bad id!": a lowercase RFC 1123 subdomain must consist of`},
		{"manifest id upper case", m("--id", "Fanout-1"), exitUsage, `rayflow: invalid RayJob manifest: submission id "Fanout-1": a lowercase RFC 1123 subdomain`},
		{"manifest unknown flow", append(manifest[:len(manifest):len(manifest)], "nope"), exitUsage, `rayflow: no flow named "nope" (known: complex, fanout, `},
		{"manifest flow sleep", append(manifest[:len(manifest):len(manifest)], "sleep"), exitOK, ""},
		{"enqueue run-at not RFC 3339", []string{"tasks", "enqueue", "fanout", "--input", "1", "--run-at", "tomorrow"}, exitUsage,
			`rayflow: --run-at "tomorrow": not an RFC 3339 time such as 2026-12-24T18:00:00Z` + "\n"},
		{"enqueue run-at and run-in", []string{"tasks", "enqueue", "fanout", "--input", "1", "--run-at", "2026-01-01T00:00:00Z", "--run-in", "1m"}, exitUsage,
			"rayflow: --run-at and --run-in: give one of them\n"},
		{"enqueue run-in -1s", []string{"tasks", "enqueue", "fanout", "--input", "1", "--run-in", "-1s"}, exitUsage, "rayflow: --run-in -1s: must not be negative\n"},
		{"schedule without --flow", []string{"schedules", "add", "s", "--cron", "@daily"}, exitUsage, "rayflow: schedules add s: --flow is required\n"},
		{"schedule without --cron", []string{"schedules", "add", "s", "--flow", "fanout"}, exitUsage, "rayflow: schedules add s: --cron is required\n"},
		{"schedule minute 60", []string{"schedules", "add", "s", "--flow", "fanout", "--input", "1", "--cron", "60 * * * *"}, exitUsage,
			"rayflow: --cron: durable: invalid option: cron: invalid schedule: minute: 60 is outside 0 to 59\n"},
		{"schedule @every 999ms", []string{"schedules", "add", "s", "--flow", "fanout", "--input", "1", "--cron", "@every 999ms"}, exitUsage,
			"rayflow: --cron: durable: invalid option: cron: invalid schedule: @every 999ms: the interval is a whole number of seconds from 1s to 8784h0m0s\n"},
		{"schedule unknown zone", []string{"schedules", "add", "s", "--flow", "fanout", "--input", "1", "--cron", "@daily", "--tz", "Mars/Olympus"}, exitUsage,
			`rayflow: --tz: durable: invalid option: time zone "Mars/Olympus": unknown time zone Mars/Olympus` + "\n"},
		{"schedule missed policy", []string{"schedules", "add", "s", "--flow", "fanout", "--input", "1", "--cron", "@daily", "--missed", "never"}, exitUsage,
			`rayflow: --missed: durable: invalid option: missed tick policy "never" (skip or catch-up)` + "\n"},
		{"schedule name of 129", []string{"schedules", "add", strings.Repeat("n", 129), "--flow", "fanout", "--input", "1", "--cron", "@daily"}, exitUsage,
			"rayflow: schedules add: NAME: durable: invalid option: schedule name of 129 characters (1–128)\n"},
		{"schedule fanout without --input", []string{"schedules", "add", "s", "--flow", "fanout", "--cron", "@daily"}, exitUsage,
			"rayflow: schedules add fanout: the flow's input is required (int): "},
		{"schedules remove without a name", []string{"schedules", "remove"}, exitUsage, "Usage: rayflow schedules"},
		{"enqueue concurrency key of 201 bytes", []string{"tasks", "enqueue", "fanout", "--input", "1", "--concurrency-key", strings.Repeat("k", 201)}, exitUsage,
			"rayflow: --concurrency-key: durable: invalid option: concurrency key of 201 bytes (1–200 bytes of UTF-8)\n"},
		{"enqueue empty concurrency key", []string{"tasks", "enqueue", "fanout", "--input", "1", "--concurrency-key", ""}, exitUsage,
			"rayflow: --concurrency-key: durable: invalid option: concurrency key of 0 bytes (1–200 bytes of UTF-8)\n"},
		{"enqueue concurrency key with a newline", []string{"tasks", "enqueue", "fanout", "--input", "1", "--concurrency-key", "a\nb"}, exitUsage,
			`rayflow: --concurrency-key: durable: invalid option: concurrency key "a\nb" has a control character` + "\n"},
		{"enqueue concurrency key not UTF-8", []string{"tasks", "enqueue", "fanout", "--input", "1", "--concurrency-key", "\xff"}, exitUsage,
			"rayflow: --concurrency-key: durable: invalid option: concurrency key of 1 bytes (1–200 bytes of UTF-8)\n"},
		{"queues set without a limit flag", []string{"queues", "set", "q"}, exitUsage,
			"rayflow: queues set: give --per-key-running, --starts-per-second or --burst (queues clear removes the limits)\n"},
		{"queues set per-key-running -1", []string{"queues", "set", "q", "--per-key-running", "-1"}, exitUsage,
			"rayflow: --per-key-running: durable: invalid option: per-key running limit -1 outside 1…1000000 (0: none)\n"},
		{"queues set per-key-running one over", []string{"queues", "set", "q", "--per-key-running", "1000001"}, exitUsage,
			"rayflow: --per-key-running: durable: invalid option: per-key running limit 1000001 outside 1…1000000 (0: none)\n"},
		{"queues set starts-per-second one over", []string{"queues", "set", "q", "--starts-per-second", "1000001"}, exitUsage,
			"rayflow: --starts-per-second: durable: invalid option: starts per second 1.000001e+06 outside (0, 1000000] (0: none)\n"},
		{"queues set starts-per-second just over", []string{"queues", "set", "q", "--starts-per-second", "1000000.001"}, exitUsage,
			"rayflow: --starts-per-second: durable: invalid option: starts per second "},
		{"queues set starts-per-second -0.5", []string{"queues", "set", "q", "--starts-per-second", "-0.5"}, exitUsage,
			"rayflow: --starts-per-second: durable: invalid option: starts per second -0.5 outside (0, 1000000] (0: none)\n"},
		{"queues set starts-per-second NaN", []string{"queues", "set", "q", "--starts-per-second", "NaN"}, exitUsage,
			"rayflow: --starts-per-second: durable: invalid option: starts per second NaN outside (0, 1000000] (0: none)\n"},
		{"queues set starts-per-second Inf", []string{"queues", "set", "q", "--starts-per-second", "Inf"}, exitUsage,
			"rayflow: --starts-per-second: durable: invalid option: starts per second +Inf outside (0, 1000000] (0: none)\n"},
		{"queues set burst one over", []string{"queues", "set", "q", "--starts-per-second", "1", "--burst", "1000001"}, exitUsage,
			"rayflow: --burst: durable: invalid option: burst 1000001 outside 1…1000000\n"},
		{"queues set burst without a rate", []string{"queues", "set", "q", "--burst", "5"}, exitUsage,
			"rayflow: --burst: durable: invalid option: a burst needs a start rate (--starts-per-second)\n"},
		{"queues set queue of 129", []string{"queues", "set", strings.Repeat("q", 129), "--per-key-running", "1"}, exitUsage,
			"rayflow: queues set: QUEUE: durable: invalid option: queue name of 129 characters (1–128)\n"},
		{"queues show empty queue", []string{"queues", "show", ""}, exitUsage, "rayflow: queues show: QUEUE: durable: invalid option: queue name of 0 characters (1–128)\n"},
		{"queues show without a queue", []string{"queues", "show"}, exitUsage, "Usage: rayflow queues"},
		{"queues clear two queues", []string{"queues", "clear", "a", "b"}, exitUsage, "Usage: rayflow queues"},
		{"queues unknown verb", []string{"queues", "drop", "a"}, exitUsage, "Usage: rayflow queues"},
		{"queues per-key-running not a number", []string{"queues", "set", "q", "--per-key-running", "two"}, exitUsage, `invalid value "two" for flag -per-key-running`},
	} {
		code, out, errOut := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.HasPrefix(errOut, tc.stderr) || (tc.stderr == "") != (errOut == "") {
			t.Errorf("%s: rayflow %q: exit %d, stderr %q; want exit %d, stderr %q…", tc.name, tc.args, code, errOut, tc.code, tc.stderr)
		}
		if code == exitOK && !strings.HasPrefix(out, "apiVersion: ray.io/v1") {
			t.Errorf("%s: stdout %.80q", tc.name, out)
		}
	}
}

// TestTaskFlagEdgesStored enqueues tasks with flag values at the edges of
// their ranges on a real PostgreSQL and reads back what was stored.
func TestTaskFlagEdgesStored(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	type stored struct {
		Queue       string
		MaxAttempts int
	}
	q128 := strings.Repeat("é", durable.MaxQueueNameLen)
	for _, tc := range []struct {
		name string
		args []string
		want stored
	}{
		{"max-attempts 1", []string{"--max-attempts", "1"}, stored{"default", 1}},
		{"max-attempts 100", []string{"--max-attempts", "100"}, stored{"default", 100}},
		{"max-attempts not given", nil, stored{"default", durable.DefaultMaxAttempts}},
		{"queue of one character", []string{"--queue", "q"}, stored{"q", durable.DefaultMaxAttempts}},
		{"queue of 128 characters", []string{"--queue", q128}, stored{q128, durable.DefaultMaxAttempts}},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"tasks", "enqueue", "sleep", "--input", "1"}, tc.args...)...)
		if code != exitOK {
			t.Fatalf("%s: enqueue: exit %d: %s", tc.name, code, errOut)
		}
		id := strings.TrimSpace(out)
		_, out, _ = runCLI(t, "", "tasks", "show", id, "--json")
		var task durable.Task
		if err := json.Unmarshal([]byte(out), &task); err != nil {
			t.Fatalf("%s: show --json: %v %q", tc.name, err, out)
		}
		if d := cmp.Diff(tc.want, stored{task.Queue, task.MaxAttempts}); d != "" {
			t.Errorf("%s: stored (-want +got):\n%s", tc.name, d)
		}
	}
	// Refused values enqueue nothing (the library used to store 3 for
	// --max-attempts 0, and "default" for --queue '').
	for _, args := range [][]string{
		{"sleep", "--input", "1", "--max-attempts", "0"}, {"sleep", "--input", "1", "--max-attempts", "101"},
		{"sleep", "--input", "1", "--queue", ""}, {"sleep", "--input", "1", "--queue", "a\nb"},
		{"sleep"}, {"fanout", "--priority", "1"}, // no input for an int: not null (0 items)
	} {
		if code, _, errOut := runCLI(t, "", append([]string{"tasks", "enqueue"}, args...)...); code != exitUsage {
			t.Errorf("enqueue %q: exit %d (%s), want %d", args, code, errOut, exitUsage)
		}
	}
	// The list edges: a page of 1 and of 1000, and one queue.
	for _, tc := range []struct {
		args []string
		rows int
	}{
		{[]string{"--limit", "1"}, 1},
		{[]string{"--limit", "1000"}, 5},
		{[]string{"--queue", "q"}, 1},
		{[]string{"--queue", q128, "--limit", "1000"}, 1},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"tasks", "list"}, tc.args...)...)
		if rows := strings.Count(out, "\n") - 1; code != exitOK || rows != tc.rows {
			t.Errorf("tasks list %q: exit %d, %d rows (stderr %q), want %d rows:\n%s", tc.args, code, rows, errOut, tc.rows, out)
		}
	}
}

// OptionalCount is the step of test.optional, a flow whose input (a
// pointer) may be null: no input means the default.
func OptionalCount(_ context.Context, n *int) (int, error) {
	if n == nil {
		return 3, nil
	}
	return *n, nil
}

func init() { durable.Register("test.optional", sdk.Step(OptionalCount)) }

// TestMissingInput: a flow whose input type cannot be null refuses an
// enqueue without --input (TestFlagRangesAsDocumented,
// TestTaskFlagEdgesStored); one whose input can be null is enqueued with
// null, as before.
func TestMissingInput(t *testing.T) {
	t.Setenv("RAYFLOW_DATABASE_URL", pgtest.URL(t))
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "tasks", "enqueue", "test.optional")
	if code != exitOK {
		t.Fatalf("enqueue test.optional: exit %d: %s", code, errOut)
	}
	_, out, _ = runCLI(t, "", "tasks", "show", strings.TrimSpace(out), "--json")
	var task durable.Task
	if err := json.Unmarshal([]byte(out), &task); err != nil || string(task.Input) != "null" {
		t.Fatalf("show: %v, input %q, want null", err, task.Input)
	}
}

// TestTasksEnqueueUnique: tasks enqueue --unique-key prints the holder's
// id for a held key (exit 0, a note on stderr, no new task), tasks show
// prints the key, and tasks retry of a task whose key another task took
// prints UNIQUE_KEY_HELD and exits 1.
func TestTasksEnqueueUnique(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	enqueue := func(args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"tasks", "enqueue", "sleep", "--queue", "nobody"}, args...)...)
		id := strings.TrimSpace(out)
		if code != exitOK || !durable.ValidTaskID(id) {
			t.Fatalf("enqueue %q: exit %d %q %q", args, code, out, errOut)
		}
		return id, errOut
	}
	key200 := strings.Repeat("k", durable.MaxUniqueKeyBytes)
	first, errOut := enqueue("--input", "1", "--unique-key", key200, "--unique-global", "--unique-for", "1h")
	if errOut != "" {
		t.Errorf("new task: stderr %q", errOut)
	}
	dup, errOut := enqueue("--input", "2", "--unique-key", key200, "--unique-global")
	if dup != first || !strings.Contains(errOut, "is held: "+first+" is the existing task (sleep QUEUED); nothing was enqueued") {
		t.Errorf("duplicate: %s %q, want %s and a note", dup, errOut, first)
	}
	if code, out, _ := runCLI(t, "", "tasks", "show", first); code != exitOK || !strings.Contains(out, `unique key:`) ||
		!strings.Contains(out, `(global), until `) {
		t.Errorf("show: %d %q", code, out)
	}
	held, _ := enqueue("--input", "3", "--unique-key", "r")
	if code, out, _ := runCLI(t, "", "tasks", "cancel", held); code != exitOK || strings.TrimSpace(out) != "ACCEPTED" {
		t.Fatalf("cancel: %d %q", code, out)
	}
	holder, _ := enqueue("--input", "4", "--unique-key", "r")
	if holder == held {
		t.Fatal("the key of a cancelled task was not free")
	}
	code, out, errOut := runCLI(t, "", "tasks", "retry", held)
	if code != exitError || strings.TrimSpace(out) != "UNIQUE_KEY_HELD" || !strings.Contains(errOut, "held by task "+holder) {
		t.Errorf("retry: exit %d %q %q, want %d UNIQUE_KEY_HELD naming %s", code, out, errOut, exitError, holder)
	}
	var n int
	pool := pgtest.PoolAt(t, db)
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM rayflow_tasks`).Scan(&n); err != nil || n != 3 {
		t.Errorf("%d tasks (%v), want 3", n, err)
	}
}
