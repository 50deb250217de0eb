package sdkhost_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

func Inc(_ context.Context, v int) (int, error) { return v + 1, nil }

func init() { sdk.RegisterFlow("sdkhost_test.registered", sdk.Then(sdk.Step(Inc), sdk.Step(Inc))) }

func TestMaterializeRegistered(t *testing.T) {
	m, err := sdkhost.MaterializeRegistered("sdkhost_test.registered")
	if err != nil {
		t.Fatal(err)
	}
	want, err := sdk.Materialize(sdk.Then(sdk.Step(Inc), sdk.Step(Inc)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Fingerprint != want.Fingerprint {
		t.Fatalf("fingerprint %s, want %s", m.Fingerprint, want.Fingerprint)
	}
	if out, err := sdkhost.RunPlan(context.Background(), m, 1); err != nil || out != 3 {
		t.Fatalf("RunPlan = %v, %v; want 3", out, err)
	}
	if n, err := sdkrt.DecodeResult[int](3); err != nil || n != 3 {
		t.Fatalf("DecodeResult(3) = %v, %v", n, err)
	}
	if !slices.Contains(sdkhost.RegisteredFlows(), "sdkhost_test.registered") {
		t.Fatalf("RegisteredFlows = %v", sdkhost.RegisteredFlows())
	}
	_, err = sdkhost.MaterializeRegistered("sdkhost_test.no-such-flow")
	if !errors.Is(err, sdk.ErrUnknownFlow) || !strings.Contains(err.Error(), "sdkhost_test.registered") {
		t.Fatalf("unknown flow: %v; want ErrUnknownFlow listing the registered flows", err)
	}
}

// RunPlan of no plan fails with a typed error, before any engine runs.
func TestRunPlanOfNoPlan(t *testing.T) {
	for _, m := range []*sdk.Materialized{nil, {}} {
		if _, err := sdkhost.RunPlan(context.Background(), m, 1); !errors.Is(err, sdkrt.ErrNotMaterialized) {
			t.Errorf("RunPlan(%v) = %v; want ErrNotMaterialized", m, err)
		}
	}
}

// DecodeResult decodes an encoded result with its codec and refuses a Go
// value of another type.
func TestDecodeResult(t *testing.T) {
	n, err := sdkrt.DecodeResult[int](&sdkrt.EncodedResult{Codec: sdk.DefaultCodec, Bytes: []byte("41")})
	if err != nil || n != 41 {
		t.Fatalf("DecodeResult(encoded 41) = %v, %v", n, err)
	}
	if n, err := sdkrt.DecodeResult[int](nil); err != nil || n != 0 {
		t.Fatalf("DecodeResult(nil) = %v, %v", n, err)
	}
	if _, err := sdkrt.DecodeResult[int]("x"); err == nil {
		t.Fatal("DecodeResult[int](\"x\") did not fail")
	}
	if _, err := sdkrt.DecodeResult[int](&sdkrt.EncodedResult{Codec: sdk.DefaultCodec, Bytes: []byte(`"x"`)}); err == nil {
		t.Fatal("DecodeResult[int] of an encoded string did not fail")
	}
}

func Double(_ context.Context, v int) (int, error) { return 2 * v, nil }

// TestRetryPinning (PLAN-09): a retry must reproduce the pinned
// fingerprint of a retry-safe plan.
func TestRetryPinning(t *testing.T) {
	materialize := func(opts ...sdk.StepOption) *sdk.Materialized {
		t.Helper()
		m, err := sdk.Materialize(sdk.Then(sdk.Step(Inc), sdk.Step(Double, opts...)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := materialize()
	other := materialize(sdk.WithResources(sdk.Resources{NumCPUs: 2}))
	if err := sdk.RegisterRuntimeEnv("sdkhost_test.mutable", sdk.RuntimeEnv{"image_uri": "example.com/app:latest"}); err != nil {
		t.Fatal(err)
	}
	unsafe := materialize(sdk.WithRuntimeEnv("sdkhost_test.mutable"))
	if unsafe.Plan.RetrySafety.RetrySafe {
		t.Fatal("a mutable image tag must make the plan retry-unsafe")
	}
	cases := []struct {
		name                   string
		m                      *sdk.Materialized
		pin                    string
		pinnedAttempt, attempt int
		ok                     bool
	}{
		{"first attempt", m, "", 0, 1, true},
		{"the pinning attempt again", m, m.Fingerprint, 1, 1, true},
		{"the pinning attempt, another plan", other, m.Fingerprint, 1, 1, false},
		{"a retry reproducing a retry-safe plan", m, m.Fingerprint, 1, 2, true},
		{"a retry with a new definition", other, m.Fingerprint, 1, 2, false},
		{"a retry of a retry-unsafe plan", unsafe, unsafe.Fingerprint, 1, 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := sdkhost.CheckRetryPin(c.m, c.pin, c.pinnedAttempt, c.attempt)
			if c.ok != (err == nil) || !c.ok && !errors.Is(err, sdk.ErrRetryPinMismatch) {
				t.Fatalf("CheckRetryPin = %v, want ok %v (else ErrRetryPinMismatch)", err, c.ok)
			}
		})
	}
}
