package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// QueueAdmission gives the fair admission gauges of rayflow serve's
// /metrics (docs/durable.md#fair-admission) for every queue (at most
// 64, by name) that has limits or a keyed task queued or running.
// Rows: queue_name, per_key_running, starts_per_second, burst (NULL
// without limits), the bucket's tokens now (NULL without a rate), the
// queued tasks with a key, the keys with a running (or cancelling)
// task, the keys at the per-key limit. It reads the queued and the
// running keyed tasks apart, so that each part matches a partial index
// of migration 0012: never the rows of ended tasks.
func QueueAdmission(ctx context.Context, q Reader) (pgx.Rows, error) {
	return q.Query(ctx, queueAdmissionSQL)
}

const queueAdmissionSQL = `WITH k AS (
  SELECT queue_name, concurrency_key, sum(queued) AS queued, sum(running) AS running FROM (
    SELECT queue_name, concurrency_key, 1 AS queued, 0 AS running FROM rayflow_tasks
    WHERE state = 'QUEUED' AND concurrency_key IS NOT NULL
    UNION ALL
    SELECT queue_name, concurrency_key, 0, 1 FROM rayflow_tasks
    WHERE state IN ('RUNNING', 'CANCELLING') AND concurrency_key IS NOT NULL) u
  GROUP BY queue_name, concurrency_key),
c AS (
  SELECT k.queue_name, sum(k.queued)::int8 AS queued, count(*) FILTER (WHERE k.running > 0) AS keys_running,
    count(*) FILTER (WHERE k.running >= l.per_key_running) AS keys_at_limit
  FROM k LEFT JOIN rayflow_queues l USING (queue_name)
  GROUP BY k.queue_name)
SELECT queue_name, l.per_key_running, l.starts_per_second, l.burst,
  least(l.burst::float8, l.tokens + l.starts_per_second * greatest(0, extract(epoch FROM now() - l.refilled_at))),
  coalesce(c.queued, 0), coalesce(c.keys_running, 0), coalesce(c.keys_at_limit, 0)
FROM rayflow_queues l FULL JOIN c USING (queue_name)
ORDER BY queue_name LIMIT 64`
