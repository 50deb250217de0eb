package durable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/sdk"
)

// fakeJobs is a JobRunner whose jobs behave as their input says.
type fakeJobs struct {
	mu      sync.Mutex
	inputs  map[string]string
	stopped map[string]bool
	submits int
}

func (f *fakeJobs) Submit(_ context.Context, id, _ string, input []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inputs == nil {
		f.inputs, f.stopped = map[string]string{}, map[string]bool{}
	}
	f.inputs[id] = strings.Trim(string(input), `"`)
	f.submits++
	return nil
}

func (f *fakeJobs) Status(_ context.Context, id string) (JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped[id] {
		return JobStatus{State: JobStopped}, nil
	}
	switch f.inputs[id] {
	case "ok":
		return JobStatus{State: JobSucceeded, Output: []byte(`"done"`)}, nil
	case "fail":
		return JobStatus{State: JobFailed, Message: "run error *sdk.StepError: no"}, nil
	case "contract":
		// What the Ray Job runner reads from a run that broke MaxItems.
		return JobStatus{State: JobFailed, Message: "run error *fmt.wrapError: over",
			Err: fmt.Errorf("over: %w", &sdk.MaxItemsError{Node: "0", MaxItems: 1, Items: 2})}, nil
	case "remotecontract":
		// The same from a binary that cannot rebuild the type.
		return JobStatus{State: JobFailed, Message: "run error *fmt.wrapError: over",
			Err: &errwire.Remote{Type: "*fmt.wrapError", Message: "over", Wrapped: []error{
				&errwire.Remote{Type: fmt.Sprintf("%T", &sdk.MaxItemsError{}), Message: "max"}}}}, nil
	case "unknown":
		return JobStatus{}, errors.New("dashboard unreachable")
	case "otherplan":
		return JobStatus{State: JobSucceeded, Output: []byte(`"x"`), Fingerprint: "sha256:other"}, nil
	case "outside":
		return JobStatus{State: JobStopped, Message: "stopped by an operator"}, nil
	}
	return JobStatus{State: JobRunning}, nil
}

func (f *fakeJobs) Stop(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped[id] = true
	return nil
}

// The ray_job runner's outcome mapping, with a fake cluster (no Ray).
func TestJobRunnerOutcomes(t *testing.T) {
	e := newEnv(t)
	jobs := &fakeJobs{}
	o := fastOptions()
	o.Jobs, o.JobPollInterval, o.JobUnknownTimeout = jobs, 10*time.Millisecond, 300*time.Millisecond
	e.startWorker(o)
	cases := []struct {
		input   string
		max     int
		state   State
		attempt int
		msg     string
	}{
		{"ok", 3, StateSucceeded, 1, ""},
		{"fail", 2, StateFailed, 2, "failed: run error"},
		{"contract", 3, StateFailed, 1, "failed: run error *fmt.wrapError: over"},
		{"remotecontract", 3, StateFailed, 1, "failed: run error *fmt.wrapError: over"},
		{"unknown", 3, StateLost, 1, "status is unknown"},
		{"otherplan", 3, StateFailed, 1, "ran plan sha256:other"},
		{"outside", 2, StateFailed, 2, "stopped from outside"},
	}
	// A contract error is recorded with its own type, as on the other
	// runners; other failures keep the job's message alone.
	errTypes := map[string]string{
		"contract":       fmt.Sprintf("%T", &sdk.MaxItemsError{}),
		"remotecontract": fmt.Sprintf("%T", &sdk.MaxItemsError{}),
		"fail":           "*errors.errorString",
	}
	for _, c := range cases {
		id := e.enqueue("test.upper", `"`+c.input+`"`, EnqueueOptions{MaxAttempts: c.max})
		task := e.wait(id, 20*time.Second)
		if task.State != c.state || task.Attempt != c.attempt || !strings.Contains(task.ErrorMessage, c.msg) || task.Runner != "ray_job" ||
			!strings.HasPrefix(task.RayJobID, "rayflow-"+id+"-a") {
			t.Errorf("%s: %s at %d on %s (%s): %q", c.input, task.State, task.Attempt, task.Runner, task.RayJobID, task.ErrorMessage)
		}
		if want, ok := errTypes[c.input]; ok && task.ErrorType != want {
			t.Errorf("%s: error type %q, want %q", c.input, task.ErrorType, want)
		}
	}
	// A running job is stopped on cancel.
	id := e.enqueue("test.upper", `"forever"`, EnqueueOptions{})
	running := e.waitState(id, StateRunning, 10*time.Second)
	for running.RayJobID == "" {
		running = e.waitState(id, StateRunning, 10*time.Second)
	}
	if out, _ := e.c.Cancel(t.Context(), id, Expect{}); out != CancelAccepted {
		t.Fatal(out)
	}
	if task := e.wait(id, 10*time.Second); task.State != StateCancelled {
		t.Fatalf("cancel: %s", task.State)
	}
	jobs.mu.Lock()
	defer jobs.mu.Unlock()
	if !jobs.stopped[running.RayJobID] || !jobs.stopped["rayflow-"+id+"-a1-g1"] {
		t.Fatalf("job %s not stopped: %v", running.RayJobID, jobs.stopped)
	}
}
