package ray

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/buildid"
)

// The executable's digest is cached under the running image's identity: the
// first call hashes and writes the entry, the next one reads it (an entry
// with another valid digest is believed, which shows it was read); a
// malformed entry is hashed again and replaced.
func TestSelfDigestCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	want, err := buildid.Self()
	if err != nil {
		t.Fatal(err)
	}
	got, err := selfDigest()
	if err != nil || got != want {
		t.Fatalf("selfDigest %q (%v), want %q", got, err, want)
	}
	dir, _ := os.UserCacheDir()
	entries, _ := filepath.Glob(filepath.Join(dir, "rayflow", "digests", "*"))
	if len(entries) != 1 || strings.HasSuffix(entries[0], ".tmp") {
		t.Fatalf("cache entries %v, want one", entries)
	}
	other := "sha256:" + strings.Repeat("ab", 32)
	if err := os.WriteFile(entries[0], []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := selfDigest(); got != other {
		t.Fatalf("selfDigest %q: the cache entry was not read", got)
	}
	for _, bad := range []string{"", "sha256:xyz", other + "0", strings.ToUpper(other)} {
		if err := os.WriteFile(entries[0], []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := selfDigest(); got != want {
			t.Fatalf("entry %q: selfDigest %q, want the hash %q", bad, got, want)
		}
		if b, _ := os.ReadFile(entries[0]); string(b) != want {
			t.Fatalf("entry %q was not replaced: %q", bad, b)
		}
	}
}
