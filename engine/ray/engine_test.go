package ray

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/sdk"
)

func runBoth[In, Out any](t *testing.T, f sdk.Flow[In, Out], in In) (ray, local Out) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got, err := runOn(ctx, testEngine, f, in)
	if err != nil {
		t.Fatalf("ray: %v", err)
	}
	want, err := sdk.Run(ctx, f, in)
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	return got, want
}

func TestChain(t *testing.T) {
	needRay(t)
	t.Parallel()
	got, want := runBoth(t, chainFlow, 4)
	if got != want || got != "n=110" {
		t.Fatalf("ray %q, local %q, want n=110", got, want)
	}
}

func TestGroup(t *testing.T) {
	needRay(t)
	t.Parallel()
	got, want := runBoth(t, groupFlow, 5)
	if got != want || got != 6+10+12 {
		t.Fatalf("ray %d, local %d", got, want)
	}
}

func TestChainStepError(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	_, err := runOn(ctx, testEngine, sdk.Then(sdk.Step(Double), sdk.Step(Show)), -3)
	var se *sdk.StepError
	if !errors.As(err, &se) || se.Node != "0.1" {
		t.Fatalf("want a StepError at 0.1, got %v", err)
	}
	var le *LeafError
	if !errors.As(err, &le) || le.Type != "*errors.errorString" || le.Message != "negative: -6" {
		t.Fatalf("want an untyped LeafError, got %#v", se.Err)
	}
}

func TestMapOrdered(t *testing.T) {
	needRay(t)
	t.Parallel()
	f := mapFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
	got, want := runBoth(t, f, JobsSpec{N: 40, FailAt: -1, Template: Job{SleepMS: 5}})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ray vs local (-local +ray):\n%s", diff)
	}
	if len(got) != 40 || got[39] != 39*39 {
		t.Fatalf("unexpected %v", got)
	}
	empty, _ := runBoth(t, f, JobsSpec{N: 0, FailAt: -1})
	if empty == nil || len(empty) != 0 {
		t.Fatalf("empty map: %#v", empty)
	}
}

func TestLeafPanic(t *testing.T) {
	needRay(t)
	t.Parallel()
	_, err := runOn(context.Background(), testEngine, workFlow, Job{I: 3, Panic: true})
	var pe *sdk.PanicError
	if !errors.As(err, &pe) || pe.Value != "job 3 panicked" || pe.Stack == "" {
		t.Fatalf("want a PanicError, got %v", err)
	}
	var se *sdk.StepError
	if !errors.As(err, &se) || se.Node != "0" {
		t.Fatalf("want a StepError at 0, got %v", err)
	}
}

func TestBootstrapRunsInLeafProcess(t *testing.T) {
	needRay(t)
	t.Parallel()
	got, want := runBoth(t, bootFlow, 0)
	if !got || !want {
		t.Fatalf("bootstrap ran: ray %v, local %v", got, want)
	}
}

// A failing branch cancels a sibling branch's map, as locally.
func TestGroupFailureCancelsSiblingMap(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	in := JobsSpec{N: 20, FailAt: -1, Template: Job{SleepMS: 2000}}
	start := time.Now()
	_, err := runOn(ctx, testEngine, groupMapFlow, in)
	elapsed := time.Since(start)
	var jf *JobFailure
	if !errors.As(err, &jf) || jf.Item != -1 {
		t.Fatalf("want the failing branch's error, got %v", err)
	}
	_, lerr := sdk.Run(ctx, groupMapFlow, in)
	if lerr == nil || lerr.Error() != err.Error() {
		t.Fatalf("local %v, ray %v", lerr, err)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("took %v: the sibling map was not cancelled (it needs 20s)", elapsed)
	}
}
