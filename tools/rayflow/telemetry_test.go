package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/telemetry"
	"github.com/rayflow/rayflow/telemetry/telemetrytest"
	"github.com/rayflow/rayflow/telemetry/tracing"
)

// `rayflow worker --metrics-addr` with RAYFLOW_TRACES_FILE, through the
// real binary: after a fanout task, its /metrics shows the attempt and
// the leaves, and the traces file holds the attempt's connected trace.
func TestWorkerMetricsAndTraces(t *testing.T) {
	db := pgtest.URL(t)
	bin := buildCLI(t)
	traces := filepath.Join(t.TempDir(), "spans.jsonl")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cli := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	cli("migrate", "up")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "worker", "--metrics-addr", addr, "--poll-max-interval", "200ms")
	cmd.Env = append(os.Environ(), "RAYFLOW_DATABASE_URL="+db, tracing.TracesFileEnv+"="+traces)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id := cli("tasks", "enqueue", "fanout", "--input", "12")
	cli("tasks", "wait", id, "--timeout", "60s")
	var body string
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := testwait.Poll(ctx, 50*time.Millisecond, "the attempt counted on /metrics", func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		return strings.Contains(body, `rayflow_attempts_total{outcome="succeeded",queue="default"} 1`), nil
	}); err != nil {
		t.Log(err) // the checks below say what /metrics lacks
	}
	for _, want := range []string{`rayflow_attempts_total{outcome="succeeded",queue="default"} 1`,
		`rayflow_leaves_finished_total{engine="local",outcome="succeeded"} 14`, // build_items, 12 items, summarize
		`rayflow_claim_latency_seconds_count{queue="default"} 1`, `rayflow_worker_running_tasks{queue="default"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	// SIGINT: the worker drains and flushes its spans.
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	spans, err := telemetrytest.ReadFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	tr := telemetrytest.Trace(spans, telemetry.SpanAttempt, string(telemetry.AttrTaskID), id)
	counts, err := telemetrytest.Connected(tr, telemetry.SpanAttempt, telemetry.SpanRun, telemetry.SpanNode, telemetry.SpanItem)
	if err != nil || counts[telemetry.SpanItem] != 12 || counts[telemetry.SpanRun] != 1 {
		t.Fatalf("trace of %s: %v %v\n%s", id, counts, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "serving metrics") {
		t.Errorf("worker log: %s", stderr.String())
	}
}
