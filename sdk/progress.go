package sdk

import (
	"context"

	"github.com/rayflow/rayflow/progress"
)

// ReportProgress reports a leaf's progress. It returns true when the value
// was accepted into the leaf's best-effort progress session; false inside
// bounded-map items, under the terminal_only and disabled reporting
// policies, and outside a run. It never blocks on delivery and never fails
// the leaf.
func ReportProgress(ctx context.Context, current, total float64, message string, metrics map[string]any) bool {
	return progress.Report(ctx, current, total, message, metrics)
}
