-- rayflow durable tasks, schema version 10: unique enqueue
-- (docs/durable.md#unique-tasks). A task enqueued with a unique key holds
-- the key in its scope, the flow's name (unique_scope = flow_name) or
-- every flow (unique_scope = ''), while it is not terminal (unique_until
-- NULL) or until unique_until (a period from its enqueue, whatever its
-- state). The partial unique index below holds at most one such task per
-- scope and key, and INSERT ... ON CONFLICT on it returns the holder to a
-- duplicate enqueue in the same statement:
--   * a task whose hold is "while not terminal" leaves the index when its
--     state becomes terminal (the predicate reads the state), and enters
--     it again when it is retried (a retry of a task whose key another
--     live task took fails on the index: durable.ErrUniqueHeld);
--   * a period task stays in the index past unique_until until the first
--     enqueue that conflicts with it sets unique_released (in the ON
--     CONFLICT DO UPDATE, which locks it) and inserts again: expiry is
--     decided under the row lock, never by a separate read.
ALTER TABLE rayflow_tasks
    ADD COLUMN unique_key      text CHECK (octet_length(unique_key) BETWEEN 1 AND 200),
    ADD COLUMN unique_scope    text CHECK (char_length(unique_scope) <= 256),
    ADD COLUMN unique_until    timestamptz,
    ADD COLUMN unique_released boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT rayflow_tasks_unique_columns CHECK ((unique_key IS NULL) = (unique_scope IS NULL)
        AND (unique_key IS NOT NULL OR (unique_until IS NULL AND NOT unique_released)));

CREATE UNIQUE INDEX rayflow_tasks_unique ON rayflow_tasks (unique_scope, unique_key)
    WHERE unique_key IS NOT NULL AND NOT unique_released
      AND (unique_until IS NOT NULL OR state IN ('QUEUED', 'RUNNING', 'CANCELLING'));
