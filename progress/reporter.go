package progress

import "context"

// Reporter receives application progress from a leaf (sdk.ReportProgress
// reports to it). Engines put one in the leaf's context (WithReporter);
// a *Producer is the engines' implementation.
type Reporter interface {
	Report(current, total float64, message string, metrics map[string]any) bool
}

type reporterKey struct{}

// WithReporter returns a context whose leaves report to r (nil: no
// reporter, so Report returns false).
func WithReporter(ctx context.Context, r Reporter) context.Context {
	if r == nil {
		if cur, _ := ctx.Value(reporterKey{}).(Reporter); cur == nil {
			return ctx // nothing to hide: every leaf without a reporter passes here
		}
	}
	return context.WithValue(ctx, reporterKey{}, r)
}

// Report hands a leaf's progress to the reporter in ctx (sdk.ReportProgress
// calls it). It returns false when ctx has no reporter.
func Report(ctx context.Context, current, total float64, message string, metrics map[string]any) bool {
	r, ok := ctx.Value(reporterKey{}).(Reporter)
	if !ok || r == nil {
		return false
	}
	return r.Report(current, total, message, metrics)
}
