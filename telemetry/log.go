package telemetry

import (
	"context"
	"log/slog"
	"regexp"

	"go.opentelemetry.io/otel/trace"
)

// Log attribute keys added to the records of a run.
const (
	LogRunID      = "run_id"
	LogTaskID     = "task_id"
	LogTaskPK     = "task_pk"
	LogAttempt    = "attempt"
	LogGeneration = "generation"
	LogNodeID     = "node_id"
	LogTraceID    = "trace_id"
	LogSpanID     = "span_id"
)

// Redacted replaces the value of an attribute whose key names a secret.
const Redacted = "[REDACTED]"

// secretKey matches attribute keys that name a secret (the same words as
// the runtime-environment projection's secret names, plus authorization,
// cookie and dsn/url-with-credentials names).
var secretKey = regexp.MustCompile(`(?i)(?:^|[_.-])(password|passwd|secret|secrets|token|tokens|credential|credentials|private[_-]?key|api[_-]?key|access[_-]?key|authorization|cookie|bearer)(?:$|[_.-])`)

// IsSecretKey reports whether an attribute named key is never logged.
func IsSecretKey(key string) bool { return secretKey.MatchString(key) }

// LogHandler wraps next: every record logged with a context of a run
// (slog.InfoContext(ctx, …) in step code, or in rayflow) gets the run's
// identity (run_id, task_pk, attempt, generation; task_id in a durable
// attempt), the node id and the trace and span ids; the value of every
// attribute whose key names a secret (IsSecretKey: token, password,
// secret, authorization, …), in groups too, is replaced by [REDACTED].
func LogHandler(next slog.Handler) slog.Handler { return &logHandler{next: next} }

type logHandler struct {
	next slog.Handler
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	if ctx != nil {
		s := scopeOf(ctx)
		if s.run != nil {
			out.AddAttrs(slog.String(LogRunID, s.run.RunID))
			if s.run.TaskPK != 0 {
				out.AddAttrs(slog.Int64(LogTaskPK, s.run.TaskPK), slog.Int64(LogAttempt, s.run.Attempt), slog.Int64(LogGeneration, s.run.Generation))
			}
		}
		if s.task != "" {
			out.AddAttrs(slog.String(LogTaskID, s.task))
		}
		if s.node != "" {
			out.AddAttrs(slog.String(LogNodeID, s.node))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			out.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redact(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redact(a)
	}
	return &logHandler{next: h.next.WithAttrs(red)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.next.WithGroup(name)}
}

// redact replaces a secret attribute's value (recursively in groups).
func redact(a slog.Attr) slog.Attr {
	if IsSecretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = redact(x)
		}
		return slog.Group(a.Key, red...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
