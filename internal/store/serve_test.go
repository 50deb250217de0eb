package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
)

// The metrics' statements count by queue and state, and measure claims,
// queue age and publication lag, restricted to flows.
func TestMetricsReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	enqueue(t, pool, "a", 0)
	enqueueAndClaim(t, pool, "b")
	run, _ := runningRun(t, pool, "other")
	if _, err := store.UpdateSummary(ctx, pool, run, `{"timestamps":{"updated_at":"2026-01-01T00:00:00Z"}}`, 1); err != nil {
		t.Fatal(err)
	}
	type count struct {
		Queue, State string
		N            int64
	}
	for _, tc := range []struct {
		name  string
		flows []string
		want  []count
	}{
		{"every flow", nil, []count{{"a", "QUEUED", 1}, {"b", "RUNNING", 1}, {"default", "RUNNING", 1}}},
		{"one flow", []string{"flow"}, []count{{"a", "QUEUED", 1}, {"b", "RUNNING", 1}}},
		{"no such flow", []string{"none"}, nil},
	} {
		rows, err := store.TaskCountsByQueue(ctx, pool, tc.flows)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[count])
		if err != nil {
			t.Fatal(err)
		}
		slicesSort(got, func(c count) string { return c.Queue + c.State })
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: TaskCountsByQueue (-want +got):\n%s", tc.name, diff)
		}
	}
	rows, err := store.ClaimLatencies(ctx, pool, nil, 3600)
	if err != nil {
		t.Fatal(err)
	}
	// The claimed task's queue, and the fixture's task started without a claim.
	if got := mustCollect(t, rows); len(got) != 2 || got[0][0] != "b" || got[1][0] != "default" {
		t.Errorf("ClaimLatencies: %v", got)
	}
	rows, err = store.OldestRunnable(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCollect(t, rows); len(got) != 1 || got[0][0] != "a" {
		t.Errorf("OldestRunnable: %v", got)
	}
	var live int64
	var lag []float64
	if err := store.PublicationLag(ctx, pool, nil).Scan(&live, &lag); err != nil || live != 1 || len(lag) != 4 {
		t.Errorf("PublicationLag: %d %v, %v", live, lag, err)
	}
}

func slicesSort[T any](s []T, key func(T) string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && key(s[j]) < key(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// The executions list pages by id (or by enqueued_at with a time
// filter), applies each filter, and counts by state from an index.
func TestTaskList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.MigratedPool(t)
	var pks []int64
	for _, q := range []string{"a", "a", "b"} {
		_, pk := enqueue(t, pool, q, 0)
		pks = append(pks, pk)
	}
	future := time.Now().Add(time.Hour)
	list := func(p store.TaskListPage) []int64 {
		t.Helper()
		p.ErrorMaxBytes = 100
		rows, err := store.ListTaskPage(ctx, pool, p)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range mustCollect(t, rows) {
			ids = append(ids, r[0].(int64))
		}
		return ids
	}
	for _, tc := range []struct {
		name string
		p    store.TaskListPage
		want []int64
	}{
		{"first page", store.TaskListPage{Rows: 2}, []int64{pks[2], pks[1]}},
		{"next page", store.TaskListPage{Rows: 2, After: &store.TaskKey{ID: pks[1]}}, []int64{pks[0]}},
		{"queue", store.TaskListPage{Rows: 10, Queue: "a"}, []int64{pks[1], pks[0]}},
		{"state", store.TaskListPage{Rows: 10, State: "RUNNING"}, nil},
		{"one flow", store.TaskListPage{Rows: 10, Flows: []string{"flow"}}, []int64{pks[2], pks[1], pks[0]}},
		{"two flows", store.TaskListPage{Rows: 10, Flows: []string{"x", "y"}}, nil},
		{"to", store.TaskListPage{Rows: 10, To: &future}, []int64{pks[2], pks[1], pks[0]}},
		{"from", store.TaskListPage{Rows: 10, From: &future}, nil},
	} {
		if diff := cmp.Diff(tc.want, list(tc.p)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, tc := range []struct {
			flows []string
			want  int64
		}{{nil, 3}, {[]string{"flow"}, 3}, {[]string{"none"}, 0}} {
			rows, err := store.CountTasksByState(ctx, tx, tc.flows)
			if err != nil {
				return err
			}
			var n int64
			for _, r := range mustCollect(t, rows) {
				n += r[1].(int64)
			}
			if n != tc.want {
				t.Errorf("CountTasksByState(%v) = %d, want %d", tc.flows, n, tc.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
