//go:build linux

package ray

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/rayflow/rayflow/internal/buildid"
)

// selfDigest is buildid.Self through a cache file keyed by the running
// image's identity (device, inode, size, modification and change times):
// a leaf process, started once per Ray worker, otherwise hashes its whole
// binary (tens of milliseconds of CPU for a typical binary) before its
// handshake, and Ray starts workers often (idle ones are ended). Any write
// to a file moves its change time, which user code cannot set, so a
// rebuilt or rewritten binary gets a new key. The cache is a convenience
// of this user's own files (the user cache directory): whoever can write
// it can replace the binary too. Without a cache directory it hashes.
func selfDigest() (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return buildid.Self()
	}
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return buildid.Self()
	}
	path := filepath.Join(dir, "rayflow", "digests", fmt.Sprintf("%x-%x-%d-%d.%09d-%d.%09d",
		st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec))
	if b, err := os.ReadFile(path); err == nil && validDigest(string(b)) {
		return string(b), nil
	}
	d, err := buildid.Self()
	if err == nil {
		writeDigest(path, d)
	}
	return d, err
}

// writeDigest writes a cache entry atomically (best effort).
func writeDigest(path, d string) {
	if os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "digest-*.tmp")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(d)
	if cerr := tmp.Close(); err == nil && cerr == nil && os.Rename(tmp.Name(), path) == nil {
		return
	}
	os.Remove(tmp.Name())
}

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	const prefix = "sha256:"
	if len(d) != len(prefix)+64 || d[:len(prefix)] != prefix {
		return false
	}
	for _, c := range d[len(prefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
