package durable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	rayengine "github.com/rayflow/rayflow/engine/ray"
	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Flows whose failures break a contract rule (items 9 and 11 of the
// hardening issue), and flows failing with application errors of each
// kind a recorded error type can name.

// itemsMax is test.items's map cap.
const itemsMax = 4

// MakeItems makes n items (make panics for n < 0, as examples/fanout's
// build_items does).
func MakeItems(_ context.Context, n int) ([]int, error) { return make([]int, n), nil }

func Double(_ context.Context, v int) (int, error) { return 2 * v, nil }

// Canon canonicalizes its input as JSON (a codec refusal for a duplicate
// key).
func Canon(_ context.Context, s string) (string, error) {
	b, err := canonical.Transform([]byte(s))
	if err != nil {
		return "", fmt.Errorf("canonicalizing the order: %w", err)
	}
	return string(b), nil
}

// NotFinite returns a value the value codec refuses.
func NotFinite(_ context.Context, _ int) (float64, error) { return math.NaN(), nil }

// errOutOfStock is a sentinel registered with sdk.RegisterSentinel.
var errOutOfStock = errors.New("out of stock")

// quotaError is a typed error registered with sdk.RegisterErrorType.
type quotaError struct {
	Used  int `json:"used"`
	Limit int `json:"limit"`
}

func (e *quotaError) Error() string { return fmt.Sprintf("quota: %d of %d used", e.Used, e.Limit) }

// FailAs fails with an application error of the kind named by its input.
func FailAs(_ context.Context, kind string) (string, error) {
	switch kind {
	case "plain":
		return "", errors.New("plain failure")
	case "formatted":
		return "", fmt.Errorf("order %d failed", 7)
	case "typed":
		return "", fmt.Errorf("charging: %w", &boomError{"card"})
	case "registered":
		return "", fmt.Errorf("charging: %w", &quotaError{Used: 3, Limit: 3})
	case "sentinel":
		return "", fmt.Errorf("reserving: %w", errOutOfStock)
	case "permanent":
		return "", Permanent(fmt.Errorf("charging: %w", &boomError{"declined"}))
	}
	return kind, nil
}

var (
	ItemsFlow = sdk.Chain3(sdk.Step(MakeItems),
		sdk.Map(sdk.Step(Double, sdk.WithResources(sdk.Resources{NumCPUs: 0.25}))).
			WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: itemsMax}),
		sdk.Step(Sum))
	CanonFlow     = sdk.Step(Canon)
	NotFiniteFlow = sdk.Step(NotFinite)
	FailAsFlow    = sdk.Step(FailAs)
)

func init() {
	sdk.RegisterSentinel(errOutOfStock)
	sdk.RegisterErrorType[*quotaError]()
	Register("test.items", ItemsFlow)
	Register("test.canon", CanonFlow)
	Register("test.notfinite", NotFiniteFlow)
	Register("test.failas", FailAsFlow)
}

// runner names a worker set-up: in process, or on the shared Ray cluster.
type runner struct {
	name string
	ray  bool
}

var runners = []runner{{"local", false}, {"ray", true}}

// startRunner starts a worker of r on e (skipping a Ray runner without a
// cluster).
func (e *env) startRunner(r runner, o WorkerOptions) {
	e.t.Helper()
	if r.ray {
		addr := rayAddress(e.t)
		eng, err := rayengine.New(e.t.Context(), rayengine.Options{Address: addr, Stderr: os.Stderr})
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = eng.Close() })
		o.Engine, o.RayAddress = eng, addr
	}
	e.startWorker(o)
}

// ended is what a test compares of a finished task.
type ended struct {
	State     State
	Attempt   int
	ErrorType string
}

func endedOf(t *Task) ended { return ended{t.State, t.Attempt, t.ErrorType} }

// TestContractErrorsArePermanent: a failure that breaks a contract rule (a
// map over its MaxItems, a recovered panic, a codec refusal) or is marked
// Permanent by its step ends FAILED at attempt 1 of 3 on the local and
// the Ray runner, while an application error is retried to attempt 3.
// The map's cap is tested at the edge.
func TestContractErrorsArePermanent(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t)
			e.startRunner(r, fastOptions())
			type contractCase struct {
				name, flow, input string
				want              ended
			}
			tests := []contractCase{
				{"items at the cap", "test.items", fmt.Sprint(itemsMax), ended{StateSucceeded, 1, ""}},
				{"items one over the cap", "test.items", fmt.Sprint(itemsMax + 1), ended{StateFailed, 1, "*flowgraph.MaxItemsError"}},
				{"recovered panic", "test.items", "-5", ended{StateFailed, 1, "*flowgraph.PanicError"}},
				{"codec refusal", "test.canon", `"{\"a\":1,\"a\":2}"`, ended{StateFailed, 1, "*canonical.Error"}},
				{"marked Permanent", "test.failas", `"permanent"`, ended{StateFailed, 1, "*durable.boomError"}},
				{"application error", "test.fail", `"x"`, ended{StateFailed, 3, "*durable.boomError"}},
			}
			// A result the codec refuses: the node's *sdk.ValueError on both
			// runners, recorded by the codec's own error type.
			tests = append(tests, contractCase{"value the codec refuses", "test.notfinite", "1",
				ended{StateFailed, 1, "*json.UnsupportedValueError"}})
			ids := make([]string, len(tests))
			for i, tc := range tests {
				ids[i] = e.enqueue(tc.flow, tc.input, EnqueueOptions{})
			}
			for i, tc := range tests {
				task := e.wait(ids[i], 120*time.Second)
				if diff := cmp.Diff(tc.want, endedOf(task)); diff != "" {
					t.Errorf("%s: (-want +got):\n%s(error: %s)", tc.name, diff, task.ErrorMessage)
				}
				if len(task.Attempts) != task.Attempt {
					t.Errorf("%s: %d attempts archived at attempt %d", tc.name, len(task.Attempts), task.Attempt)
				}
			}
		})
	}
}

// TestPermanentMarksAnyError: durable.Permanent stops automatic retry of
// any error, and isPermanent sees contract errors however deeply wrapped.
func TestPermanentMarksAnyError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{Permanent(errors.New("refused")), true},
		{fmt.Errorf("a: %w", Permanent(&boomError{"x"})), true},
		{&sdk.StepError{Err: fmt.Errorf("b: %w", &sdk.MaxItemsError{Items: 5, MaxItems: 4})}, true},
		{fmt.Errorf("c: %w", &sdk.DefinitionError{Code: sdk.CodeEmpty}), true},
		{fmt.Errorf("d: %w", sdk.ErrStrategyRejected), true},
		{errors.Join(errors.New("e"), canonical.RuleDepth), true},
		{&sdk.StepError{Err: &sdk.PanicError{Value: "boom"}}, true},
		{&boomError{"x"}, false},
		{fmt.Errorf("f: %w", context.DeadlineExceeded), false},
		// From a Ray leaf, unregistered: the type name crossed the wire.
		{&sdk.StepError{Err: &errwire.Remote{Type: "*fmt.wrapError", Wrapped: []error{&errwire.Remote{Type: "*canonical.Error"}}}}, true},
		{&sdk.StepError{Err: &errwire.Remote{Type: "*durable.boomError"}}, false},
	} {
		if got := isPermanent(tc.err); got != tc.want {
			t.Errorf("isPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestErrorTypeSameOnEveryRunner: the same failures run on the local and
// on the Ray runner record the same error_type: the application's own
// error type (also unregistered, whose value cannot cross from a Ray
// leaf), or the name of a sentinel registered with sdk.RegisterSentinel.
func TestErrorTypeSameOnEveryRunner(t *testing.T) {
	kinds := []string{"plain", "formatted", "typed", "registered", "sentinel"}
	want := map[string]string{
		"plain":      "*errors.errorString",
		"formatted":  "*errors.errorString",
		"typed":      "*durable.boomError",
		"registered": "*durable.quotaError",
		"sentinel":   "github.com/rayflow/rayflow/durable:*errors.errorString:out of stock",
	}
	got := map[string]map[string]string{}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t)
			e.startRunner(r, fastOptions())
			ids := map[string]string{}
			for _, k := range kinds {
				ids[k] = e.enqueue("test.failas", fmt.Sprintf("%q", k), EnqueueOptions{MaxAttempts: 1})
			}
			types := map[string]string{}
			for _, k := range kinds {
				task := e.wait(ids[k], 120*time.Second)
				if task.State != StateFailed || len(task.Attempts) != 1 || task.Attempts[0].ErrorType != task.ErrorType {
					t.Fatalf("%s: %s, attempts %+v", k, task.State, task.Attempts)
				}
				types[k] = task.ErrorType
			}
			if diff := cmp.Diff(want, types); diff != "" {
				t.Errorf("error types on the %s runner (-want +got):\n%s", r.name, diff)
			}
			got[r.name] = types
		})
	}
	if len(got) == len(runners) {
		if diff := cmp.Diff(got["local"], got["ray"]); diff != "" {
			t.Errorf("error types differ by runner (-local +ray):\n%s", diff)
		}
	}
}
