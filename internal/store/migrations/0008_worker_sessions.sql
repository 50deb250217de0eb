-- rayflow durable tasks, schema version 8: the workers' database sessions
-- (docs/durable.md). While a worker runs, it holds a session-scoped
-- advisory lock on lock_key on its LISTEN connection and records it here;
-- when its process dies, the server closes that session and frees the
-- lock, so that another worker can tell, in seconds rather than after the
-- heartbeat timeout, that the worker's RUNNING attempts are lost. The
-- worker takes a new key after its connection was lost and deletes its
-- row when it stops; the sweep deletes the rows of workers that are gone.
CREATE TABLE rayflow_workers (
    worker_id     text PRIMARY KEY CHECK (char_length(worker_id) BETWEEN 1 AND 256),
    lock_key      bigint NOT NULL CHECK (lock_key >= 0),
    queue_name    text NOT NULL CHECK (char_length(queue_name) BETWEEN 1 AND 128),
    registered_at timestamptz NOT NULL DEFAULT now()
);
