package rayjobrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/errwire"
	"github.com/rayflow/rayflow/rayjob/coordinator"
	"github.com/rayflow/rayflow/sdk"
)

type counted struct {
	N       int `json:"n"`
	Attempt int `json:"attempt,omitempty"`
}

func (c *counted) SetAttempt(a int) { c.Attempt = a }

type plain struct {
	N int `json:"n"`
}

func countedStep(_ context.Context, c counted) (int, error) { return c.N + c.Attempt, nil }

func plainStep(_ context.Context, p plain) (int, error) { return p.N, nil }

// A job's input is the stored input with the attempt set when the flow's
// input is a durable.AttemptInput, the stored input itself otherwise.
func TestAttemptInput(t *testing.T) {
	t.Parallel()
	reg := durable.NewRegistry()
	durable.RegisterIn(reg, "counted", sdk.Step(countedStep))
	durable.RegisterIn(reg, "plain", sdk.Step(plainStep))
	r := &Runner{o: Options{Executable: "/app", Registry: reg}}
	for _, tc := range []struct {
		flow, input string
		attempt     int64
		want        string
		permanent   bool // a permanent decoding error
	}{
		{"counted", `{"n":1}`, 3, `{"n":1,"attempt":3}`, false},
		{"counted", `{"n":1,"attempt":9}`, 2, `{"n":1,"attempt":2}`, false},
		{"plain", `{"n": 1}`, 2, `{"n": 1}`, false},
		{"elsewhere", `{"x":1}`, 2, `{"x":1}`, false},
		{"counted", `{"n":"one"}`, 2, "", true},
	} {
		got, err := r.attemptInput(durable.JobAttempt{Flow: tc.flow, Input: []byte(tc.input), Identity: sdk.RunIdentity{AttemptNumber: tc.attempt}})
		if tc.permanent {
			if err == nil || errors.Is(err, durable.ErrUnknownFlow) {
				t.Errorf("%s %s: %s, %v; want a decoding error", tc.flow, tc.input, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %s attempt %d: %s, %v; want %s", tc.flow, tc.input, tc.attempt, got, err, tc.want)
		}
	}
}

// A failed job's record carries its error chain: the status wraps the
// run's own error (a contract error stays one, so the queue does not retry
// it), and its message is the record's, chain or not.
func TestFailedJobCarriesItsError(t *testing.T) {
	t.Parallel()
	runErr := fmt.Errorf("the map: %w", &sdk.MaxItemsError{Node: "0", MaxItems: 3, Items: 4})
	chain := errwire.Marshal(sdk.DefaultCodec, runErr)
	for _, tc := range []struct {
		name    string
		chain   json.RawMessage
		wantErr bool
	}{
		{"with its chain", chain, true},
		{"an older record", nil, false},
		{"a chain that does not decode", json.RawMessage(`{"v":99}`), false},
	} {
		res := &coordinator.Result{Version: coordinator.ResultVersion, Fingerprint: "sha256:f",
			Error: &coordinator.ErrorInfo{Kind: "run", Type: "*fmt.wrapError", Message: runErr.Error(), Chain: tc.chain}}
		st := statusOf(durable.JobStatus{}, res)
		if st.State != durable.JobFailed || st.Fingerprint != "sha256:f" ||
			st.Message != "run error *fmt.wrapError: the map: "+(&sdk.MaxItemsError{Node: "0", MaxItems: 3, Items: 4}).Error() {
			t.Errorf("%s: %+v", tc.name, st)
		}
		// MaxItemsError is not a registered error type: it arrives as an
		// *errwire.Remote that keeps its type's name, which is what the
		// queue's retry decision reads.
		want := fmt.Sprintf("%T", &sdk.MaxItemsError{})
		if got := hasLinkOfType(st.Err, want); got != tc.wantErr || (got && st.Err.Error() != runErr.Error()) {
			t.Errorf("%s: Err %v, want a link of type %s: %v", tc.name, st.Err, want, tc.wantErr)
		}
	}
}

func hasLinkOfType(err error, name string) bool {
	return !errwire.Walk(err, func(e error) bool { return errwire.OriginalType(e) != name })
}
