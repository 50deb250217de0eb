package reader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
	reader "github.com/rayflow/rayflow/serve/reader"
)

// allow is an Authorizer: principal "all" may do anything, principal
// "flow:X" only tasks of flow X, everyone else nothing.
type allow struct{}

func (allow) Authorize(_ context.Context, principal string, task reader.Task, _ reader.Action) error {
	if principal == "all" || task.Exists && principal == "flow:"+task.Flow {
		return nil
	}
	return reader.ErrDenied
}

func newService(t testing.TB, pool *pgxpool.Pool) *reader.Service {
	t.Helper()
	k, err := reader.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := reader.New(pool, k, allow{})
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return pgstoretest.T0.Add(time.Hour) }
	return s
}
