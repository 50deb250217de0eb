-- rayflow durable tasks, schema version 9: the flows each worker serves
-- (docs/durable.md#published-flows). A worker publishes one row per flow
-- it has registered when it records its session (rayflow_workers) and
-- again when its registry changes: the flow's name, the queue it claims
-- from, the JSON Schema of the flow's input, the plan fingerprint the
-- worker materializes and the build revision of that plan. The rows go
-- with their worker's row (a worker that stops, or one the sweep finds
-- gone), so a flow is served while some live worker publishes it.
CREATE TABLE rayflow_worker_flows (
    worker_id        text NOT NULL REFERENCES rayflow_workers (worker_id) ON DELETE CASCADE,
    flow_name        text NOT NULL CHECK (char_length(flow_name) BETWEEN 1 AND 256),
    queue_name       text NOT NULL CHECK (char_length(queue_name) BETWEEN 1 AND 128),
    input_schema     text NOT NULL CHECK (octet_length(input_schema) <= 65536),
    plan_fingerprint text NOT NULL CHECK (char_length(plan_fingerprint) <= 128),
    build_revision   text NOT NULL CHECK (char_length(build_revision) <= 300),
    published_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (worker_id, flow_name)
);
CREATE INDEX rayflow_worker_flows_flow ON rayflow_worker_flows (flow_name, queue_name);
