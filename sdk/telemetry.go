package sdk

import (
	"context"

	"github.com/rayflow/rayflow/telemetry"
)

// traceRun starts the run's span (telemetry.SpanRun) under ctx's span (a
// durable attempt's, or the application's): its context carries the run
// identity to the engines' node spans and to the log records of the run
// (telemetry.LogHandler). end ends it with the run's error.
func traceRun(ctx context.Context, m *Materialized, id RunIdentity, e Engine) (_ context.Context, end func(error)) {
	engine := "local"
	if e != nil {
		engine = e.Name()
	}
	ctx, span := telemetry.StartRun(ctx, telemetry.RunInfo{RunID: id.RunID, TaskPK: id.TaskExecutionPK, Attempt: id.AttemptNumber,
		Generation: id.ExecutionGeneration, Fingerprint: m.Fingerprint, Flow: m.definitionName(),
		Strategy: m.Selection.SelectedStrategy, Engine: engine})
	return ctx, func(err error) { telemetry.End(span, err) }
}
