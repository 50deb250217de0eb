package serve_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/serve"
	"github.com/rayflow/rayflow/serve/reader"
)

// A token file names each principal's bearer token and the flows whose
// tasks it may see: "*" every flow, "-" none. Only the tokens' SHA-256
// digests are kept.
func ExampleParseTokens() {
	tokens, err := serve.ParseTokens(strings.NewReader(`
# principal  token                            flows
ops          ops-0123456789abcdef0123456789   *
shipping     ship-0123456789abcdef012345678   orderfulfillment,fanout
`))
	if err != nil {
		log.Fatal(err)
	}
	who := tokens.Principal("ship-0123456789abcdef012345678")
	ctx := context.Background()
	task := reader.Task{ID: "1175aaf8-4b1c-4f4e-9a3e-0c9f4f3f1a2b", Flow: "recovery", Exists: true}
	fmt.Println(who, tokens.Flows(who))
	fmt.Println("shipping reads a recovery task:", tokens.Authorize(ctx, who, task, reader.ActionReadProgress))
	fmt.Println("ops reads a recovery task:", tokens.Authorize(ctx, "ops", task, reader.ActionReadProgress))
	// Output:
	// shipping [orderfulfillment fanout]
	// shipping reads a recovery task: access denied
	// ops reads a recovery task: <nil>
}

// The HTTP API (task status, cancel, retry, progress reads and the graph
// page) over the durable task tables, as rayflow serve runs it.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("RAYFLOW_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	tokens, err := serve.ParseTokens(strings.NewReader(os.Getenv("RAYFLOW_SERVE_TOKENS")))
	if err != nil {
		log.Fatal(err)
	}
	// Cursors are signed: the first key signs and every key verifies, so a
	// rotation puts the new key first and keeps the old one for a while.
	var keys [][]byte
	for _, k := range strings.Fields(os.Getenv("RAYFLOW_SERVE_CURSOR_KEYS")) {
		keys = append(keys, []byte(k))
	}
	ring, err := reader.NewKeys(keys...)
	if err != nil {
		log.Fatal(err) // no key, or one shorter than reader.MinKeyBytes
	}
	api, err := serve.New(pool, tokens, ring, slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range api.Routes() {
		fmt.Println(r.Method, r.Pattern)
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: api, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
