package executortest

import (
	"context"
	"slices"

	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// Leaf and Combine are registered by name at init, so that a leaf
// process of a binary that imports this package can run them.
var (
	_ = sdk.Step(Leaf)
	_ = sdk.RegisterReducer(Combine)
)

// foldActor is a small fold actor (on Ray).
var foldActor = sdk.ActorOptions{NumCPUs: 0.01, Memory: 64 << 20}

// SDK runs scenarios through sdk.Run with runOpts (an engine: none for
// the in-process one), the leaf step built with stepOpts; the result's
// Progress is from the run's final publication.
func SDK(runOpts []sdk.RunOption, stepOpts ...sdk.StepOption) Runner {
	return func(ctx context.Context, s Spec) (Result, error) {
		var final *progress.Publication
		sink := progress.SinkFunc(func(_ context.Context, p *progress.Publication) error {
			if p.Final {
				final = p
			}
			return nil
		})
		res, err := runSDK(ctx, s, append(slices.Clone(runOpts), sdk.WithProgress(sink)), stepOpts)
		var perr error
		if res.Progress, perr = FinalMap(final); perr != nil && err == nil {
			err = perr
		}
		return res, err
	}
}

// runSDK runs scenario s through sdk.Run.
func runSDK(ctx context.Context, s Spec, runOpts []sdk.RunOption, stepOpts []sdk.StepOption) (Result, error) {
	lim := sdk.Limits{MaxConcurrency: s.Window, MaxItems: s.MaxItems, CancelTimeout: s.CancelTimeout}
	step := sdk.Step(Leaf, stepOpts...)
	batch := func(m sdk.Flow[[]Job, []int]) sdk.Flow[[]Job, []int] {
		if s.AutoBatching {
			return m.WithAutoBatching(s.ItemsPerTask)
		}
		if s.ItemsPerTask > 1 {
			return m.WithItemBatching(s.ItemsPerTask)
		}
		return m
	}
	fold := sdk.FoldOptions{MaxSerializedBytes: 1 << 20, Actor: foldActor}
	switch {
	case s.Lazy:
		m := sdk.MapSeq(step).WithLimits(lim)
		if s.AutoBatching {
			m = m.WithAutoBatching(s.ItemsPerTask)
		} else if s.ItemsPerTask > 1 {
			m = m.WithItemBatching(s.ItemsPerTask)
		}
		if s.Fold {
			v, err := sdk.Run(ctx, sdk.Reduce(m, Combine, 0, fold), s.Seq(), runOpts...)
			return Result{Folded: v}, err
		}
		v, err := sdk.Run(ctx, m, s.Seq(), runOpts...)
		return Result{List: v}, err
	case s.Fold:
		v, err := sdk.Run(ctx, sdk.Reduce(batch(sdk.Map(step).WithLimits(lim)), Combine, 0, fold), s.Jobs, runOpts...)
		return Result{Folded: v}, err
	}
	v, err := sdk.Run(ctx, batch(sdk.Map(step).WithLimits(lim)), s.Jobs, runOpts...)
	return Result{List: v}, err
}
