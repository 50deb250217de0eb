package sdk

import "context"

// ProgressReporter receives application progress from a leaf. Engines that
// report progress put one in the leaf's context (WithProgressReporter).
type ProgressReporter interface {
	Report(current, total float64, message string, metrics map[string]any) bool
}

type reporterKey struct{}

// WithProgressReporter returns a context whose leaves report to r.
func WithProgressReporter(ctx context.Context, r ProgressReporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReportProgress reports a leaf's progress. It returns true when the value
// was accepted into the leaf's best-effort progress session; false during
// local runs, inside bounded-map items, and under the terminal_only and
// disabled reporting policies. It never blocks on delivery and never fails
// the leaf.
func ReportProgress(ctx context.Context, current, total float64, message string, metrics map[string]any) bool {
	r, ok := ctx.Value(reporterKey{}).(ProgressReporter)
	if !ok || r == nil {
		return false
	}
	return r.Report(current, total, message, metrics)
}
