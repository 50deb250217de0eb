package reducer

import (
	"context"

	"github.com/rayflow/rayflow/gen/lifecycle"
)

// Fake is a scripted in-memory Adapter for tests: it answers every action
// at once, by default successfully, and records what it was asked to do.
// It is not safe for concurrent use.
type Fake struct {
	// Now is the observed_at of the next callback; every callback then
	// advances it by Step.
	Now, Step float64
	// Script holds, per action kind, the callback kinds to answer with, in
	// order; once a kind's script is used up the default applies.
	Script map[lifecycle.Action][]lifecycle.Callback
	// Calls records every action dispatched, in order.
	Calls []Action
}

// DefaultCallback is the successful answer to each action.
var DefaultCallback = map[lifecycle.Action]lifecycle.Callback{
	lifecycle.ActionValidate:        lifecycle.CallbackValidated,
	lifecycle.ActionPrepare:         lifecycle.CallbackPrepared,
	lifecycle.ActionAdmit:           lifecycle.CallbackAdmitted,
	lifecycle.ActionSubmit:          lifecycle.CallbackSubmitted,
	lifecycle.ActionConsumeOutput:   lifecycle.CallbackOutputConsumed,
	lifecycle.ActionReleaseCapacity: lifecycle.CallbackCapacityReleased,
	lifecycle.ActionCancel:          lifecycle.CallbackCancelled,
	lifecycle.ActionDrainInvocation: lifecycle.CallbackDrained,
	lifecycle.ActionDrainSession:    lifecycle.CallbackDrained,
	lifecycle.ActionCheckHealth:     lifecycle.CallbackHealthy,
	lifecycle.ActionTeardown:        lifecycle.CallbackTornDown,
}

func (f *Fake) String() string { return "fake adapter" }

func (f *Fake) answer(a Action) Event {
	f.Calls = append(f.Calls, a)
	k := DefaultCallback[a.Kind]
	if q := f.Script[a.Kind]; len(q) > 0 {
		k, f.Script[a.Kind] = q[0], q[1:]
	}
	ev := Callback(a, k, f.Now)
	f.Now += f.Step
	return ev
}

// Validate implements Adapter.
func (f *Fake) Validate(_ context.Context, a Action) Event { return f.answer(a) }

// Prepare implements Adapter.
func (f *Fake) Prepare(_ context.Context, a Action) Event { return f.answer(a) }

// Admit implements Adapter.
func (f *Fake) Admit(_ context.Context, a Action) Event { return f.answer(a) }

// Submit implements Adapter.
func (f *Fake) Submit(_ context.Context, a Action) Event { return f.answer(a) }

// ConsumeOutput implements Adapter.
func (f *Fake) ConsumeOutput(_ context.Context, a Action) Event { return f.answer(a) }

// ReleaseCapacity implements Adapter.
func (f *Fake) ReleaseCapacity(_ context.Context, a Action) Event { return f.answer(a) }

// Cancel implements Adapter.
func (f *Fake) Cancel(_ context.Context, a Action) Event { return f.answer(a) }

// DrainInvocation implements Adapter.
func (f *Fake) DrainInvocation(_ context.Context, a Action) Event { return f.answer(a) }

// DrainSession implements Adapter.
func (f *Fake) DrainSession(_ context.Context, a Action) Event { return f.answer(a) }

// CheckHealth implements Adapter.
func (f *Fake) CheckHealth(_ context.Context, a Action) Event { return f.answer(a) }

// Teardown implements Adapter.
func (f *Fake) Teardown(_ context.Context, a Action) Event { return f.answer(a) }
