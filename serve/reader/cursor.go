package reader

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// Salts separate the HMACs derived from one key (docs/contracts.md#reads-cursors-and-error-codes).
const (
	saltCursor = "rayflow.workflow-progress.cursor.v1"
	saltOwner  = "rayflow.workflow-progress.cursor-owner.v1"
	saltRun    = "rayflow.workflow-progress.cursor-run.v1"
)

// MinKeyBytes is the minimum length of a cursor signing key.
const MinKeyBytes = 32

// Keys signs and verifies cursors: the first key signs, every key
// verifies (rotation: put the new key first, keep the old ones until
// their cursors no longer matter).
type Keys struct {
	keys [][]byte
}

// NewKeys returns a key ring; it needs at least one key and every key must
// be at least MinKeyBytes long.
func NewKeys(keys ...[]byte) (*Keys, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("read: no cursor key")
	}
	k := &Keys{}
	for i, key := range keys {
		if len(key) < MinKeyBytes {
			return nil, fmt.Errorf("read: cursor key %d is %d bytes, fewer than %d", i, len(key), MinKeyBytes)
		}
		k.keys = append(k.keys, bytes.Clone(key))
	}
	return k, nil
}

func mac(key []byte, salt string, msg []byte) []byte {
	// Derive a per-purpose key so one secret never MACs two kinds of text.
	d := hmac.New(sha256.New, key)
	d.Write([]byte(salt))
	h := hmac.New(sha256.New, d.Sum(nil))
	h.Write(msg)
	return h.Sum(nil)
}

// ownerTag binds a cursor to a task (HMAC over the ASCII task pk).
func ownerTag(key []byte, taskPK int64) string {
	return hex.EncodeToString(mac(key, saltOwner, strconv.AppendInt(nil, taskPK, 10)))
}

// runTag binds a cursor to a run (HMAC over the canonical 5-field identity).
func runTag(key []byte, id common.RunIdentity) string {
	b, err := canonical.Marshal(id)
	if err != nil {
		panic(fmt.Sprintf("read: canonical run identity: %v", err)) // a plain struct always encodes
	}
	return hex.EncodeToString(mac(key, saltRun, b))
}

// Strict: one token text per payload and signature.
var b64 = base64.RawURLEncoding.Strict()

// Seal signs payload for purpose (a salt naming what the token is) into an
// opaque token: base64url(payload) "." base64url(HMAC), at most 2 KiB.
func (k *Keys) Seal(purpose string, payload []byte) (string, error) {
	p := b64.EncodeToString(payload)
	tok := p + "." + b64.EncodeToString(mac(k.keys[0], purpose, []byte(p)))
	if len(tok) > read.MaxCursorBytes {
		return "", fmt.Errorf("read: token is %d bytes, over %d", len(tok), read.MaxCursorBytes)
	}
	return tok, nil
}

// Unseal verifies a token of purpose under every key and returns its
// payload and the key that verified it. Every failure is INVALID_CURSOR.
func (k *Keys) Unseal(purpose, tok string) ([]byte, []byte, error) {
	if len(tok) > read.MaxCursorBytes {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "cursor is %d bytes, over %d", len(tok), read.MaxCursorBytes)
	}
	p, sigText, ok := strings.Cut(tok, ".")
	if !ok || strings.Contains(sigText, ".") {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "malformed cursor")
	}
	sig, err := b64.DecodeString(sigText)
	if err != nil || len(sig) != sha256.Size {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "malformed cursor signature")
	}
	var key []byte
	for _, kk := range k.keys {
		if hmac.Equal(sig, mac(kk, purpose, []byte(p))) {
			key = kk
			break
		}
	}
	if key == nil {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "cursor signature does not verify")
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "malformed cursor payload")
	}
	return payload, key, nil
}

// sign encodes a progress cursor payload into a token. The owner and run
// tags must already be set with the signing key (the first).
func (k *Keys) sign(c read.Cursor) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("read: encoding cursor: %w", err)
	}
	return k.Seal(saltCursor, payload)
}

// open verifies a progress cursor and decodes its payload; it returns the
// key that verified it (to recompute the owner and run tags).
func (k *Keys) open(tok string) (read.Cursor, []byte, error) {
	payload, key, err := k.Unseal(saltCursor, tok)
	if err != nil {
		return nil, nil, err
	}
	c, err := read.DecodeCursor(payload)
	if err != nil {
		return nil, nil, errorf(read.ErrorCodeInvalidCursor, "invalid cursor payload: %v", err)
	}
	return c, key, nil
}
