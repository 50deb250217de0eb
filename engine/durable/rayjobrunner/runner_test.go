package rayjobrunner

import (
	"context"
	"errors"
	"testing"

	"github.com/rayflow/rayflow/engine/durable"
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
