// Package sdkhost is what this module's own hosts of plans call on sdk:
// the durable worker, a Ray job's coordinator and the rayflow command hold
// a plan as a value or a flow by its registered name, never a typed flow,
// so they run and materialize it here, with sdk's own types. An
// application runs typed flows with sdk.Run and sdk.Materialize instead;
// keeping these here keeps `go doc ./sdk` an application author's guide.
package sdkhost

import (
	"context"
	"fmt"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

// RunPlan runs an already materialized plan on input, as sdk.Run does (the
// same identity, progress and engine options; sdk.WithPlan and
// sdk.WithPlanOptions do not apply), and returns the engine's raw result:
// the Go value from the local engine, the codec's encoded bytes from the
// Ray engine (sdkrt.DecodeResult turns either into a typed value). A nil
// or incomplete plan fails with sdkrt.ErrNotMaterialized.
func RunPlan(ctx context.Context, m *sdk.Materialized, input any, opts ...sdk.RunOption) (any, error) {
	return sdkrt.RunPlan(ctx, m, input, opts)
}

// MaterializeRegistered materializes the flow registered under name
// (sdk.RegisterFlow) as sdk.Materialize does. An unknown name fails with an
// error wrapping sdk.ErrUnknownFlow that lists the registered flows.
func MaterializeRegistered(name string, opts ...sdk.MaterializeOption) (*sdk.Materialized, error) {
	m, err := sdkrt.MaterializeFlow(name, opts)
	if err != nil {
		return nil, err
	}
	return m.(*sdk.Materialized), nil
}

// RegisteredFlows lists the registered flow names, sorted.
func RegisteredFlows() []string { return sdkrt.Flows() }

// CheckRetryPin enforces retry pinning (PLAN-09): the first
// materialization of a durable run pins its fingerprint and attempt; a
// later attempt must reproduce the exact fingerprint and the plan must be
// retry-safe, else the run fails before any leaf is submitted, with an
// error wrapping sdk.ErrRetryPinMismatch. An empty pin is the first
// attempt.
func CheckRetryPin(m *sdk.Materialized, pinnedFingerprint string, pinnedAttempt, attempt int) error {
	switch {
	case pinnedFingerprint == "" || attempt == pinnedAttempt:
		if pinnedFingerprint != "" && pinnedFingerprint != m.Fingerprint {
			return fmt.Errorf("%w: fingerprint %s, pinned %s", sdk.ErrRetryPinMismatch, m.Fingerprint, pinnedFingerprint)
		}
		return nil
	case pinnedFingerprint != m.Fingerprint:
		return fmt.Errorf("%w: attempt %d materialized %s, attempt %d pinned %s", sdk.ErrRetryPinMismatch, attempt, m.Fingerprint, pinnedAttempt, pinnedFingerprint)
	case !m.Plan.RetrySafety.RetrySafe:
		return fmt.Errorf("%w: the plan is not retry-safe (%v)", sdk.ErrRetryPinMismatch, m.Plan.RetrySafety.RetryUnsafePaths)
	}
	return nil
}
