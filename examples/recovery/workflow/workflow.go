// Package recoveryflow is the three-attempt recovery showcase of the reference
// system's test project (docs/serve.md#enqueue-routes-and-the-showcase-workflows): the
// order-fulfillment workflow (examples/orderfulfillment/workflow, the same
// 21 nodes) run as one durable task with three attempts and a fixed,
// server-owned failure sequence driven by the attempt number:
//
//   - attempt 1 fails at build_order_batch (0.1.g0.0), before the order
//     batch reaches validation, the join and everything after it;
//   - attempt 2 starts again from the entry, reruns its upstream work and
//     fails at join_order_inputs (0.2);
//   - attempt 3 starts from the entry again and completes the workflow;
//     its result's recovery field names attempt 3.
//
// The durable worker tells the input its attempt (Request implements
// durable.AttemptInput; on the ray_job runner each attempt's job receives
// the input with its attempt set); the
// caller cannot choose the failure stage, so the sequence is
// deterministic. Every attempt publishes its own progress, so
// the graph page shows all three (its attempt switcher). The steps are pure:
// this proves replay and attempt fencing, not checkpointed continuation (no
// node of attempt 1 or 2 is reused by attempt 3).
package recoveryflow

import (
	"context"
	"fmt"
	"math"

	of "github.com/rayflow/rayflow/examples/orderfulfillment/workflow"
	"github.com/rayflow/rayflow/sdk"
)

// FlowName is the durable flow name of Workflow.
const FlowName = "recovery"

// MaxAttempts is the task's attempt budget: the success comes with the last.
const MaxAttempts = 3

// Request is the workflow's input: the order's size and each step's
// simulated work; Attempt is set by the durable worker (any stored value
// is overwritten when a worker runs the task).
type Request struct {
	ItemCount   int     `json:"item_count"`
	WorkSeconds float64 `json:"work_seconds"`
	Attempt     int     `json:"attempt,omitempty"`
}

// SetAttempt implements durable.AttemptInput.
func (r *Request) SetAttempt(attempt int) { r.Attempt = attempt }

// DefaultRequest is the seed's invocation: one item, 10 ms of work a step.
func DefaultRequest() Request { return Request{ItemCount: 1, WorkSeconds: 0.01} }

// Validate reports a request the workflow cannot run as asked (errors wrap
// orderfulfillment's ErrInvalidRequest).
func (r Request) Validate() error {
	if r.ItemCount < 1 || r.ItemCount > of.MaxItems {
		return fmt.Errorf("%w: item_count must be between 1 and %d, got %d", of.ErrInvalidRequest, of.MaxItems, r.ItemCount)
	}
	if math.IsNaN(r.WorkSeconds) || r.WorkSeconds < 0 || r.WorkSeconds > of.MaxWorkSeconds {
		return fmt.Errorf("%w: work_seconds must be between 0 and %g, got %g", of.ErrInvalidRequest, of.MaxWorkSeconds, r.WorkSeconds)
	}
	if r.Attempt < 0 {
		return fmt.Errorf("%w: attempt must not be negative, got %d", of.ErrInvalidRequest, r.Attempt)
	}
	return nil
}

// FailureStage is the stage attempt fails at ("" for success): the fixed
// sequence of the package doc. Attempt 0 (a run outside the durable
// runtime) behaves as attempt 1.
func FailureStage(attempt int) string {
	switch {
	case attempt <= 1:
		return of.StageBuildOrderBatch
	case attempt == 2:
		return of.StageJoinOrderInputs
	}
	return ""
}

// ReceiveRecoveryOrder checks the request and builds the order with its
// attempt's failure switch (0.0).
func ReceiveRecoveryOrder(ctx context.Context, r Request) (of.Order, error) {
	if err := r.Validate(); err != nil {
		return of.Order{}, err
	}
	attempt := max(r.Attempt, 1)
	return of.NewOrder(of.Request{ItemCount: r.ItemCount, WorkSeconds: r.WorkSeconds, FailureStage: FailureStage(attempt)}, attempt), ctx.Err()
}

// Workflow is the recovery showcase.
var Workflow = of.Build(sdk.Step(ReceiveRecoveryOrder).Named(of.StageReceiveOrder))

func init() { sdk.RegisterFlow(FlowName, Workflow) }
