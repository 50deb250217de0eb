package reader

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/read"
)

func testKeys(t testing.TB, ks ...string) *Keys {
	t.Helper()
	var bs [][]byte
	for _, k := range ks {
		bs = append(bs, []byte(strings.Repeat(k, 32)))
	}
	k, err := NewKeys(bs...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sampleCursor(key []byte) *read.NodeCursor {
	id := common.RunIdentity{SchemaVersion: 1, RunID: "6f1c1f4e-8d7a-4c39-9f41-0e8c2b5f6a10", TaskExecutionPK: 7, AttemptNumber: 1}
	return &read.NodeCursor{V: 1, Owner: ownerTag(key, 7), Run: runTag(key, id),
		RunIdentity:     common.PublicRunIdentity{SchemaVersion: 1, RunID: id.RunID, AttemptNumber: 1},
		SummaryRevision: 3, TopologyVersion: 1, Limit: 100, Collection: "topology_nodes", Order: "node_id_asc",
		Filters: [][]string{}, After: "n000099", Position: []int64{0, 100}, Seen: 100}
}

func TestNewKeys(t *testing.T) {
	if _, err := NewKeys(); err == nil {
		t.Error("no key accepted")
	}
	if _, err := NewKeys(bytes.Repeat([]byte("k"), MinKeyBytes-1)); err == nil {
		t.Error("31-byte key accepted")
	}
	if _, err := NewKeys(bytes.Repeat([]byte("k"), MinKeyBytes)); err != nil {
		t.Errorf("32-byte key refused: %v", err)
	}
}

func TestCursorRoundTripAndRotation(t *testing.T) {
	old := testKeys(t, "a")
	tok, err := old.sign(sampleCursor(old.keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	rotated := testKeys(t, "b", "a") // new key signs, old still verifies
	c, key, err := rotated.open(tok)
	if err != nil {
		t.Fatalf("rotated ring refused an old cursor: %v", err)
	}
	if !bytes.Equal(key, old.keys[0]) || c.(*read.NodeCursor).Seen != 100 {
		t.Errorf("open = %+v with the wrong key or payload", c)
	}
	dropped := testKeys(t, "b")
	if _, _, err := dropped.open(tok); CodeOf(err) != read.ErrorCodeInvalidCursor {
		t.Errorf("retired key: err = %v, want INVALID_CURSOR", err)
	}
	tok2, err := rotated.sign(sampleCursor(rotated.keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.open(tok2); CodeOf(err) != read.ErrorCodeInvalidCursor {
		t.Errorf("a cursor signed by the new key verified under the old ring only: %v", err)
	}
}

func TestCursorRejects(t *testing.T) {
	k := testKeys(t, "a")
	tok, err := k.sign(sampleCursor(k.keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	dot := strings.IndexByte(tok, '.')
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	// A validly signed payload that is not a cursor.
	bad := b64.EncodeToString([]byte(`{"v":1}`))
	badTok := bad + "." + b64.EncodeToString(mac(k.keys[0], saltCursor, []byte(bad)))
	cases := map[string]string{
		"empty":             "",
		"no dot":            strings.ReplaceAll(tok, ".", ""),
		"two dots":          tok + ".x",
		"payload tampered":  flip(tok, 3),
		"signature flipped": flip(tok, dot+3),
		"short signature":   tok[:len(tok)-2],
		"oversize":          tok + strings.Repeat("A", read.MaxCursorBytes+1-len(tok)),
		"invalid payload":   badTok,
	}
	for name, c := range cases {
		if _, _, err := k.open(c); CodeOf(err) != read.ErrorCodeInvalidCursor {
			t.Errorf("%s: err = %v, want INVALID_CURSOR", name, err)
		}
	}
}

func TestCursorSizeCap(t *testing.T) {
	k := testKeys(t, "a")
	c := sampleCursor(k.keys[0])
	// Grow the after field until the token passes the cap: sign refuses
	// one byte over, open refuses anything over before verifying.
	for n := 1; n <= 256; n++ {
		c.After = strings.Repeat("x", n)
		tok, err := k.sign(c)
		if err != nil {
			t.Fatalf("after of %d bytes: %v", n, err)
		}
		if len(tok) > read.MaxCursorBytes {
			t.Fatalf("token of %d bytes signed", len(tok))
		}
	}
	long := strings.Repeat("A", read.MaxCursorBytes)
	if _, _, err := k.open(long); CodeOf(err) != read.ErrorCodeInvalidCursor {
		t.Errorf("2048-byte garbage: %v", err)
	}
}

func TestErrorIs(t *testing.T) {
	err := errorf(read.ErrorCodeMissing, "x")
	if !errors.Is(err, &Error{Code: read.ErrorCodeMissing}) || errors.Is(err, &Error{Code: read.ErrorCodeCorrupt}) {
		t.Error("errors.Is by code does not work")
	}
}

func TestFitterEdge(t *testing.T) {
	f := &fitter{size: read.MaxResponseBytes - 7} // "\"abc\"" is 5 bytes, plus ", " is 7
	if ok, _ := f.admit("abc", false); !ok {
		t.Error("an item exactly at the cap refused")
	}
	if ok, _ := f.admit("", true); ok {
		t.Error("an item over the cap admitted") // `""` is 2 bytes
	}
	g := &fitter{size: read.MaxResponseBytes - 6}
	if ok, _ := g.admit("abc", false); ok {
		t.Error("an item one byte over the cap admitted")
	}
}

func FuzzCursorOpen(f *testing.F) {
	k := testKeys(f, "a")
	tok, err := k.sign(sampleCursor(k.keys[0]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add("")
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, _, err := k.open(s)
		if err != nil {
			if CodeOf(err) != read.ErrorCodeInvalidCursor {
				t.Fatalf("open(%q) = %v, not INVALID_CURSOR", s, err)
			}
			return
		}
		if len(s) > read.MaxCursorBytes || c == nil {
			t.Fatalf("open accepted %q", s)
		}
		if s != tok {
			t.Fatalf("a token other than the signed one verified: %q", s)
		}
	})
}
