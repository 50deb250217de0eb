package sdk

import (
	"context"

	"github.com/rayflow/rayflow/progress"
)

// ProgressReporter receives application progress from a leaf. Engines that
// report progress put one in the leaf's context (WithProgressReporter).
type ProgressReporter = progress.Reporter

// WithProgressReporter returns a context whose leaves report to r.
func WithProgressReporter(ctx context.Context, r ProgressReporter) context.Context {
	return progress.WithReporter(ctx, r)
}

// ReportProgress reports a leaf's progress. It returns true when the value
// was accepted into the leaf's best-effort progress session; false inside
// bounded-map items, under the terminal_only and disabled reporting
// policies, and outside a run. It never blocks on delivery and never fails
// the leaf.
func ReportProgress(ctx context.Context, current, total float64, message string, metrics map[string]any) bool {
	return progress.Report(ctx, current, total, message, metrics)
}
