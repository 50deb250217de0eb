package reducer

import (
	"context"
	"fmt"

	"github.com/rayflow/rayflow/gen/lifecycle"
)

// Adapter dispatches actions to a runtime (a future native Compiled Graph
// adapter, or Fake in tests). Each method performs exactly the action it
// names and returns one callback event for it: the action's token,
// identities and output index echoed (see Callback), observed_at read from
// the adapter's own clock. Runtime objects stay inside the adapter; nothing
// it returns may carry a payload, result, error text or handle. An adapter
// that gives up at the action deadline returns DEADLINE_EXPIRED.
type Adapter interface {
	Validate(ctx context.Context, a Action) Event
	Prepare(ctx context.Context, a Action) Event
	Admit(ctx context.Context, a Action) Event
	Submit(ctx context.Context, a Action) Event
	ConsumeOutput(ctx context.Context, a Action) Event
	ReleaseCapacity(ctx context.Context, a Action) Event
	Cancel(ctx context.Context, a Action) Event
	DrainInvocation(ctx context.Context, a Action) Event
	DrainSession(ctx context.Context, a Action) Event
	CheckHealth(ctx context.Context, a Action) Event
	Teardown(ctx context.Context, a Action) Event
}

// Dispatch calls the Adapter method that a.Kind names. An unsupported kind
// fails closed: it returns an event the reducer rejects with INVALID_EVENT.
func Dispatch(ctx context.Context, ad Adapter, a Action) Event {
	switch a.Kind {
	case lifecycle.ActionValidate:
		return ad.Validate(ctx, a)
	case lifecycle.ActionPrepare:
		return ad.Prepare(ctx, a)
	case lifecycle.ActionAdmit:
		return ad.Admit(ctx, a)
	case lifecycle.ActionSubmit:
		return ad.Submit(ctx, a)
	case lifecycle.ActionConsumeOutput:
		return ad.ConsumeOutput(ctx, a)
	case lifecycle.ActionReleaseCapacity:
		return ad.ReleaseCapacity(ctx, a)
	case lifecycle.ActionCancel:
		return ad.Cancel(ctx, a)
	case lifecycle.ActionDrainInvocation:
		return ad.DrainInvocation(ctx, a)
	case lifecycle.ActionDrainSession:
		return ad.DrainSession(ctx, a)
	case lifecycle.ActionCheckHealth:
		return ad.CheckHealth(ctx, a)
	case lifecycle.ActionTeardown:
		return ad.Teardown(ctx, a)
	}
	return Event{Kind: EventKind("UNSUPPORTED_ACTION:" + string(a.Kind))}
}

// Drive dispatches a and every action that follows from it until the
// reducer issues none, and returns the resulting state. It stops with the
// last accepted state and an error when the reducer rejects a callback or
// ctx is done.
func Drive(ctx context.Context, s State, ad Adapter, a *Action) (State, error) {
	for a != nil {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		ev := Dispatch(ctx, ad, *a)
		next, na, rej := s.Apply(ev)
		if rej != nil {
			return s, fmt.Errorf("lifecycle: %T: callback %s to %s: %w", ad, ev.Kind, a.Token, rej)
		}
		s, a = next, na
	}
	return s, nil
}
