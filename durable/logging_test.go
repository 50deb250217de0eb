package durable

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/internal/syncbuf"
	"github.com/rayflow/rayflow/internal/testwait"
)

// logLine is what TestWorkerLogsTransitions compares of a log record.
type logLine struct {
	Level, Msg, Task, Flow string
	Attempt                int
	Outcome                string
	NextAttempt            int
	HasDuration            bool
}

// TestWorkerLogsTransitions: a worker logging at INFO (JSON) writes one
// line per transition of a real run on PostgreSQL, each with the task id,
// attempt, flow and duration: claimed, failed then retried, claimed again
// and succeeded; and a task whose worker is gone, lost then retried.
func TestWorkerLogsTransitions(t *testing.T) {
	e := newEnv(t)
	var buf syncbuf.Buffer
	o := fastOptions()
	o.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o.HeartbeatInterval, o.StuckTimeout, o.SweepInterval = 100*time.Millisecond, time.Second, 100*time.Millisecond
	e.startWorker(o)

	// A task claimed by a worker that is gone (it never heartbeats), on a
	// queue the running worker does not claim from: swept LOST, retried.
	lost := e.enqueue("test.echo", `{"name":"gone"}`, EnqueueOptions{Queue: "elsewhere"})
	if got, err := claimTasks(t.Context(), e.pool, "elsewhere", 1, "gone-worker", "local", "", nil); err != nil || len(got) != 1 {
		t.Fatalf("claiming as the gone worker: %d tasks, %v", len(got), err)
	}
	// Fails once, then succeeds.
	flaky := e.enqueue("test.failonce", fmt.Sprintf("%q", ownKey(t, "logs")), EnqueueOptions{})
	if task := e.wait(flaky, 20*time.Second); task.State != StateSucceeded || task.Attempt != 2 {
		t.Fatalf("flaky task: %s at attempt %d", task.State, task.Attempt)
	}
	e.waitState(lost, StateQueued, 20*time.Second)

	want := []logLine{
		{"INFO", "task claimed", flaky, "test.failonce", 1, "", 0, true},
		{"WARN", "task failed", flaky, "test.failonce", 1, "FAILED", 0, true},
		{"INFO", "task retried", flaky, "test.failonce", 1, "", 2, false},
		{"INFO", "task claimed", flaky, "test.failonce", 2, "", 0, true},
		{"INFO", "task succeeded", flaky, "test.failonce", 2, "SUCCEEDED", 0, true},
		{"WARN", "task lost", lost, "test.echo", 1, "LOST", 0, true},
		{"INFO", "task retried", lost, "test.echo", 1, "", 2, false},
	}
	// The retried line may trail its task's last wait by a moment.
	var got []logLine
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := testwait.Poll(ctx, 20*time.Millisecond, "the log lines of both tasks", func(context.Context) (bool, error) {
		got = got[:0]
		sc := bufio.NewScanner(bytes.NewReader([]byte(buf.String())))
		for sc.Scan() {
			var r struct {
				Level, Msg, Task, Flow, Outcome string
				Attempt                         int
				NextAttempt                     int `json:"next_attempt"`
				Duration                        *int64
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("not a JSON log line: %s", sc.Bytes())
			}
			if r.Task == flaky || r.Task == lost {
				got = append(got, logLine{r.Level, r.Msg, r.Task, r.Flow, r.Attempt, r.Outcome, r.NextAttempt, r.Duration != nil})
			}
		}
		return len(got) >= len(want), nil
	})
	if err != nil {
		t.Log(err) // the comparison below says which lines are missing
	}
	// Lines of the two tasks interleave; each task's are in order.
	byTask := func(ls []logLine, id string) []logLine {
		var out []logLine
		for _, l := range ls {
			if l.Task == id {
				out = append(out, l)
			}
		}
		return out
	}
	for _, id := range []string{flaky, lost} {
		if diff := cmp.Diff(byTask(want, id), byTask(got, id)); diff != "" {
			t.Errorf("log lines of task %s (-want +got):\n%s\nlog:\n%s", id, diff, buf.String())
		}
	}
}
