package ray

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/sdk"
)

// IdentityOf returns the run identity its context carries (sdk.AttemptFrom).
func IdentityOf(ctx context.Context, _ int) (sdk.RunIdentity, error) {
	id, ok := sdk.AttemptFrom(ctx)
	if !ok {
		return id, errors.New("no run identity in the step's context")
	}
	return id, nil
}

func IdentityItems(_ context.Context, n int) ([]int, error) { return make([]int, n), nil }

// CountSameIdentity is a fold's reducer: it counts the items that carry the
// run identity its own context carries.
func CountSameIdentity(ctx context.Context, acc int, item sdk.RunIdentity) (int, error) {
	id, ok := sdk.AttemptFrom(ctx)
	if !ok {
		return acc, errors.New("no run identity in the reducer's context")
	}
	if id != item {
		return acc, fmt.Errorf("the reducer's identity %+v is not the item's %+v", id, item)
	}
	return acc + 1, nil
}

// The flows of TestAttemptFromInEveryLeaf, built at package initialization
// (the leaf binary registers their steps then).
var (
	identityLimits  = sdk.Limits{MaxConcurrency: 4, MaxItems: 8}
	identityStep    = sdk.Step(IdentityOf)
	identityMapped  = sdk.Then(sdk.Step(IdentityItems), sdk.Map(sdk.Step(IdentityOf, quarter)).WithLimits(identityLimits))
	identityBatched = sdk.Then(sdk.Step(IdentityItems), sdk.Map(sdk.Step(IdentityOf, quarter)).WithLimits(identityLimits).WithItemBatching(3))
	identityFolded  = sdk.Then(sdk.Step(IdentityItems), sdk.Reduce(sdk.Map(sdk.Step(IdentityOf, quarter)).WithLimits(identityLimits),
		CountSameIdentity, 0, sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: tinyActor}))
)

// Every leaf of a run on Ray reads the run's identity from its context, as
// in process: a lone step under each reporting policy, map items (one per
// task and batched) and a fold's reducer.
func TestAttemptFromInEveryLeaf(t *testing.T) {
	needRay(t)
	t.Parallel()
	given := sdk.RunIdentity{SchemaVersion: 1, TaskExecutionPK: 42, AttemptNumber: 3, ExecutionGeneration: 7,
		RunID: "0a1b2c3d-0000-4000-8000-00000000000f"}
	run := func(ctx context.Context, p common.ReportingPolicy, f func(context.Context, ...sdk.RunOption) ([]sdk.RunIdentity, error)) ([]sdk.RunIdentity, error) {
		return f(ctx, sdk.WithEngine(testEngine), sdk.WithRunIdentity(given), sdk.WithPlanOptions(pol(p)))
	}
	cases := []struct {
		name string
		f    func(context.Context, ...sdk.RunOption) ([]sdk.RunIdentity, error)
	}{
		{"step", func(ctx context.Context, o ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			id, err := sdk.Run(ctx, identityStep, 0, o...)
			return []sdk.RunIdentity{id}, err
		}},
		{"map items", func(ctx context.Context, o ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			return sdk.Run(ctx, identityMapped, 5, o...)
		}},
		{"batched map items", func(ctx context.Context, o ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			return sdk.Run(ctx, identityBatched, 7, o...)
		}},
		{"fold reducer", func(ctx context.Context, o ...sdk.RunOption) ([]sdk.RunIdentity, error) {
			n, err := sdk.Run(ctx, identityFolded, 6, o...)
			if err == nil && n != 6 {
				err = fmt.Errorf("the reducer counted %d items of the run's identity, want 6", n)
			}
			return nil, err
		}},
	}
	policies := []common.ReportingPolicy{common.ReportingPolicyFull, common.ReportingPolicyTerminalOnly, common.ReportingPolicyDisabled}
	for _, c := range cases {
		for _, p := range policies {
			t.Run(c.name+"/"+string(p), func(t *testing.T) {
				got, err := run(t.Context(), p, c.f)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range got {
					if d := cmp.Diff(given, id); d != "" {
						t.Fatalf("AttemptFrom in the leaf (-given +got):\n%s", d)
					}
				}
			})
		}
	}
}
