package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// planNode is a node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Removed  float64    `json:"Rows Removed by Filter"`
	Plans    []planNode `json:"Plans"`
}

// A lookup reads the ledger rows of its digests only, however many rows
// the task has: it probes the primary key per digest instead of reading
// the task's rows and filtering them (which makes a map's lookups
// quadratic in its items).
func TestLookupProbesPerDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	r, _ := runningRun(t, pool, "ledger")
	code := sha256.Sum256([]byte("code"))
	const rows, chunk = 5000, 128
	es := make([]store.LedgerEntry, rows)
	for i := range es {
		es[i] = store.LedgerEntry{LedgerKey: store.LedgerKey{NodeID: "0.1", Code: code, Input: sha256.Sum256(fmt.Appendf(nil, "in%d", i))}, Result: []byte("1")}
	}
	if _, _, err := store.RecordItems(ctx, pool, r, es); err != nil {
		t.Fatal(err)
	}
	digests := make([][]byte, chunk)
	for i := range digests {
		digests[i] = es[rows/2+i].Input[:]
	}
	var raw []byte
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+store.LookupItemsSQL, r.TaskPK, "0.1", code[:], digests).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN: %v %s", err, raw)
	}
	var read float64
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == "rayflow_item_ledger" {
			read += (n.Rows + n.Removed) * n.Loops
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plan[0].Plan)
	if read != chunk {
		t.Errorf("a lookup of %d digests read %v ledger rows of the task's %d; want %d\n%s", chunk, read, rows, chunk, raw)
	}
}
