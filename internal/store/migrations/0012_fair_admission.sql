-- rayflow durable tasks: fair admission (docs/durable.md#fair-admission).
-- A task may carry a concurrency key (a tenant, a customer): a queue's
-- limits (rayflow_queues) bound the running tasks of each key, and the
-- tasks a worker starts per second. Keyed tasks are claimed round-robin
-- across their keys, under the queue's row lock, so the bound is exact
-- also with many workers claiming at once.
ALTER TABLE rayflow_tasks ADD COLUMN concurrency_key text COLLATE "C"
    CHECK (octet_length(concurrency_key) BETWEEN 1 AND 200);

-- The claim of a queue without keyed tasks (the plain claim skips them).
CREATE INDEX rayflow_tasks_claim_unkeyed ON rayflow_tasks (queue_name, priority DESC, created_at, id)
    WHERE state = 'QUEUED' AND concurrency_key IS NULL;
-- The keyed claim: the distinct keys of a queue's queued tasks and each
-- key's next tasks, in claim order.
CREATE INDEX rayflow_tasks_claim_keyed ON rayflow_tasks (queue_name, concurrency_key, priority DESC, created_at, id)
    WHERE state = 'QUEUED' AND concurrency_key IS NOT NULL;
-- Each key's running tasks (its admission count).
CREATE INDEX rayflow_tasks_running_keyed ON rayflow_tasks (queue_name, concurrency_key)
    WHERE state IN ('RUNNING', 'CANCELLING') AND concurrency_key IS NOT NULL;

-- A queue's admission limits; a queue without a row has none. The token
-- bucket (tokens, refilled_at) is the rate limit's state: it refills at
-- starts_per_second up to burst, and every started task takes a token.
CREATE TABLE rayflow_queues (
    queue_name        text PRIMARY KEY CHECK (char_length(queue_name) BETWEEN 1 AND 128),
    per_key_running   integer CHECK (per_key_running BETWEEN 1 AND 1000000),
    starts_per_second double precision CHECK (starts_per_second > 0 AND starts_per_second <= 1000000),
    burst             integer CHECK (burst BETWEEN 1 AND 1000000),
    tokens            double precision NOT NULL DEFAULT 0,
    refilled_at       timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_queues_rate CHECK ((starts_per_second IS NULL) = (burst IS NULL))
);
