-- rayflow durable tasks, schema version 1 (docs/durable.md).
-- rayflow_tasks: one row per enqueued task, the single source of truth.
-- Every bound the Go code enforces is also a CHECK constraint here.
CREATE TABLE rayflow_tasks (
    id                           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id                      uuid NOT NULL CONSTRAINT rayflow_task_id_unique UNIQUE,
    flow_name                    text NOT NULL CHECK (char_length(flow_name) BETWEEN 1 AND 256),
    queue_name                   text NOT NULL DEFAULT 'default' CHECK (char_length(queue_name) BETWEEN 1 AND 128),
    priority                     integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
    state                        text NOT NULL DEFAULT 'QUEUED' CHECK (state IN
                                   ('QUEUED', 'RUNNING', 'CANCELLING', 'CANCELLED', 'SUCCEEDED', 'FAILED', 'LOST', 'EXPIRED')),
    attempt_number               integer NOT NULL DEFAULT 1 CHECK (attempt_number >= 1),
    max_attempts                 integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 100),
    execution_generation         bigint NOT NULL DEFAULT 0 CHECK (execution_generation >= 0),
    workflow_run_id              uuid,
    workflow_plan_fingerprint    text CHECK (char_length(workflow_plan_fingerprint) <= 71),
    workflow_plan_pinned_attempt integer CHECK (workflow_plan_pinned_attempt >= 1),
    workflow_plan_json           text CHECK (octet_length(workflow_plan_json) <= 65536),
    workflow_plan_selection      text CHECK (octet_length(workflow_plan_selection) <= 65536),
    input_json                   text NOT NULL CHECK (octet_length(input_json) <= 1048576),
    result_data                  text CHECK (octet_length(result_data) <= 1048576),
    runner                       text CHECK (runner IN ('local', 'ray', 'ray_job')),
    ray_address                  text CHECK (char_length(ray_address) <= 1024),
    ray_job_id                   text CHECK (char_length(ray_job_id) <= 256),
    created_at                   timestamptz NOT NULL DEFAULT now(),
    enqueued_at                  timestamptz NOT NULL DEFAULT now(),
    started_at                   timestamptz,
    finished_at                  timestamptz,
    last_heartbeat_at            timestamptz,
    run_after                    timestamptz NOT NULL DEFAULT now(),
    timeout_seconds              integer CHECK (timeout_seconds BETWEEN 1 AND 2147483647),
    queue_timeout_seconds        integer DEFAULT 86400 CHECK (queue_timeout_seconds BETWEEN 1 AND 2147483647),
    queue_deadline_at            timestamptz,
    claimed_by                   text CHECK (char_length(claimed_by) <= 256),
    cancellation_status          text CHECK (cancellation_status IN ('REQUESTED', 'FAILED', 'INDETERMINATE', 'NOT_APPLICABLE')),
    cancellation_error           text CHECK (char_length(cancellation_error) <= 4096),
    error_type                   text CHECK (char_length(error_type) <= 512),
    error_message                text CHECK (octet_length(error_message) <= 65536),
    error_traceback              text CHECK (octet_length(error_traceback) <= 65536),
    -- A claimed task has an owner, a run id and a start time.
    CONSTRAINT rayflow_tasks_claimed CHECK (state NOT IN ('RUNNING', 'CANCELLING')
        OR (claimed_by IS NOT NULL AND workflow_run_id IS NOT NULL AND started_at IS NOT NULL)),
    CONSTRAINT rayflow_tasks_pin CHECK ((workflow_plan_fingerprint IS NULL) = (workflow_plan_pinned_attempt IS NULL)
        AND (workflow_plan_pinned_attempt IS NULL OR workflow_plan_pinned_attempt <= attempt_number)),
    CONSTRAINT rayflow_tasks_result_only_succeeded CHECK (result_data IS NULL OR state = 'SUCCEEDED'),
    -- Invalid JSON fails the cast (PostgreSQL 15 has no IS JSON).
    CONSTRAINT rayflow_tasks_input_json CHECK (input_json::jsonb IS NOT NULL)
);

-- Claim order: larger priority first, FIFO by creation within a priority.
CREATE INDEX rayflow_tasks_claim ON rayflow_tasks (queue_name, priority DESC, created_at, id) WHERE state = 'QUEUED';
-- Stuck detection.
CREATE INDEX rayflow_tasks_running ON rayflow_tasks (last_heartbeat_at) WHERE state IN ('RUNNING', 'CANCELLING');
-- Queue expiry.
CREATE INDEX rayflow_tasks_queue_deadline ON rayflow_tasks (queue_deadline_at) WHERE state = 'QUEUED';
-- Listing by state.
CREATE INDEX rayflow_tasks_state ON rayflow_tasks (state, id);

-- rayflow_task_attempts: every terminal attempt, copied before the task row is reset.
CREATE TABLE rayflow_task_attempts (
    id                        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_pk                   bigint NOT NULL REFERENCES rayflow_tasks (id) ON DELETE CASCADE,
    attempt_number            integer NOT NULL CHECK (attempt_number >= 1),
    execution_generation      bigint NOT NULL CHECK (execution_generation >= 0),
    workflow_run_id           uuid,
    state                     text NOT NULL CHECK (state IN ('CANCELLED', 'SUCCEEDED', 'FAILED', 'LOST', 'EXPIRED')),
    claimed_by                text CHECK (char_length(claimed_by) <= 256),
    workflow_plan_fingerprint text CHECK (char_length(workflow_plan_fingerprint) <= 71),
    started_at                timestamptz,
    finished_at               timestamptz NOT NULL,
    error_type                text CHECK (char_length(error_type) <= 512),
    error_message             text CHECK (octet_length(error_message) <= 65536),
    error_traceback           text CHECK (octet_length(error_traceback) <= 65536),
    result_data               text CHECK (octet_length(result_data) <= 1048576),
    created_at                timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_task_attempts_unique UNIQUE (task_pk, attempt_number)
);
