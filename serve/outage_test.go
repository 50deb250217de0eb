package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress/pgstore/pgstoretest"
)

// TestStoreOutage stops a real PostgreSQL cluster under a running server:
// every JSON route that reads the database answers 503 UNAVAILABLE in the
// error envelope with Retry-After (as /readyz answers 503), not 500.
func TestStoreOutage(t *testing.T) {
	c := pgtest.StartCluster(t)
	pool := pgtest.PoolAt(t, pgtest.NewDatabase(t, c.URL))
	ctx := context.Background()
	if _, err := durable.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	taskID, _ := pgstoretest.NewTask(t, pool, "chain")
	e := &env{s: testServer(t, pool), pool: pool, taskID: taskID}
	routes := []struct{ method, target string }{
		{"GET", "/api/tasks"},
		{"GET", "/api/tasks/" + taskID},
		{"POST", "/api/tasks/" + taskID + "/cancel"},
		{"POST", "/api/tasks/" + taskID + "/retry"},
		{"GET", "/api/workflows/" + taskID},
		{"GET", "/api/workflows/" + taskID + "/topology/nodes"},
		{"GET", "/api/workflows/" + taskID + "/node-detail?node_id=0"},
		{"GET", "/metrics"},
	}
	if code, body := e.do(t, "chain", "GET", "/api/tasks/"+taskID); code != http.StatusOK {
		t.Fatalf("before the outage: %d %v", code, body)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes {
		req := httptest.NewRequest(rt.method, rt.target, nil)
		req.Header.Set("Authorization", "Bearer "+tokensOf["chain"])
		w := httptest.NewRecorder()
		e.s.ServeHTTP(w, req)
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != http.StatusServiceUnavailable || body["code"] != CodeUnavailable || body["message"] == "" {
			t.Errorf("%s %s during the outage: %d %s", rt.method, rt.target, w.Code, w.Body)
		}
		if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra != RetryAfterSeconds {
			t.Errorf("%s %s: Retry-After %q", rt.method, rt.target, w.Header().Get("Retry-After"))
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: headers %v", rt.method, rt.target, w.Header())
		}
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d", w.Code)
	}
	// Back up: the same server answers again.
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if code, body := e.do(t, "chain", "GET", "/api/tasks/"+taskID); code != http.StatusOK {
		t.Errorf("after the outage: %d %v", code, body)
	}
}

// TestOtherDatabaseErrorsStayInternal: a database error that is not an
// outage (here a missing table) is still 500 INTERNAL, without Retry-After.
func TestOtherDatabaseErrorsStayInternal(t *testing.T) {
	e := newEnv(t, 1)
	if _, err := e.pool.Exec(context.Background(), `ALTER TABLE rayflow_tasks RENAME TO rayflow_tasks_gone`); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/api/tasks/"+e.taskID, nil)
	req.Header.Set("Authorization", "Bearer "+tokensOf["chain"])
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, req)
	if w.Code != http.StatusInternalServerError || w.Header().Get("Retry-After") != "" || !json.Valid(w.Body.Bytes()) {
		t.Errorf("a missing table: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

// TestStoreUnavailable: which errors count as an outage.
func TestStoreUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", fmt.Errorf("read: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"broken connection", fmt.Errorf("x: %w", &net.OpError{Op: "read", Err: errors.New("connection reset")}), true},
		{"unexpected EOF", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"other", errors.New("boom"), false},
	} {
		if got := storeUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: storeUnavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
