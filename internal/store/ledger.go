package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The item ledger of resumable maps (migration 0007): the succeeded items'
// results of a task, written in batches under the attempt's fence and read
// back in batches by a later attempt or a repair.

// LedgerKey identifies one item result within a task.
type LedgerKey struct {
	// NodeID is the map's node id.
	NodeID string
	// Code is the code identity of the item's body, Input the canonical
	// digest of the item's encoded input (SHA-256 each).
	Code, Input [32]byte
}

// LedgerEntry is one succeeded item's encoded result.
type LedgerEntry struct {
	LedgerKey
	Result []byte
}

// MaxLedgerResultBytes is the largest result a ledger row holds (the
// column's CHECK); a writer's own cap may be lower.
const MaxLedgerResultBytes = 1 << 20

// ErrStaleRun is returned by a fenced ledger write when the run no longer
// holds its task (a newer attempt or generation, or the task left RUNNING):
// nothing was written.
var ErrStaleRun = errors.New("store: the run no longer holds its task")

// ErrLedgerResultTooLarge is returned by RecordItems for a result over
// MaxLedgerResultBytes (nothing of the batch is sent).
var ErrLedgerResultTooLarge = errors.New("store: ledger result over the limit")

// recordItemsSQL inserts the entries of one batch ($5–$8, parallel arrays)
// for run $1–$4, aborting (RF001) when the run's fence no longer matches;
// an entry already there is kept as it is. It returns the rows and result
// bytes it added.
const recordItemsSQL = `WITH f AS (
 SELECT rayflow_require(count(*), 'RF001', 'store: the run fence no longer matches') AS ok
   FROM (SELECT 1 FROM rayflow_tasks WHERE ` + runFence + ` AND state = 'RUNNING' FOR SHARE) t),
ins AS (
INSERT INTO rayflow_item_ledger (task_pk, node_id, code_identity, input_digest, result, attempt_number, execution_generation)
SELECT $1, u.node_id, u.code_identity, u.input_digest, u.result, $2, $3
  FROM f, unnest($5::text[], $6::bytea[], $7::bytea[], $8::bytea[]) AS u(node_id, code_identity, input_digest, result)
 ON CONFLICT DO NOTHING
 RETURNING octet_length(result) AS n)
SELECT count(*), coalesce(sum(n), 0) FROM ins`

// RecordItems writes entries for run r in one statement and returns how
// many rows and result bytes it added (an entry whose key is already
// there adds none). It returns ErrStaleRun, writing nothing, when r no
// longer holds its task, and ErrLedgerResultTooLarge, sending nothing,
// for a result over MaxLedgerResultBytes.
func RecordItems(ctx context.Context, q Querier, r Run, entries []LedgerEntry) (rows, bytes int64, err error) {
	if len(entries) == 0 {
		return 0, 0, nil
	}
	nodes := make([]string, len(entries))
	codes := make([][]byte, len(entries))
	inputs := make([][]byte, len(entries))
	results := make([][]byte, len(entries))
	for i := range entries {
		e := &entries[i]
		if len(e.Result) > MaxLedgerResultBytes {
			return 0, 0, fmt.Errorf("%w: %d bytes, the limit is %d", ErrLedgerResultTooLarge, len(e.Result), MaxLedgerResultBytes)
		}
		nodes[i], codes[i], inputs[i], results[i] = e.NodeID, e.Code[:], e.Input[:], e.Result
	}
	err = q.QueryRow(ctx, recordItemsSQL, r.args(nodes, codes, inputs, results)...).Scan(&rows, &bytes)
	if err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "RF001" {
			return 0, 0, fmt.Errorf("%w (task %d, attempt %d, generation %d)", ErrStaleRun, r.TaskPK, r.Attempt, r.Gen)
		}
		return 0, 0, fmt.Errorf("store: record ledger items: %w", err)
	}
	return rows, bytes, nil
}

// lookupItemsSQL reads the results of task $1, node $2, code identity $3
// for the input digests $4: one primary-key probe per digest (the LATERAL
// subquery with LIMIT is not flattened into a join), so a lookup costs
// the same whatever the number of rows the task already has; a filter of
// the task's rows by the digests would read all of them for every chunk.
const lookupItemsSQL = `SELECT d.digest, x.result FROM unnest($4::bytea[]) AS d(digest)
 CROSS JOIN LATERAL (SELECT l.result FROM rayflow_item_ledger l
   WHERE l.task_pk = $1 AND l.node_id = $2 AND l.code_identity = $3 AND l.input_digest = d.digest LIMIT 1) x`

// LookupItems returns the recorded results of task's node nodeID under
// code identity code for the given input digests, by digest; a digest
// without a row is absent from the map. One statement.
func LookupItems(ctx context.Context, q Reader, task int64, nodeID string, code [32]byte, inputs [][32]byte) (map[[32]byte][]byte, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	digests := make([][]byte, len(inputs))
	for i := range inputs {
		digests[i] = inputs[i][:]
	}
	rows, err := q.Query(ctx, lookupItemsSQL, task, nodeID, code[:], digests)
	if err != nil {
		return nil, fmt.Errorf("store: look up ledger items: %w", err)
	}
	found := make(map[[32]byte][]byte)
	var digest, result []byte
	_, err = pgx.ForEachRow(rows, []any{&digest, &result}, func() error {
		if len(digest) != 32 {
			return fmt.Errorf("store: ledger digest of %d bytes", len(digest))
		}
		found[[32]byte(digest)] = append([]byte(nil), result...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: look up ledger items: %w", err)
	}
	return found, nil
}

// LedgerUsage is how many rows and result bytes a task's ledger holds.
func LedgerUsage(ctx context.Context, q Reader, task int64) (rows, bytes int64, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), coalesce(sum(octet_length(result)), 0) FROM rayflow_item_ledger WHERE task_pk = $1`, task).Scan(&rows, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("store: ledger usage: %w", err)
	}
	return rows, bytes, nil
}

// CopyItems copies every ledger row of task from into task to (a repair
// task's start) and returns how many it copied; rows already in to stay.
func CopyItems(ctx context.Context, q Querier, from, to int64) (int64, error) {
	tag, err := q.Exec(ctx, `INSERT INTO rayflow_item_ledger (task_pk, node_id, code_identity, input_digest, result, attempt_number, execution_generation)
 SELECT $2, node_id, code_identity, input_digest, result, 1, 0 FROM rayflow_item_ledger WHERE task_pk = $1
 ON CONFLICT DO NOTHING`, from, to)
	if err != nil {
		return 0, fmt.Errorf("store: copy ledger items: %w", err)
	}
	return tag.RowsAffected(), nil
}
