package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// SessionTTL is how long a browser sign-in lasts (the cookie's Max-Age
// and the server-side session's lifetime alike).
const SessionTTL = 12 * time.Hour

// MaxSessions bounds the sessions the server keeps; a sign-in past it
// ends the session that would expire first (the oldest sign-in).
const MaxSessions = 4096

// sessionIDBytes is the length of a session id (random, base64url in the
// cookie).
const sessionIDBytes = 32

// session is one browser sign-in: the principal, the SHA-256 digest of
// the token it signed in with (the session ends when that token no longer
// names the principal), when it expires, and its CSRF token.
type session struct {
	principal string
	token     [sha256.Size]byte
	expires   time.Time
	// csrf is the session's CSRF token: random, sent in the forms of
	// the task actions and checked on their posts.
	csrf string
}

// sessions are the server's browser sessions. The cookie holds a random
// session id, never the token; the server keeps only the id's SHA-256
// digest, so sign-out (or expiry) ends the session for good: a cookie
// captured before is refused after.
type sessions struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[[sha256.Size]byte]session
}

func newSessions() *sessions {
	return &sessions{now: time.Now, m: map[[sha256.Size]byte]session{}}
}

// start records a new session and returns its cookie value.
func (ss *sessions) start(principal string, token [sha256.Size]byte) string {
	var id [sessionIDBytes]byte
	var csrf [sessionIDBytes]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	_, _ = rand.Read(csrf[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	if len(ss.m) >= MaxSessions {
		for k, s := range ss.m {
			if !now.Before(s.expires) {
				delete(ss.m, k)
			}
		}
	}
	for len(ss.m) >= MaxSessions { // all live: end the first to expire
		var first [sha256.Size]byte
		var at time.Time
		for k, s := range ss.m {
			if at.IsZero() || s.expires.Before(at) {
				first, at = k, s.expires
			}
		}
		delete(ss.m, first)
	}
	ss.m[sha256.Sum256(id[:])] = session{principal: principal, token: token, expires: now.Add(SessionTTL), csrf: base64.RawURLEncoding.EncodeToString(csrf[:])}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// lookup returns the live session of a cookie value (false for a
// malformed, unknown, ended or expired one).
func (ss *sessions) lookup(value string) (session, bool) {
	k, ok := sessionKey(value)
	if !ok {
		return session{}, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok {
		return session{}, false
	}
	if !ss.now().Before(s.expires) {
		delete(ss.m, k)
		return session{}, false
	}
	return s, true
}

// end ends the session of a cookie value, if any.
func (ss *sessions) end(value string) {
	if k, ok := sessionKey(value); ok {
		ss.mu.Lock()
		delete(ss.m, k)
		ss.mu.Unlock()
	}
}

func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

func sessionKey(value string) ([sha256.Size]byte, bool) {
	id, err := base64.RawURLEncoding.Strict().DecodeString(value) // one spelling per id
	if err != nil || len(id) != sessionIDBytes {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(id), true
}
