package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rayflow/rayflow/serve"
	"github.com/rayflow/rayflow/serve/reader"
	"github.com/rayflow/rayflow/serve/showcase"
)

func init() {
	register("serve", "serve the HTTP API: task status, cancel, retry and authorized progress reads", cmdServe)
}

const serveSynopsis = `serve [--addr HOST:PORT] [--database-url URL] [--tokens-file F] [--cursor-keys-file F]

Bearer tokens: one line per principal, "principal token flows" (flows: a
comma-separated list of flow names, * for all, - for none), from
--tokens-file or, when it is not given, RAYFLOW_SERVE_TOKENS. Only SHA-256
digests of the tokens are kept; tokens are never logged.
Cursor keys: one key per line (at least 32 bytes each; the first signs, all
verify), from --cursor-keys-file or RAYFLOW_SERVE_CURSOR_KEYS; without
either a random key is made and cursors do not survive a restart.
Routes: GET /livez, /readyz; GET /api/tasks, /api/tasks/{id}; POST
/api/tasks (enqueue any built-in or published flow, JSON body), POST
/api/tasks/{id}/cancel, /retry; GET /api/workflows/{id}[/topology/nodes|
/topology/edges|/nodes|/node-detail?node_id=]; GET /metrics,
/api/openapi.json; POST /api/examples/{orderfulfillment|recovery|complex|fanout}
(enqueue an example). Browser pages (sign in at /login; an HttpOnly cookie):
GET /tasks/{id} and its live graph page /tasks/{id}/graph.`

func cmdServe(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "serve", serveSynopsis, `printf 'ops %s *\n' "$(openssl rand -hex 24)" > tokens
rayflow serve --addr 127.0.0.1:8080 --tokens-file tokens
curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/workflows/$id/topology/nodes?limit=50
`)
	dbURL := databaseFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	tokensFile := fs.String("tokens-file", "", "bearer token file (default $RAYFLOW_SERVE_TOKENS)")
	keysFile := fs.String("cursor-keys-file", "", "cursor signing keys file (default $RAYFLOW_SERVE_CURSOR_KEYS)")
	if code := parse(fs, e, args); code >= 0 {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	log, flush, code := observe(ctx, e)
	if code >= 0 {
		return code
	}
	defer flush()
	tokText, err := secretText(*tokensFile, "RAYFLOW_SERVE_TOKENS")
	if err != nil || tokText == "" {
		errorLine(e, "serve: no tokens: pass --tokens-file or set RAYFLOW_SERVE_TOKENS (%v)", err)
		return exitUsage
	}
	tokens, err := serve.ParseTokens(strings.NewReader(tokText))
	if err != nil {
		errorLine(e, "%v", err)
		return exitUsage
	}
	keyText, err := secretText(*keysFile, "RAYFLOW_SERVE_CURSOR_KEYS")
	if err != nil {
		errorLine(e, "serve: cursor keys: %v", err)
		return exitUsage
	}
	var keys [][]byte
	for _, l := range strings.Split(keyText, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keys = append(keys, []byte(l))
		}
	}
	if len(keys) == 0 {
		k := make([]byte, 32)
		_, _ = rand.Read(k) // never fails (crypto/rand)
		keys = [][]byte{k}
		log.Warn("no cursor keys given: using a random key; cursors will not survive a restart")
	}
	ring, err := reader.NewKeys(keys...)
	if err != nil {
		errorLine(e, "%v", err)
		return exitUsage
	}
	pool, code := openPool(ctx, e, *dbURL, 8)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	api, err := serve.New(pool, tokens, ring, log, serve.WithEnqueueRoutes(showcase.Routes()...))
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		errorLine(e, "serve: %v", err)
		return exitError
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	log.Info("serving", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		errorLine(e, "serve: %v", err)
		return exitError
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		errorLine(e, "serve: shutdown: %v", err)
		return exitError
	}
	log.Info("stopped")
	return exitOK
}

// secretText reads file, or the environment variable when file is "".
func secretText(file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	return string(b), nil
}
