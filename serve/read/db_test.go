package read_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/serve/internal/fixture"
	sread "github.com/rayflow/rayflow/serve/read"
)

// allow is an Authorizer: principal "all" may do anything, principal
// "flow:X" only tasks of flow X, everyone else nothing.
type allow struct{}

func (allow) Authorize(_ context.Context, principal string, task sread.Task, _ sread.Action) error {
	if principal == "all" || task.Exists && principal == "flow:"+task.Flow {
		return nil
	}
	return sread.ErrDenied
}

func newService(t testing.TB, pool *pgxpool.Pool) *sread.Service {
	t.Helper()
	k, err := sread.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sread.New(pool, k, allow{})
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return fixture.T0.Add(time.Hour) }
	return s
}
