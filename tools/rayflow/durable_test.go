package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/rayjob"
)

// The durable commands in this process: migrate, enqueue, a worker,
// wait, show, list, cancel and retry, with their exit statuses.
func TestDurableCommands(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, out, errOut := runCLI(t, "", "migrate", "status"); code != exitOK || !strings.Contains(out, "pending") {
		t.Fatalf("migrate status: %d %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "migrate", "up", "--database-url", db); code != exitOK || !strings.Contains(out, "applied 0001") {
		t.Fatalf("migrate up: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "migrate", "up"); code != exitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate up again: %d %q", code, out)
	}
	for _, bad := range [][]string{
		{"tasks", "enqueue", "nope"},
		{"tasks", "enqueue", "fanout", "--input", `"many"`},
	} {
		if code, _, _ := runCLI(t, "", bad...); code != exitRejected {
			t.Errorf("%v: exit %d, want %d", bad, code, exitRejected)
		}
	}
	if code, _, _ := runCLI(t, "", "tasks", "enqueue", "fanout", "--priority", "101"); code != exitUsage {
		t.Errorf("priority 101: exit %d", code)
	}
	code, out, errOut := runCLI(t, "20\n", "tasks", "enqueue", "fanout", "--input", "-", "--priority", "5")
	if code != exitOK {
		t.Fatalf("enqueue: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if code, out, _ := runCLI(t, "", "tasks", "list", "--state", "queued"); code != exitOK || !strings.Contains(out, id) {
		t.Fatalf("list: %d %q", code, out)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var b strings.Builder
		done <- run(ctx, []string{"worker", "--concurrency", "2", "--poll-max-interval", "200ms", "--heartbeat", "200ms"},
			env{stdin: strings.NewReader(""), stdout: &b, stderr: &b})
	}()
	t.Cleanup(func() { stop(); <-done })
	code, out, errOut = runCLI(t, "", "tasks", "wait", id, "--timeout", "60s")
	if code != exitOK || strings.TrimSpace(out) != `{"items":20,"checksum":455997196}` {
		t.Fatalf("wait: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "tasks", "show", id, "--json")
	var task durable.Task
	if code != exitOK || json.Unmarshal([]byte(out), &task) != nil || task.State != durable.StateSucceeded ||
		task.Priority != 5 || len(task.Attempts) != 1 || task.PlanFingerprint == "" {
		t.Fatalf("show --json: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "tasks", "show", id); code != exitOK || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, task.RunID) {
		t.Fatalf("show: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "tasks", "retry", id); code != exitError || strings.TrimSpace(out) != "NOT_RETRYABLE" {
		t.Fatalf("retry succeeded task: %d %q", code, out)
	}
	// Cancel a running sleep, then retry it and cancel it again.
	_, out, _ = runCLI(t, "", "tasks", "enqueue", "sleep", "--input", "60000")
	sid := strings.TrimSpace(out)
	waitFor(t, sid, durable.StateRunning)
	if code, out, _ := runCLI(t, "", "tasks", "cancel", sid); code != exitOK || strings.TrimSpace(out) != "ACCEPTED" {
		t.Fatalf("cancel: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "", "tasks", "wait", sid, "--timeout", "20s"); code != exitError || !strings.Contains(errOut, "CANCELLED") {
		t.Fatalf("wait cancelled: %d %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "", "tasks", "cancel", sid); code != exitError || strings.TrimSpace(out) != "ALREADY_TERMINAL" {
		t.Fatalf("cancel again: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "tasks", "retry", sid, "--expect-attempt", "2"); code != exitError || strings.TrimSpace(out) != "STALE_ATTEMPT" {
		t.Fatalf("stale retry: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "tasks", "retry", sid, "--expect-attempt", "1"); code != exitOK || strings.TrimSpace(out) != "ACCEPTED" {
		t.Fatalf("retry: %d %q", code, out)
	}
	waitFor(t, sid, durable.StateRunning)
	runCLI(t, "", "tasks", "cancel", sid)
	if code, _, _ := runCLI(t, "", "tasks", "wait", sid, "--timeout", "20s"); code != exitError {
		t.Fatalf("wait: %d", code)
	}
	// retry --rebuild drops the plan pin: attempt 3 pins its own plan.
	if code, out, _ := runCLI(t, "", "tasks", "retry", sid, "--rebuild"); code != exitOK || strings.TrimSpace(out) != "ACCEPTED" {
		t.Fatalf("retry --rebuild: %d %q", code, out)
	}
	waitFor(t, sid, durable.StateRunning)
	_, out, _ = runCLI(t, "", "tasks", "show", sid, "--json")
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.Attempt != 3 || task.PinnedAttempt != 3 || task.PlanFingerprint == "" {
		t.Fatalf("after retry --rebuild: %v attempt %d pinned at %d %q", err, task.Attempt, task.PinnedAttempt, task.PlanFingerprint)
	}
	runCLI(t, "", "tasks", "cancel", sid)
	if code, _, _ := runCLI(t, "", "tasks", "wait", sid, "--timeout", "20s"); code != exitError {
		t.Fatalf("wait: %d", code)
	}
	if code, _, _ := runCLI(t, "", "tasks", "wait", "00000000-0000-4000-8000-000000000000"); code != exitError {
		t.Fatalf("wait for a missing task: %d", code)
	}
	// Repair: a SUCCEEDED or missing task is refused; the cancelled sleep
	// gets a new task naming it.
	for _, c := range []struct{ id, want string }{
		{id, "only a FAILED, CANCELLED or LOST task can be repaired: task " + id + " is SUCCEEDED"},
		{"00000000-0000-4000-8000-000000000000", "no such task"},
	} {
		if code, out, errOut := runCLI(t, "", "tasks", "repair", c.id); code != exitError || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("repair %s: %d %q %q; want exit %d and %q", c.id, code, out, errOut, exitError, c.want)
		}
	}
	code, out, errOut = runCLI(t, "", "tasks", "repair", sid)
	rid := strings.TrimSpace(out)
	if code != exitOK || !durable.ValidTaskID(rid) || rid == sid {
		t.Fatalf("repair: %d %q %q", code, out, errOut)
	}
	runCLI(t, "", "tasks", "cancel", rid)
	if code, out, _ := runCLI(t, "", "tasks", "show", rid); code != exitOK || !strings.Contains(out, "repair of:") || !strings.Contains(out, sid) {
		t.Fatalf("show of the repair task: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "tasks", "show", rid, "--json"); code != exitOK || json.Unmarshal([]byte(out), &task) != nil || task.RepairOf != sid {
		t.Fatalf("show --json of the repair task: %d %q", code, out)
	}
}

func waitFor(t *testing.T, id string, state durable.State) {
	t.Helper()
	var task durable.Task
	testwait.Until(t, 30*time.Second, fmt.Sprintf("task %s %s", id, state), func() bool {
		_, out, _ := runCLI(t, "", "tasks", "show", id, "--json")
		task = durable.Task{}
		_ = json.Unmarshal([]byte(out), &task)
		return task.State == state
	})
}

// Crash and retry through the real binary: kill -9 of `rayflow worker`
// mid-run → another worker marks the attempt LOST and retries it. Same
// build: SUCCEEDED at attempt 2. A rolling deploy to a changed build: the
// new build's worker does not claim the retry, which waits in the queue
// (`tasks show` says so, naming the plans live workers run) until a worker
// of the pinned build runs it: SUCCEEDED at attempt 2 on the old build.
func TestWorkerProcessCrashAndChangedBuild(t *testing.T) {
	db := pgtest.URL(t)
	bin := buildCLI(t)
	cli := func(rev string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db, "RAYFLOW_BUILD_REVISION="+rev)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	workers := 0
	worker := func(rev string) *exec.Cmd {
		workers++
		cmd := exec.Command(bin, "worker", "--stuck-timeout", "3s", "--heartbeat", "500ms", "--sweep-interval", "200ms",
			"--retry-backoff", "0s", "--poll-max-interval", "200ms", "--id", fmt.Sprintf("worker-%s-%d", rev, workers))
		cmd.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db, "RAYFLOW_BUILD_REVISION="+rev)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	show := func(id string) durable.Task {
		out, err := cli("v1", "tasks", "show", id, "--json")
		var task durable.Task
		if err != nil || json.Unmarshal([]byte(out), &task) != nil {
			t.Fatalf("show: %v %q", err, out)
		}
		return task
	}
	if _, err := cli("v1", "migrate", "up"); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"v1", "v2"} {
		a := worker("v1")
		id, err := cli("v1", "tasks", "enqueue", "sleep", "--input", "4000")
		if err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, 30*time.Second, "task "+id+" RUNNING", func() bool { return show(id).State == durable.StateRunning })
		first := show(id)
		_ = a.Process.Kill() // SIGKILL
		_ = a.Wait()
		b := worker(rev)
		if rev != "v1" {
			testwait.Until(t, 30*time.Second, "the retry queued", func() bool {
				task := show(id)
				return task.State == durable.StateQueued && task.Attempt == 2
			})
			var text string
			testwait.Until(t, 30*time.Second, "tasks show: waiting for the pinned build", func() bool {
				text, _ = cli(rev, "tasks", "show", id)
				return strings.Contains(text, "waiting:") && strings.Contains(text, fmt.Sprintf("(worker-%s-%d)", rev, workers))
			})
			// The new build polls past the retry: it stays queued.
			time.Sleep(2 * time.Second)
			if task := show(id); task.State != durable.StateQueued || task.Attempt != 2 || task.PlanFingerprint != first.PlanFingerprint {
				t.Fatalf("build %s claimed the retry: %s at %d (%s)", rev, task.State, task.Attempt, task.ErrorMessage)
			}
			t.Logf("tasks show of the waiting retry:\n%s", text)
			worker("v1") // an old-build worker is alive again
		}
		out, err := cli(rev, "tasks", "wait", id, "--timeout", "60s")
		_ = b.Process.Kill() // the next case starts its own workers
		_ = b.Wait()
		task := show(id)
		if task.State != durable.StateSucceeded || task.Attempt != 2 || len(task.Attempts) != 2 || task.Attempts[0].State != durable.StateLost ||
			!strings.HasPrefix(task.Attempts[1].ClaimedBy, "worker-v1-") || task.PlanFingerprint != first.PlanFingerprint {
			t.Fatalf("build %s: %s at %d (%v %q): %+v", rev, task.State, task.Attempt, err, out, task.Attempts)
		}
		if err != nil || out != "4000" {
			t.Fatalf("wait: %v %q", err, out)
		}
	}
}

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildCLI builds this command once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "rfcli")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "rayflow")
		built.out, built.err = exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// Ray Job runner through the real binary: a ray_job worker killed with
// kill -9 mid-run leaves its job running on the cluster; the next worker
// adopts the job (same attempt, no second run) instead of declaring the
// attempt LOST, and records its result.
func TestRayJobWorkerCrashIsAdopted(t *testing.T) {
	if os.Getenv("RAYFLOW_RAY_ADDRESS") == "" && os.Getenv("RAYFLOW_RAY_DASHBOARD") == "" {
		t.Skip("needs a Ray cluster with its dashboard (RAYFLOW_RAY_ADDRESS / RAYFLOW_RAY_DASHBOARD)")
	}
	db := pgtest.URL(t)
	bin := buildCLI(t)
	environ := append(os.Environ(), "RAYFLOW_DATABASE_URL="+db)
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = environ
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	worker := func() *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--runner", "ray_job", "--stuck-timeout", "3s", "--heartbeat", "500ms",
			"--sweep-interval", "200ms", "--poll-max-interval", "200ms")
		cmd.Env = environ
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	show := func(id string) durable.Task {
		out, err := cli("tasks", "show", id, "--json")
		var task durable.Task
		if err != nil || json.Unmarshal([]byte(out), &task) != nil {
			t.Fatalf("show: %v %q", err, out)
		}
		return task
	}
	if _, err := cli("migrate", "up"); err != nil {
		t.Fatal(err)
	}
	a := worker()
	id, err := cli("tasks", "enqueue", "sleep", "--input", "12000")
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 60*time.Second, "a Ray job submitted", func() bool { return show(id).RayJobID != "" })
	// Mid-run: the job runs on the cluster.
	jobs, err := rayjob.NewClient(rayjob.ClientOptions{Dashboard: cmp.Or(os.Getenv("RAYFLOW_RAY_DASHBOARD"), "http://127.0.0.1:8265")})
	if err != nil {
		t.Fatal(err)
	}
	job := show(id).RayJobID
	testwait.Until(t, 60*time.Second, "Ray job "+job+" RUNNING", func() bool {
		info, err := jobs.Status(t.Context(), job)
		return err == nil && info.Status == rayjob.StatusRunning
	})
	first := show(id)
	_ = a.Process.Kill()
	_ = a.Wait()
	worker()
	out, err := cli("tasks", "wait", id, "--timeout", "90s")
	task := show(id)
	if err != nil || out != "12000" || task.State != durable.StateSucceeded || task.Attempt != 1 || len(task.Attempts) != 1 ||
		task.RayJobID != first.RayJobID || task.RunID != first.RunID || task.ClaimedBy == first.ClaimedBy {
		t.Fatalf("%v %q: %s at %d, job %s (was %s), worker %s (was %s), %d archived", err, out, task.State, task.Attempt,
			task.RayJobID, first.RayJobID, task.ClaimedBy, first.ClaimedBy, len(task.Attempts))
	}
}

// The schedule commands on a real PostgreSQL: add (its refusals and
// exit statuses), list, a worker firing the ticks, remove; and tasks
// enqueue --run-in, which tasks show reports as "run after".
func TestScheduleCommands(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	n128 := strings.Repeat("é", durable.MaxScheduleNameLen)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // prefix
		stderr string // prefix
	}{
		{[]string{"schedules", "add", "each-second", "--flow", "fanout", "--input", "3", "--cron", "@every 1s", "--missed", "catch-up"}, exitOK, "each-second\tnext ", ""},
		{[]string{"schedules", "add", "each-second", "--flow", "fanout", "--input", "3", "--cron", "@daily"}, exitError, "",
			"rayflow: schedules add: durable: a schedule of this name exists: each-second\n"},
		{[]string{"schedules", "add", n128, "--flow", "sleep", "--input", "1", "--cron", "30 2 * * *", "--tz", "Europe/Berlin"}, exitOK, n128 + "\tnext ", ""},
		{[]string{"schedules", "add", "x", "--flow", "nope", "--cron", "@daily"}, exitRejected, "", "rayflow: schedules add: durable: unknown flow"},
		{[]string{"schedules", "add", "x", "--flow", "fanout", "--input", `"many"`, "--cron", "@daily"}, exitRejected, "", "rayflow: schedules add: durable: the input does not decode"},
		{[]string{"schedules", "remove", "nope"}, exitError, "", `rayflow: schedules remove: durable: no such schedule: "nope"` + "\n"},
	} {
		code, out, errOut := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.HasPrefix(out, tc.stdout) || !strings.HasPrefix(errOut, tc.stderr) || (tc.stderr == "") != (errOut == "") {
			t.Errorf("rayflow %q: exit %d, stdout %q, stderr %q; want %d, %q…, %q…", tc.args, code, out, errOut, tc.code, tc.stdout, tc.stderr)
		}
	}
	code, out, _ := runCLI(t, "", "schedules", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME ") ||
		!strings.Contains(lines[1], "@every 1s") || !strings.Contains(lines[2], "Europe/Berlin") {
		t.Fatalf("schedules list: %d\n%s", code, out)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var b strings.Builder
		done <- run(ctx, []string{"worker", "--poll-max-interval", "200ms"}, env{stdin: strings.NewReader(""), stdout: &b, stderr: &b})
	}()
	t.Cleanup(func() { stop(); <-done })
	var list []durable.Schedule
	testwait.Until(t, 30*time.Second, "two ticks of each-second", func() bool {
		_, out, _ := runCLI(t, "", "schedules", "list", "--json")
		list = nil
		return json.Unmarshal([]byte(out), &list) == nil && len(list) == 2 && list[0].FiredTicks >= 2
	})
	if code, _, errOut := runCLI(t, "", "tasks", "wait", list[0].LastTaskID, "--timeout", "60s"); code != exitOK {
		t.Fatalf("the tick's task: %d %s", code, errOut)
	}
	for _, name := range []string{"each-second", n128} {
		if code, out, errOut := runCLI(t, "", "schedules", "remove", name); code != exitOK || out != "" || errOut != "" {
			t.Fatalf("remove %s: %d %q %q", name, code, out, errOut)
		}
	}
	if code, out, _ := runCLI(t, "", "schedules", "list", "--json"); code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Fatalf("list after remove: %d %q", code, out)
	}
	code, out, errOut := runCLI(t, "", "tasks", "enqueue", "fanout", "--input", "2", "--run-in", "1h")
	if code != exitOK {
		t.Fatalf("enqueue --run-in: %d %s", code, errOut)
	}
	if code, show, _ := runCLI(t, "", "tasks", "show", strings.TrimSpace(out)); code != exitOK || !strings.Contains(show, "run after:") {
		t.Fatalf("show of a delayed task: %d\n%s", code, show)
	}
}
