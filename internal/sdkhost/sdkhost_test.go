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
