package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The metrics of rayflow serve (serve/metrics.go): task counts and the
// latencies derived from the task table. flows restricts every query to
// those flows; nil means every flow.

// TaskCountsByQueue counts tasks by queue and state. Rows: queue_name,
// state, count.
func TaskCountsByQueue(ctx context.Context, q Reader, flows []string) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT queue_name, state, count(*) FROM rayflow_tasks WHERE ($1::text[] IS NULL OR flow_name = ANY($1)) GROUP BY queue_name, state`, flows)
}

// ClaimLatencies gives, per queue (at most 64), the count and the 0.5,
// 0.9, 0.99 and 1 quantiles of the claim latency (seconds from runnable
// to started) of the tasks started in the last windowSeconds. Rows:
// queue_name, count, quantiles.
func ClaimLatencies(ctx context.Context, q Reader, flows []string, windowSeconds float64) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT queue_name, count(*),
  percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - greatest(run_after, enqueued_at)))
FROM rayflow_tasks
WHERE state NOT IN ('QUEUED', 'EXPIRED') AND started_at > now() - make_interval(secs => $2)
  AND started_at >= greatest(run_after, enqueued_at) AND ($1::text[] IS NULL OR flow_name = ANY($1))
GROUP BY queue_name ORDER BY queue_name LIMIT 64`, flows, windowSeconds)
}

// OldestRunnable gives, per queue (at most 64), the age in seconds of its
// oldest runnable QUEUED task. Rows: queue_name, seconds.
func OldestRunnable(ctx context.Context, q Reader, flows []string) (pgx.Rows, error) {
	return q.Query(ctx, `SELECT queue_name, extract(epoch FROM now() - min(greatest(run_after, enqueued_at)))::float8
FROM rayflow_tasks
WHERE state = 'QUEUED' AND run_after <= now() AND ($1::text[] IS NULL OR flow_name = ANY($1))
GROUP BY queue_name ORDER BY queue_name LIMIT 64`, flows)
}

// PublicationLag counts the RUNNING tasks with a progress summary and
// gives the 0.5, 0.9, 0.99 and 1 quantiles of the seconds since their
// summaries' updated_at (empty when none). Row: count, quantiles.
func PublicationLag(ctx context.Context, q Reader, flows []string) pgx.Row {
	return q.QueryRow(ctx, `SELECT count(*), coalesce(percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY
  greatest(extract(epoch FROM now() - (workflow_progress_summary_json::jsonb #>> '{timestamps,updated_at}')::timestamptz), 0)), '{}')
FROM rayflow_tasks
WHERE state = 'RUNNING' AND workflow_progress_summary_json IS NOT NULL AND ($1::text[] IS NULL OR flow_name = ANY($1))`, flows)
}
