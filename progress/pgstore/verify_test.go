package pgstore_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// TestVerifyClassifiesEachCorruption corrupts each stored artefact once
// (in a transaction rolled back afterwards) and expects MISSING or CORRUPT.
func TestVerifyClassifiesEachCorruption(t *testing.T) {
	pool := pgtest.MigratedPool(t)
	ctx := t.Context()
	id := newTask(t, pool)
	sink := newSink(t, pool)
	c := pgstoretest.NewChain(id, 600) // several NODE and EDGE pages
	if err := sink.Publish(ctx, c.Pub(true, false)); err != nil {
		t.Fatal(err)
	}
	c.States[3] = detail.NodeStateRunning
	if err := sink.Publish(ctx, c.Pub(false, false)); err != nil {
		t.Fatal(err)
	}
	rep, err := pgstore.Verify(ctx, pool, id.TaskExecutionPK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Availability != summary.DetailAvailabilityAvailable || len(rep.Problems) > 0 {
		t.Fatalf("intact storage: %s %v", rep.Availability, rep.Problems)
	}
	cases := []struct {
		name string
		sql  []string
		want summary.DetailAvailability
	}{
		{"summary over 16 KiB (checked before decoding)", []string{
			`ALTER TABLE rayflow_tasks DROP CONSTRAINT rayflow_tasks_progress_summary_size`,
			`UPDATE rayflow_tasks SET workflow_progress_summary_json = rpad(workflow_progress_summary_json, 16385, ' ')`}, summary.DetailAvailabilityCorrupt},
		{"summary schema", []string{`UPDATE rayflow_tasks SET workflow_progress_summary_json = '{"schema_version":3}'`}, summary.DetailAvailabilityCorrupt},
		{"run row missing", []string{`DELETE FROM rayflow_progress_runs`}, summary.DetailAvailabilityMissing},
		{"run detail_revision", []string{`UPDATE rayflow_progress_runs SET detail_revision = detail_revision + 1`}, summary.DetailAvailabilityCorrupt},
		{"run counters", []string{`UPDATE rayflow_progress_runs SET detail_pending_count = detail_pending_count - 1, detail_running_count = detail_running_count + 1`}, summary.DetailAvailabilityCorrupt},
		{"manifest missing", []string{`DELETE FROM rayflow_progress_manifests`}, summary.DetailAvailabilityMissing},
		{"manifest payload", []string{`UPDATE rayflow_progress_manifests SET payload = replace(payload, '"schema_version":1', '"schema_version":2')`}, summary.DetailAvailabilityCorrupt},
		{"manifest digest", []string{`UPDATE rayflow_progress_manifests SET manifest_digest = repeat('0', 64)`}, summary.DetailAvailabilityCorrupt},
		{"manifest still pending", []string{`UPDATE rayflow_progress_manifests SET slot = 'PENDING', published_at = NULL`}, summary.DetailAvailabilityMissing},
		{"page payload", []string{`UPDATE rayflow_progress_pages SET payload = replace(payload, 'step', 'stop') WHERE id = (SELECT min(id) FROM rayflow_progress_pages)`}, summary.DetailAvailabilityCorrupt},
		{"page digest column", []string{`UPDATE rayflow_progress_pages SET digest = repeat('1', 64) WHERE id = (SELECT max(id) FROM rayflow_progress_pages)`}, summary.DetailAvailabilityCorrupt},
		{"page missing", []string{`DELETE FROM rayflow_progress_manifest_pages WHERE page_index = 1 AND collection = 'EDGE'`}, summary.DetailAvailabilityMissing},
		{"detail row missing", []string{`DELETE FROM rayflow_progress_nodes WHERE node_id = 'n000007'`}, summary.DetailAvailabilityMissing},
		{"detail row extra", []string{`INSERT INTO rayflow_progress_nodes (run_pk, node_key, node_id, state, event_count, truncated, payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision)
 SELECT run_pk, repeat('a', 64), 'extra', state, event_count, truncated, payload, digest, encoded_bytes, decoded_bytes, last_topology_version, last_detail_revision
 FROM rayflow_progress_nodes WHERE node_id = 'n000007'`, `UPDATE rayflow_progress_runs SET detail_node_count = detail_node_count + 1, detail_pending_count = detail_pending_count + 1`}, summary.DetailAvailabilityCorrupt},
		{"detail payload", []string{`UPDATE rayflow_progress_nodes SET payload = replace(payload, 'n000009', 'n000008') WHERE node_id = 'n000009'`}, summary.DetailAvailabilityCorrupt},
		{"detail state column", []string{`UPDATE rayflow_progress_nodes SET state = 'FAILED' WHERE node_id = 'n000009'`}, summary.DetailAvailabilityCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for _, q := range tc.sql {
					if tag, err := tx.Exec(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					} else if tag.RowsAffected() == 0 && tag.String() != "ALTER TABLE" {
						t.Fatalf("%s changed nothing", q)
					}
				}
				rep, err := pgstore.Verify(ctx, tx, id.TaskExecutionPK, 0)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Availability != tc.want {
					t.Errorf("verdict %s %v, want %s", rep.Availability, rep.Problems, tc.want)
				}
				return errRollback
			})
			if err != errRollback {
				t.Fatal(err)
			}
		})
	}
}

var errRollback = errorString("rollback")

type errorString string

func (e errorString) Error() string { return string(e) }
