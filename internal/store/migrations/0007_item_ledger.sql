-- rayflow durable tasks, schema version 7: the item ledger of resumable maps.
-- A map that opts into resume records each succeeded item's encoded result,
-- keyed by the map's node id, the code identity of the item's body and the
-- canonical digest of the item's encoded input. A later attempt of the same
-- task (or a repair task, which starts with a copy of its origin's rows)
-- runs only the items without a row. Rows are written under the attempt's
-- fence (a stale attempt writes nothing) and never updated.
CREATE TABLE rayflow_item_ledger (
    task_pk              bigint NOT NULL REFERENCES rayflow_tasks (id) ON DELETE CASCADE,
    node_id              text NOT NULL CHECK (char_length(node_id) BETWEEN 1 AND 1024),
    code_identity        bytea NOT NULL CHECK (octet_length(code_identity) = 32),
    input_digest         bytea NOT NULL CHECK (octet_length(input_digest) = 32),
    result               bytea NOT NULL CHECK (octet_length(result) <= 1048576),
    attempt_number       integer NOT NULL CHECK (attempt_number >= 1),
    execution_generation bigint NOT NULL CHECK (execution_generation >= 0),
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_pk, node_id, code_identity, input_digest)
);

-- A repair task names the task it repairs (NULL for every other task).
ALTER TABLE rayflow_tasks ADD COLUMN repair_of bigint REFERENCES rayflow_tasks (id) ON DELETE SET NULL;
CREATE INDEX rayflow_tasks_repair_of ON rayflow_tasks (repair_of) WHERE repair_of IS NOT NULL;
