package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rayflow/rayflow/serve/reader"
)

// MinTokenBytes is the minimum length of a bearer token.
const MinTokenBytes = 16

type tokenEntry struct {
	digest    [sha256.Size]byte
	principal string
	flows     []string // "*" allows every flow
}

// Tokens maps bearer tokens to principals and is the per-flow allowlist
// Authorizer of rayflow serve. Only SHA-256 digests of the tokens are
// kept; lookups compare every digest in constant time.
type Tokens struct {
	entries []tokenEntry
}

// ErrDuplicateToken matches a *DuplicateTokenError (errors.Is).
var ErrDuplicateToken = errors.New("serve: a token is listed twice")

// DuplicateTokenError is a token file that lists one token on two lines
// (under two principals: a token names exactly one principal). It names
// both lines, never the token.
type DuplicateTokenError struct {
	FirstLine, Line int
}

func (e *DuplicateTokenError) Error() string {
	return fmt.Sprintf("serve: token line %d: the token of line %d is listed again (a token names one principal)", e.Line, e.FirstLine)
}

// Is makes errors.Is(err, ErrDuplicateToken) hold.
func (e *DuplicateTokenError) Is(target error) bool { return target == ErrDuplicateToken }

// ParseTokens reads token lines: "principal token flow[,flow...]" separated
// by whitespace, where a flow of "*" allows every flow and "-" alone none
// (the token authenticates but sees nothing). Blank lines and
// lines starting with # are skipped. A token listed on two lines is a
// *DuplicateTokenError. Error messages never quote a token.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	line := 0
	seen := map[string]bool{}
	tokenLine := map[[sha256.Size]byte]int{}
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, fmt.Errorf("serve: token line %d: want \"principal token flows\"", line)
		}
		if len(f[1]) < MinTokenBytes {
			return nil, fmt.Errorf("serve: token line %d: token shorter than %d bytes", line, MinTokenBytes)
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("serve: token line %d: principal %q listed twice", line, f[0])
		}
		seen[f[0]] = true
		digest := sha256.Sum256([]byte(f[1]))
		if first, dup := tokenLine[digest]; dup {
			return nil, &DuplicateTokenError{FirstLine: first, Line: line}
		}
		tokenLine[digest] = line
		flows := strings.Split(f[2], ",")
		if f[2] == "-" {
			flows = nil
		} else if slices.Contains(flows, "") || slices.Contains(flows, "-") {
			return nil, fmt.Errorf("serve: token line %d: empty flow name", line)
		}
		t.entries = append(t.entries, tokenEntry{digest: digest, principal: f[0], flows: flows})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("serve: reading tokens: %w", err)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("serve: no tokens")
	}
	return t, nil
}

// Principal returns the principal of a presented token, or "" when no
// token matches. Every stored digest is compared, whatever matches.
func (t *Tokens) Principal(token string) string {
	return t.principalOf(sha256.Sum256([]byte(token)))
}

// principalOf is Principal of a token's SHA-256 digest.
func (t *Tokens) principalOf(d [sha256.Size]byte) string {
	found := ""
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			found = t.entries[i].principal
		}
	}
	return found
}

// Authorize allows a principal the tasks of the flows on its token line.
// An unknown task is denied unless the principal may see every flow, so a
// denied principal cannot learn whether a task exists.
func (t *Tokens) Authorize(_ context.Context, principal string, task reader.Task, _ reader.Action) error {
	for i := range t.entries {
		e := &t.entries[i]
		if e.principal != principal {
			continue
		}
		if slices.Contains(e.flows, "*") || task.Exists && slices.Contains(e.flows, task.Flow) {
			return nil
		}
	}
	return reader.ErrDenied
}

// Flows returns the flows a principal may see (nil for none; ["*"] for all).
func (t *Tokens) Flows(principal string) []string {
	for i := range t.entries {
		if t.entries[i].principal == principal {
			return t.entries[i].flows
		}
	}
	return nil
}
