package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	gread "github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/serve/reader"
)

const tokenFile = `# principal token flows
admin  admin-token-0123456789 *
chain  chain-token-0123456789 chain,other
other  other-token-0123456789 otherflow
nobody nobody-token-012345678 -
`

func testTokens(t testing.TB) *Tokens {
	t.Helper()
	tk, err := ParseTokens(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestParseTokens(t *testing.T) {
	bad := map[string]string{
		"empty":           "",
		"two fields":      "a tokentokentokentoken\n",
		"short token":     "a short *\n",
		"dup principal":   "a tokentokentokentoken1 * \na tokentokentokentoken2 *\n",
		"empty flow":      "a tokentokentokentoken x,,y\n",
		"dash with flows": "a tokentokentokentoken x,-\n",
	}
	for name, in := range bad {
		_, err := ParseTokens(strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "tokentoken") {
			t.Errorf("%s: the error quotes the token: %v", name, err)
		}
	}
	tk := testTokens(t)
	for tok, want := range map[string]string{"admin-token-0123456789": "admin", "chain-token-0123456789": "chain",
		"chain-token-012345678": "", "": "", "nobody-token-012345678": "nobody"} {
		if got := tk.Principal(tok); got != want {
			t.Errorf("Principal(%q) = %q, want %q", tok, got, want)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		principal string
		task      reader.Task
		allow     bool
	}{
		{"admin", reader.Task{ID: "x"}, true},
		{"chain", reader.Task{ID: "x", Flow: "chain", Exists: true}, true},
		{"chain", reader.Task{ID: "x", Flow: "other", Exists: true}, true},
		{"chain", reader.Task{ID: "x", Flow: "else", Exists: true}, false},
		{"chain", reader.Task{ID: "x"}, false},
		{"nobody", reader.Task{ID: "x", Flow: "chain", Exists: true}, false},
		{"ghost", reader.Task{ID: "x", Flow: "chain", Exists: true}, false},
	} {
		if err := tk.Authorize(ctx, tc.principal, tc.task, reader.ActionReadProgress); (err == nil) != tc.allow {
			t.Errorf("Authorize(%s, %+v) = %v, want allow %v", tc.principal, tc.task, err, tc.allow)
		}
	}
}

// TestParseTokensDuplicateToken: one token under two principals is
// refused with a *DuplicateTokenError naming both lines (not "last line
// wins"); the message never quotes the token.
func TestParseTokensDuplicateToken(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *DuplicateTokenError
	}{
		{"adjacent", "a tokentokentokentoken1 *\nb tokentokentokentoken1 x\n", &DuplicateTokenError{FirstLine: 1, Line: 2}},
		{"with comments and blanks between", "# file\na tokentokentokentoken1 *\n\nc tokentokentokentoken2 y\n# x\nb tokentokentokentoken1 -\n", &DuplicateTokenError{FirstLine: 2, Line: 6}},
		{"third of three", "a tokentokentokentoken1 *\nb tokentokentokentoken2 *\nc tokentokentokentoken2 *\n", &DuplicateTokenError{FirstLine: 2, Line: 3}},
	} {
		_, err := ParseTokens(strings.NewReader(tc.in))
		var got *DuplicateTokenError
		if !errors.As(err, &got) || !errors.Is(err, ErrDuplicateToken) {
			t.Errorf("%s: err = %v, want a *DuplicateTokenError", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
		msg := err.Error()
		if strings.Contains(msg, "tokentoken") || !strings.Contains(msg, fmt.Sprintf("line %d", tc.want.FirstLine)) || !strings.Contains(msg, fmt.Sprintf("line %d", tc.want.Line)) {
			t.Errorf("%s: message %q", tc.name, msg)
		}
	}
	// Distinct tokens that share a prefix are fine.
	if _, err := ParseTokens(strings.NewReader("a tokentokentokentoken1 *\nb tokentokentokentoken12 *\n")); err != nil {
		t.Errorf("distinct tokens: %v", err)
	}
}

func TestHTTPStatus(t *testing.T) {
	want := map[gread.ErrorCode]int{
		gread.ErrorCodeAccessDenied: 403, gread.ErrorCodeNotFound: 404, gread.ErrorCodeInvalidArgument: 400,
		gread.ErrorCodeInvalidCursor: 400, gread.ErrorCodeCursorMismatch: 409, gread.ErrorCodeMissing: 409,
		gread.ErrorCodeCorrupt: 503,
	}
	for _, c := range gread.ErrorCodeValues {
		w, ok := want[c]
		if !ok {
			t.Errorf("code %s has no expected status", c)
		}
		if got := HTTPStatus(c); got != w {
			t.Errorf("HTTPStatus(%s) = %d, want %d", c, got, w)
		}
	}
}

// lazyServer is a server on a pool that never connects: enough for what
// is decided before the database (authentication, probes' shape).
// testServer is the API on pool with the test tokens, a fixed cursor key
// and testRoutes.
func testServer(t *testing.T, pool *pgxpool.Pool) *Server {
	t.Helper()
	k, err := reader.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(pool, testTokens(t), k, quiet, WithEnqueueRoutes(testRoutes...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lazyServer(t *testing.T) *Server {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return testServer(t, pool)
}

func path(p string) string {
	return strings.ReplaceAll(p, "{task_id}", "00000000-0000-4000-8000-000000000000")
}

// TestUnauthenticated: every route but the probes refuses a missing,
// malformed or unknown token with 401 before touching the database (a
// page redirects to the sign-in page).
func TestUnauthenticated(t *testing.T) {
	s := lazyServer(t)
	for _, rt := range s.Routes() {
		for name, h := range map[string]string{"none": "", "basic": "Basic YWRtaW4=", "unknown": "Bearer not-a-token-at-all",
			"prefix of a token": "Bearer admin-token-012345678", "no scheme": "admin-token-0123456789"} {
			req := httptest.NewRequest(rt.Method, path(rt.Pattern), nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if rt.Public {
				if w.Code == http.StatusUnauthorized {
					t.Errorf("%s %s (%s): public route wants a token", rt.Method, rt.Pattern, name)
				}
				continue
			}
			if rt.HTML { // a page sends the browser to sign in, and back
				if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login?next="+url.QueryEscape(path(rt.Pattern)) {
					t.Errorf("%s %s (%s): %d %v", rt.Method, rt.Pattern, name, w.Code, w.Header())
				}
				continue
			}
			if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"ACCESS_DENIED"`) || w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s (%s): %d %s", rt.Method, rt.Pattern, name, w.Code, w.Body)
			}
		}
	}
}

func TestLivezReadyzWithoutDatabase(t *testing.T) {
	s := lazyServer(t)
	for p, want := range map[string]int{"/livez": 200, "/readyz": 503} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != want {
			t.Errorf("%s = %d, want %d", p, w.Code, want)
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
