-- rayflow durable tasks, schema version 3: pinned plans stored once per
-- fingerprint (a plan is immutable and named by its fingerprint) instead of
-- on every task row; the claim pins a task's fingerprint, attempt and
-- selection in the same statement, and rayflow_plans holds the plan JSON.
CREATE TABLE rayflow_plans (
    fingerprint text PRIMARY KEY CHECK (char_length(fingerprint) <= 71),
    plan_json   text NOT NULL CHECK (octet_length(plan_json) <= 65536),
    created_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO rayflow_plans (fingerprint, plan_json)
SELECT DISTINCT ON (workflow_plan_fingerprint) workflow_plan_fingerprint, workflow_plan_json
FROM rayflow_tasks
WHERE workflow_plan_fingerprint IS NOT NULL AND workflow_plan_json IS NOT NULL
ORDER BY workflow_plan_fingerprint, id;

ALTER TABLE rayflow_tasks DROP COLUMN workflow_plan_json;
