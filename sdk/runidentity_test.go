package sdk_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// TestRunIdentityIsTheRecord: sdk.RunIdentity is the generated run
// identity record itself, not a hand-written copy converted to it, so a
// run's identity is the one its progress carries.
func TestRunIdentityIsTheRecord(t *testing.T) {
	if got, want := reflect.TypeFor[sdk.RunIdentity](), reflect.TypeFor[common.RunIdentity](); got != want {
		t.Fatalf("sdk.RunIdentity is %v, want %v", got, want)
	}
	id := sdk.NewRunIdentity()
	if err := id.Validate(); err != nil {
		t.Fatalf("NewRunIdentity() = %+v: %v", id, err)
	}
	var started sdk.RunIdentity
	var published []common.RunIdentity
	sink := func(_ context.Context, p *progress.Publication) error {
		published = append(published, p.Summary.RunIdentity)
		return nil
	}
	if _, err := sdk.Run(context.Background(), sdk.Step(Inc), 1, sdk.WithRunIdentity(id), sdk.WithProgress(progress.SinkFunc(sink)),
		sdk.OnRunStart(func(x sdk.RunIdentity) { started = x })); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(id, started); d != "" {
		t.Fatalf("OnRunStart identity (-given +got):\n%s", d)
	}
	if len(published) == 0 || published[len(published)-1] != id {
		t.Fatalf("published identities %+v, want %+v", published, id)
	}
}

// TestRunIdentityBounds: WithRunIdentity takes the record's constraints,
// at each edge; a schema version left at zero is the only one, 1. An
// invalid identity fails the run before any leaf with ErrInvalidRunIdentity.
func TestRunIdentityBounds(t *testing.T) {
	const uuid = "0a1b2c3d-0000-4000-8000-00000000000f"
	valid := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: 1, AttemptNumber: 1, ExecutionGeneration: 0, RunID: uuid}
	cases := []struct {
		name string
		edit func(*sdk.RunIdentity)
		ok   bool
	}{
		{"smallest valid", func(*sdk.RunIdentity) {}, true},
		{"schema version unset", func(id *sdk.RunIdentity) { id.SchemaVersion = 0 }, true},
		{"schema version 2", func(id *sdk.RunIdentity) { id.SchemaVersion = 2 }, false},
		{"task pk 0", func(id *sdk.RunIdentity) { id.TaskExecutionPK = 0 }, false},
		{"attempt 0", func(id *sdk.RunIdentity) { id.AttemptNumber = 0 }, false},
		{"generation -1", func(id *sdk.RunIdentity) { id.ExecutionGeneration = -1 }, false},
		{"upper-case run id", func(id *sdk.RunIdentity) { id.RunID = "0A1B2C3D-0000-4000-8000-00000000000F" }, false},
		{"empty run id", func(id *sdk.RunIdentity) { id.RunID = "" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := valid
			c.edit(&id)
			var started sdk.RunIdentity
			_, err := sdk.Run(context.Background(), sdk.Step(Inc), 1, sdk.WithRunIdentity(id),
				sdk.OnRunStart(func(x sdk.RunIdentity) { started = x }))
			if c.ok {
				if err != nil {
					t.Fatalf("Run with %+v: %v", id, err)
				}
				if started.SchemaVersion != 1 {
					t.Fatalf("started with schema version %d, want 1", started.SchemaVersion)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalidRunIdentity) {
				t.Fatalf("Run with %+v = %v, want ErrInvalidRunIdentity", id, err)
			}
			if started != (sdk.RunIdentity{}) {
				t.Fatal("an invalid identity started a run")
			}
		})
	}
}

// attemptOf is a step that returns the run identity its context carries.
func attemptOf(ctx context.Context, _ int) (sdk.RunIdentity, error) {
	id, ok := sdk.AttemptFrom(ctx)
	if !ok {
		return id, errors.New("no run identity in the step's context")
	}
	return id, nil
}

func attemptItems(_ context.Context, n int) ([]int, error) { return make([]int, n), nil }

// TestAttemptFrom: a step reads its run's identity (the durable attempt)
// from its context, in a lone step, a chain and each item of a map,
// sequential or not; outside a run there is none.
func TestAttemptFrom(t *testing.T) {
	given := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: 42, AttemptNumber: 3, ExecutionGeneration: 7,
		RunID: "0a1b2c3d-0000-4000-8000-00000000000f"}
	step := sdk.Step(attemptOf)
	mapped := sdk.Then(sdk.Step(attemptItems), sdk.Map(sdk.Step(attemptOf)))
	cases := []struct {
		name string
		run  func(ctx context.Context, opts ...sdk.RunOption) ([]sdk.RunIdentity, error)
	}{
		{"step", func(ctx context.Context, opts ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			id, err := sdk.Run(ctx, step, 0, opts...)
			return []sdk.RunIdentity{id}, err
		}},
		{"map items", func(ctx context.Context, opts ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			return sdk.Run(ctx, mapped, 3, opts...)
		}},
		{"map items, sequential", func(ctx context.Context, opts ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			return sdk.Run(ctx, mapped, 3, append(opts, sdk.Sequential())...)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.run(context.Background(), sdk.WithRunIdentity(given))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range got {
				if d := cmp.Diff(given, id); d != "" {
					t.Fatalf("AttemptFrom in the step (-given +got):\n%s", d)
				}
			}
			var started sdk.RunIdentity
			got, err = c.run(context.Background(), sdk.OnRunStart(func(x sdk.RunIdentity) { started = x }))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range got {
				if d := cmp.Diff(started, id); d != "" || id.AttemptNumber != 1 {
					t.Fatalf("AttemptFrom without WithRunIdentity (-run's own +got):\n%s", d)
				}
			}
		})
	}
	if id, ok := sdk.AttemptFrom(context.Background()); ok {
		t.Fatalf("AttemptFrom outside a run: %+v, true", id)
	}
}
