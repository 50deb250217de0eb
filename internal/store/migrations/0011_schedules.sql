-- rayflow durable tasks, schema version 11: schedules
-- (docs/durable.md#schedules). A schedule enqueues a task of its flow,
-- with its input, on its queue at every tick of its cron specification
-- in its time zone. The worker holding the scheduler lease (a session
-- advisory lock) fires the due ticks: in one transaction it inserts each
-- tick's task and moves next_fire_at on, guarded by the next_fire_at it
-- read, so that a tick is enqueued once whoever fires it and whenever a
-- worker dies. The input is kept as given (text, like a task's input).
CREATE TABLE rayflow_schedules (
    name          text PRIMARY KEY CHECK (char_length(name) BETWEEN 1 AND 128),
    flow_name     text NOT NULL CHECK (char_length(flow_name) BETWEEN 1 AND 256),
    input_json    text NOT NULL CHECK (octet_length(input_json) <= 1048576),
    queue_name    text NOT NULL DEFAULT 'default' CHECK (char_length(queue_name) BETWEEN 1 AND 128),
    cron_spec     text NOT NULL CHECK (char_length(cron_spec) BETWEEN 1 AND 256),
    time_zone     text NOT NULL DEFAULT 'UTC' CHECK (char_length(time_zone) BETWEEN 1 AND 64),
    missed_policy text NOT NULL DEFAULT 'skip' CHECK (missed_policy IN ('skip', 'catch-up')),
    next_fire_at  timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_task_id  uuid,
    fired_ticks   bigint NOT NULL DEFAULT 0 CHECK (fired_ticks >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_schedules_input_json CHECK (input_json::jsonb IS NOT NULL)
);
-- The scheduler's next wake-up.
CREATE INDEX rayflow_schedules_next ON rayflow_schedules (next_fire_at);

-- A task a schedule enqueued names the schedule and the tick it stands
-- for: one task per (schedule, tick), whatever happens to the firing
-- transaction's worker.
ALTER TABLE rayflow_tasks
    ADD COLUMN schedule_name text CHECK (char_length(schedule_name) BETWEEN 1 AND 128),
    ADD COLUMN schedule_tick timestamptz,
    ADD CONSTRAINT rayflow_tasks_schedule_tick CHECK ((schedule_name IS NULL) = (schedule_tick IS NULL)) NOT VALID;
-- (NOT VALID: the existing rows, all without a schedule, are not rescanned.)
CREATE UNIQUE INDEX rayflow_tasks_schedule_tick_unique ON rayflow_tasks (schedule_name, schedule_tick)
    WHERE schedule_name IS NOT NULL;
