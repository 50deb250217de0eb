package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/syncbuf"
)

// TestWorkerLogFlagsRefuseBadValues: a --log-level or --log-format
// outside its set is a usage error (exit 2) naming the allowed values.
func TestWorkerLogFlagsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "verbose"}, `--log-level "verbose": want one of debug, info, warn, error`},
		{[]string{"--log-level", "INFO"}, `--log-level "INFO": want one of debug, info, warn, error`},
		{[]string{"--log-format", "xml"}, `--log-format "xml": want one of text, json`},
		{[]string{"--log-format", ""}, `--log-format "": want one of text, json`},
		{[]string{"--queue", ""}, `--queue: `},
		{[]string{"--queue", "a\nb"}, `--queue: `},
		{[]string{"--queue", strings.Repeat("q", 129)}, `--queue: `},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"worker"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("worker %v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

// TestWorkerJSONLogs: `rayflow worker --log-format json` on PostgreSQL
// logs each task's claim and outcome as JSON lines with the task id,
// attempt, flow and duration. The fan-out's recovered panic (--input -5)
// and its map one over its 10,000-item cap (--input 10001) fail at
// attempt 1 without a retry (the cap itself is tested at the edge by
// durable's TestContractErrorsArePermanent); a small fan-out
// succeeds.
func TestWorkerJSONLogs(t *testing.T) {
	db := pgtest.URL(t)
	t.Setenv("RAYFLOW_DATABASE_URL", db)
	if code, _, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}
	ids := map[string]string{}
	for _, in := range []string{"-5", "10001", "3"} {
		code, out, errOut := runCLI(t, "", "tasks", "enqueue", "fanout", "--input", in)
		if code != exitOK {
			t.Fatalf("enqueue %s: %d %s", in, code, errOut)
		}
		ids[strings.TrimSpace(out)] = in
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int)
	var logs syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"worker", "--log-format", "json", "--log-level", "info", "--retry-backoff", "0", "--poll-max-interval", "200ms"},
			env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &logs})
	}()
	end := sync.OnceValue(func() int { stop(); return <-done })
	t.Cleanup(func() { end() })
	for id := range ids {
		if code, _, _ := runCLI(t, "", "tasks", "wait", id, "--timeout", "60s"); code != exitOK && code != exitError {
			t.Fatalf("wait %s: exit %d", id, code)
		}
	}
	if code := end(); code != exitOK {
		t.Fatalf("worker: exit %d\n%s", code, logs.String())
	}

	type line struct{ Msg, Input, Flow, Outcome string }
	var got []line
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var r struct {
			Msg, Task, Flow, Outcome string
			Attempt                  int
			Duration                 *int64
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a JSON log line: %s", sc.Bytes())
		}
		in, ok := ids[r.Task]
		if !ok {
			continue
		}
		if r.Attempt != 1 || r.Duration == nil {
			t.Errorf("attempt %d, duration %v: %s", r.Attempt, r.Duration, sc.Bytes())
		}
		got = append(got, line{r.Msg, in, r.Flow, r.Outcome})
	}
	byInput := func(ls []line, in string) []line {
		var out []line
		for _, l := range ls {
			if l.Input == in {
				out = append(out, l)
			}
		}
		return out
	}
	want := []line{
		{"task claimed", "-5", "fanout", ""}, {"task failed", "-5", "fanout", string(durable.StateFailed)},
		{"task claimed", "10001", "fanout", ""}, {"task failed", "10001", "fanout", string(durable.StateFailed)},
		{"task claimed", "3", "fanout", ""}, {"task succeeded", "3", "fanout", string(durable.StateSucceeded)},
	}
	for _, in := range []string{"-5", "10001", "3"} {
		if diff := cmp.Diff(byInput(want, in), byInput(got, in)); diff != "" {
			t.Errorf("log lines of fanout --input %s (-want +got):\n%s", in, diff)
		}
	}
}
