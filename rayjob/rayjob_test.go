package rayjob_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/examples/fanout/workflow"
	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/testwait"
	"github.com/rayflow/rayflow/rayjob"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

func newClient(t *testing.T) *rayjob.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Ray")
	}
	c, err := rayjob.NewClient(rayjob.ClientOptions{Dashboard: dashboard})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// submissionID is unique per test run, so a shared head never sees an id
// twice across runs.
func submissionID(t *testing.T, what string) string {
	return fmt.Sprintf("rayflow-test-%s-%d", what, time.Now().UnixNano())
}

// submit submits the fanout binary for flow on input and waits for the end.
func submitAndWait(t *testing.T, c *rayjob.Client, id, flow, input string) *rayjob.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got, err := c.Submit(ctx, rayjob.Job{SubmissionID: id, Executable: appBinary, Flow: flow,
		Input: json.RawMessage(input), Python: python, Metadata: map[string]string{"test": t.Name()},
		// The same build revision as this test process (TestMain), so the
		// job's plan fingerprint is comparable: without one each binary's
		// code identity is its own executable digest.
		Env: map[string]string{buildid.EnvBuildRevision: testBuildRevision}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if got != id {
		t.Fatalf("submit returned id %q, want %q", got, id)
	}
	info, err := c.Wait(ctx, id, 250*time.Millisecond)
	if err != nil {
		logs, _ := c.Logs(context.Background(), id)
		t.Fatalf("wait: %v\nlogs:\n%s", err, logs)
	}
	return info
}

func TestJobSucceeds(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	const count = 40
	id := submissionID(t, "ok")
	info := submitAndWait(t, c, id, "fanout", fmt.Sprint(count))
	logs, err := c.Logs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != rayjob.StatusSucceeded {
		t.Fatalf("status %s (%s), want SUCCEEDED; logs:\n%s", info.Status, info.Message, logs)
	}
	if info.Metadata["rayflow_flow"] != "fanout" || info.Metadata["test"] != t.Name() {
		t.Errorf("metadata %v", info.Metadata)
	}
	if !strings.Contains(logs, "rayflow coordinator: flow fanout") {
		t.Errorf("the logs lack the coordinator's line:\n%s", logs)
	}
	res, err := c.Result(context.Background(), id)
	if err != nil {
		t.Fatalf("result: %v\nlogs:\n%s", err, logs)
	}
	if !res.OK || res.Error != nil {
		t.Fatalf("result %+v, want ok", res)
	}
	var got fanoutflow.Summary
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatalf("decoding the output %s: %v", res.Output, err)
	}
	want, err := sdk.Run(context.Background(), fanoutflow.Workflow, count)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the job's result differs from the local run (-local +job):\n%s", diff)
	}
	m, err := sdk.Materialize(fanoutflow.Workflow, sdk.ForRay())
	if err != nil {
		t.Fatal(err)
	}
	if res.Fingerprint != m.Fingerprint || res.Flow != "fanout" {
		t.Errorf("result flow %q fingerprint %q, want fanout %q", res.Flow, res.Fingerprint, m.Fingerprint)
	}

	// The same submission id again: already submitted, not started again.
	again, err := c.Submit(context.Background(), rayjob.Job{SubmissionID: id, Executable: appBinary, Flow: "fanout",
		Input: json.RawMessage(`1`), Python: python})
	if !errors.Is(err, rayjob.ErrAlreadySubmitted) || again != id {
		t.Fatalf("resubmission: id %q, err %v; want %q and ErrAlreadySubmitted", again, err, id)
	}
	if res2, err := c.Result(context.Background(), id); err != nil || string(res2.Output) != string(res.Output) {
		t.Errorf("after the resubmission the result is %+v (%v), want the first run's", res2, err)
	}
	// Stopping an ended job is not an error.
	if err := c.Stop(context.Background(), id); err != nil {
		t.Errorf("stopping an ended job: %v", err)
	}
}

func TestJobFails(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	// One item over the map's MaxItems (10,000): a deterministic run
	// failure before any item is submitted.
	id := submissionID(t, "fail")
	info := submitAndWait(t, c, id, "fanout", "10001")
	logs, _ := c.Logs(context.Background(), id)
	if info.Status != rayjob.StatusFailed {
		t.Fatalf("status %s, want FAILED; logs:\n%s", info.Status, logs)
	}
	res, err := c.Result(context.Background(), id)
	if err != nil {
		t.Fatalf("result: %v\nlogs:\n%s", err, logs)
	}
	if res.OK || res.Error == nil || res.Output != nil {
		t.Fatalf("result %+v, want a failure", res)
	}
	if res.Error.Kind != "run" || !strings.Contains(res.Error.Message, "10000") || !strings.Contains(res.Error.Type, "MaxItemsError") {
		t.Errorf("error %+v, want a run failure naming MaxItems 10000", res.Error)
	}
	if !strings.Contains(info.Message, "exit code 1") {
		t.Logf("job message: %s", info.Message)
	}
}

func TestJobSetupFailure(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	id := submissionID(t, "noflow")
	info := submitAndWait(t, c, id, "no-such-flow", "1")
	if info.Status != rayjob.StatusFailed {
		t.Fatalf("status %s, want FAILED", info.Status)
	}
	res, err := c.Result(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error == nil || res.Error.Kind != "setup" || !strings.Contains(res.Error.Message, `no flow named "no-such-flow"`) {
		t.Errorf("result %+v, want a setup failure naming the flow", res.Error)
	}
}

func TestJobStop(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id := submissionID(t, "stop")
	// 10,000 items take far longer than the test waits.
	if _, err := c.Submit(ctx, rayjob.Job{SubmissionID: id, Executable: appBinary, Flow: "fanout",
		Input: json.RawMessage(`10000`), Python: python}); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Poll(ctx, 200*time.Millisecond, "the job running", func(ctx context.Context) (bool, error) {
		info, err := c.Status(ctx, id)
		if err != nil {
			return false, err
		}
		if info.Status.Terminal() {
			return false, fmt.Errorf("the job ended before it was stopped: %s %s", info.Status, info.Message)
		}
		return info.Status == rayjob.StatusRunning, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Stop it once the coordinator has started its run: its engine is
	// connected to the cluster (the bridge's Ray log line follows the
	// coordinator's own line in the job's log).
	var logs string
	if err := testwait.Poll(ctx, 200*time.Millisecond, "the coordinator's run", func(ctx context.Context) (bool, error) {
		var err error
		logs, err = c.Logs(ctx, id)
		_, after, ok := strings.Cut(logs, "rayflow coordinator: flow fanout")
		return ok && strings.Contains(after, "Connected to Ray cluster"), err
	}); err != nil {
		t.Fatalf("%v; job log:\n%s", err, logs)
	}
	if err := c.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := c.Wait(ctx, id, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != rayjob.StatusStopped {
		t.Fatalf("status %s after stop, want STOPPED", info.Status)
	}
	if _, err := c.Logs(ctx, id); err != nil {
		t.Errorf("logs of a stopped job: %v", err)
	}
}

func TestParseResult(t *testing.T) {
	ok := `{"version":1,"flow":"f","ok":true,"output":{"a":1}}`
	logs := "noise\n" + coordinator.ResultPrefix + `{"version":1,"flow":"f","ok":false,"error":{"kind":"run","type":"x","message":"m"}}` +
		"\nmore\n" + coordinator.ResultPrefix + ok + "\n\n"
	r, err := rayjob.ParseResult(logs)
	if err != nil || !r.OK || string(r.Output) != `{"a":1}` {
		t.Fatalf("ParseResult: %+v, %v", r, err)
	}
	if _, err := rayjob.ParseResult("no record\n"); !errors.Is(err, rayjob.ErrNoResult) {
		t.Errorf("no record: %v", err)
	}
	if _, err := rayjob.ParseResult(coordinator.ResultPrefix + `{"version":2}`); err == nil {
		t.Error("version 2 accepted")
	}
	if _, err := rayjob.ParseResult(coordinator.ResultPrefix + `{`); err == nil {
		t.Error("malformed record accepted")
	}
}

func TestEntrypoint(t *testing.T) {
	ep, err := rayjob.Entrypoint("/opt/my app/fanout", "fan'out", json.RawMessage(`{"n": 20}`), "/venv/bin/python", map[string]string{"B": "x y", "A": "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := `RAYFLOW_RAYJOB=1 RAYFLOW_RAYJOB_FLOW='fan'\''out' RAYFLOW_RAYJOB_INPUT=eyJuIjogMjB9 RAYFLOW_PYTHON=/venv/bin/python A=1 B='x y' '/opt/my app/fanout'`
	if ep != want {
		t.Errorf("entrypoint\n got %s\nwant %s", ep, want)
	}
	for _, bad := range []struct {
		exe, flow, input string
		env              map[string]string
	}{
		{"", "f", "1", nil}, {"/x", "", "1", nil}, {"/x", "f", "", nil}, {"/x", "f", "{", nil},
		{"/x", "f", "1", map[string]string{"A B": "1"}},
		{"/x", "f", `"` + strings.Repeat("x", rayjob.MaxInputBytes) + `"`, nil},
	} {
		if _, err := rayjob.Entrypoint(bad.exe, bad.flow, json.RawMessage(bad.input), "", bad.env); err == nil {
			t.Errorf("Entrypoint(%q, %q, %.20q, %v) accepted", bad.exe, bad.flow, bad.input, bad.env)
		}
	}
}
