-- rayflow durable tasks, schema version 6: indexes of the executions list
-- (GET /api/tasks and the /tasks page of rayflow serve), newest first by
-- id, so that no filter reads the whole task table.
-- A queue's tasks, newest first.
CREATE INDEX rayflow_tasks_queue_list ON rayflow_tasks (queue_name, id);
-- A flow's tasks, newest first; the state is included so that the counts
-- by state of a principal's flows read this index only.
CREATE INDEX rayflow_tasks_flow_list ON rayflow_tasks (flow_name, id) INCLUDE (state);
-- Tasks enqueued between two times.
CREATE INDEX rayflow_tasks_enqueued ON rayflow_tasks (enqueued_at, id);
