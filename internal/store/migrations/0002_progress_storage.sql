-- rayflow progress storage, storage protocol 1 (docs/contracts.md#progress-storage).
-- Owned by engine/progressstore; applied in the durable migration sequence.
-- Every bound the Go code enforces is also a CHECK constraint here.

-- Summary v3 on the task row (≤ 16 KiB canonical) with its revision, and the
-- archived terminal summary on every attempt row.
ALTER TABLE rayflow_tasks
    ADD COLUMN workflow_progress_summary_json text
        CONSTRAINT rayflow_tasks_progress_summary_size CHECK (octet_length(workflow_progress_summary_json) BETWEEN 2 AND 16384),
    ADD COLUMN progress_summary_revision bigint
        CONSTRAINT rayflow_tasks_progress_summary_revision CHECK (progress_summary_revision >= 0),
    ADD CONSTRAINT rayflow_tasks_progress_summary_pair CHECK
        ((workflow_progress_summary_json IS NULL) = (progress_summary_revision IS NULL)),
    ADD CONSTRAINT rayflow_tasks_progress_summary_json CHECK
        (workflow_progress_summary_json IS NULL OR workflow_progress_summary_json::jsonb IS NOT NULL);

ALTER TABLE rayflow_task_attempts
    ADD COLUMN workflow_progress_summary_json text
        CONSTRAINT rayflow_task_attempts_progress_summary_size CHECK (octet_length(workflow_progress_summary_json) BETWEEN 2 AND 16384);

-- One row per run (exact run identity): the detail aggregates.
CREATE TABLE rayflow_progress_runs (
    id                        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_pk                   bigint NOT NULL REFERENCES rayflow_tasks (id) ON DELETE CASCADE,
    attempt_number            integer NOT NULL CHECK (attempt_number >= 1),
    execution_generation      bigint NOT NULL CHECK (execution_generation >= 0),
    run_id                    uuid NOT NULL,
    detail_revision           bigint CHECK (detail_revision >= 1),
    detail_node_count         integer NOT NULL DEFAULT 0 CHECK (detail_node_count BETWEEN 0 AND 25000),
    detail_pending_count      integer NOT NULL DEFAULT 0 CHECK (detail_pending_count >= 0),
    detail_running_count      integer NOT NULL DEFAULT 0 CHECK (detail_running_count >= 0),
    detail_succeeded_count    integer NOT NULL DEFAULT 0 CHECK (detail_succeeded_count >= 0),
    detail_failed_count       integer NOT NULL DEFAULT 0 CHECK (detail_failed_count >= 0),
    detail_truncated_count    integer NOT NULL DEFAULT 0 CHECK (detail_truncated_count BETWEEN 0 AND detail_node_count),
    detail_event_count        integer NOT NULL DEFAULT 0 CHECK (detail_event_count BETWEEN 0 AND 32),
    detail_truncation_reasons text NOT NULL DEFAULT '' CHECK (char_length(detail_truncation_reasons) <= 256),
    detail_encoded_bytes      bigint NOT NULL DEFAULT 0 CHECK (detail_encoded_bytes BETWEEN 0 AND 8388608),
    detail_decoded_bytes      bigint NOT NULL DEFAULT 0 CHECK (detail_decoded_bytes = detail_encoded_bytes),
    detail_retention_days     integer NOT NULL DEFAULT 7 CHECK (detail_retention_days BETWEEN 0 AND 30),
    detail_expires_at         timestamptz,
    cleanup_error             text CHECK (char_length(cleanup_error) <= 2000),
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_progress_runs_identity UNIQUE (task_pk, attempt_number, execution_generation, run_id),
    CONSTRAINT rayflow_progress_runs_counts CHECK (detail_pending_count + detail_running_count
        + detail_succeeded_count + detail_failed_count = detail_node_count),
    CONSTRAINT rayflow_progress_runs_revision CHECK (detail_node_count = 0 OR detail_revision IS NOT NULL)
);
CREATE INDEX rayflow_progress_runs_expiry ON rayflow_progress_runs (detail_expires_at) WHERE detail_expires_at IS NOT NULL;

-- Topology manifests: one CURRENT and at most one PENDING per run.
CREATE TABLE rayflow_progress_manifests (
    manifest_id        text PRIMARY KEY CHECK (manifest_id ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$'),
    run_pk             bigint NOT NULL REFERENCES rayflow_progress_runs (id) ON DELETE CASCADE,
    topology_version   bigint NOT NULL CHECK (topology_version >= 1),
    slot               text NOT NULL CHECK (slot IN ('CURRENT', 'PENDING')),
    manifest_digest    text NOT NULL CHECK (manifest_digest ~ '^[0-9a-f]{64}$'),
    truncation_reasons text NOT NULL DEFAULT '' CHECK (char_length(truncation_reasons) <= 256),
    payload            text NOT NULL CHECK (octet_length(payload) BETWEEN 2 AND 262144),
    node_count         integer NOT NULL CHECK (node_count BETWEEN 0 AND 25000),
    edge_count         integer NOT NULL CHECK (edge_count BETWEEN 0 AND 100000),
    node_page_count    integer NOT NULL CHECK (node_page_count BETWEEN 0 AND 25000),
    edge_page_count    integer NOT NULL CHECK (edge_page_count BETWEEN 0 AND 100000),
    encoded_bytes      bigint NOT NULL CHECK (encoded_bytes BETWEEN 2 AND 16777216),
    decoded_bytes      bigint NOT NULL CHECK (decoded_bytes = encoded_bytes AND decoded_bytes <= 33554432),
    created_at         timestamptz NOT NULL DEFAULT now(),
    published_at       timestamptz,
    cleanup_error      text CHECK (char_length(cleanup_error) <= 2000),
    CONSTRAINT rayflow_progress_manifests_pending CHECK ((slot = 'PENDING') = (published_at IS NULL)),
    CONSTRAINT rayflow_progress_manifests_slot UNIQUE (run_pk, slot),
    CONSTRAINT rayflow_progress_manifests_version UNIQUE (run_pk, topology_version)
);
CREATE INDEX rayflow_progress_manifests_pending_age ON rayflow_progress_manifests (created_at) WHERE slot = 'PENDING';

-- Content-addressed topology pages (digest unique per run).
CREATE TABLE rayflow_progress_pages (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_pk        bigint NOT NULL REFERENCES rayflow_progress_runs (id) ON DELETE CASCADE,
    digest        text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    collection    text NOT NULL CHECK (collection IN ('NODE', 'EDGE')),
    encoding      text NOT NULL DEFAULT 'identity' CHECK (encoding = 'identity'),
    payload       text NOT NULL,
    item_count    integer NOT NULL CHECK (item_count BETWEEN 1 AND 256),
    encoded_bytes integer NOT NULL CHECK (encoded_bytes BETWEEN 1 AND 262144 AND encoded_bytes = octet_length(payload)),
    decoded_bytes integer NOT NULL CHECK (decoded_bytes = encoded_bytes),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_progress_pages_digest UNIQUE (run_pk, digest)
);
CREATE INDEX rayflow_progress_pages_age ON rayflow_progress_pages (created_at);

-- Manifest → page links. The page reference is NO ACTION (checked at the end
-- of the statement): a linked page cannot be deleted on its own, while
-- deleting a run removes links and pages in one cascade.
CREATE TABLE rayflow_progress_manifest_pages (
    manifest_id text NOT NULL REFERENCES rayflow_progress_manifests (manifest_id) ON DELETE CASCADE,
    page_id     bigint NOT NULL REFERENCES rayflow_progress_pages (id),
    collection  text NOT NULL CHECK (collection IN ('NODE', 'EDGE')),
    page_index  integer NOT NULL CHECK (page_index >= 0),
    CONSTRAINT rayflow_progress_manifest_pages_position PRIMARY KEY (manifest_id, collection, page_index),
    CONSTRAINT rayflow_progress_manifest_pages_page UNIQUE (manifest_id, page_id)
);
CREATE INDEX rayflow_progress_manifest_pages_page_id ON rayflow_progress_manifest_pages (page_id);

-- Normalized latest node detail, keyed by (run, sha256(node_id)). COLLATE "C":
-- keyset reads order node ids and keys by code point (byte order), like Go.
CREATE TABLE rayflow_progress_nodes (
    run_pk                bigint NOT NULL REFERENCES rayflow_progress_runs (id) ON DELETE CASCADE,
    node_key              text COLLATE "C" NOT NULL CHECK (node_key ~ '^[0-9a-f]{64}$'),
    node_id               text COLLATE "C" NOT NULL CHECK (octet_length(node_id) BETWEEN 1 AND 256),
    invocation_id         text CHECK (octet_length(invocation_id) BETWEEN 1 AND 128),
    state                 text NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED')),
    event_count           integer NOT NULL CHECK (event_count BETWEEN 0 AND 32),
    truncated             boolean NOT NULL,
    payload               text NOT NULL,
    digest                text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    encoded_bytes         integer NOT NULL CHECK (encoded_bytes BETWEEN 1 AND 16384 AND encoded_bytes = octet_length(payload)),
    decoded_bytes         integer NOT NULL CHECK (decoded_bytes = encoded_bytes),
    last_topology_version bigint NOT NULL CHECK (last_topology_version >= 1),
    last_detail_revision  bigint NOT NULL CHECK (last_detail_revision >= 1),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rayflow_progress_nodes_key PRIMARY KEY (run_pk, node_key)
);
CREATE INDEX rayflow_progress_nodes_state ON rayflow_progress_nodes (run_pk, state, node_key);
