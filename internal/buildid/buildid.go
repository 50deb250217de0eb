package buildid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// Environment variables that carry code identity: a build revision the
// deployer vouches for, and the container image's digest.
const (
	EnvBuildRevision = "RAYFLOW_BUILD_REVISION"
	EnvImageDigest   = "RAYFLOW_IMAGE_DIGEST"
)

// Prefix starts a build revision that is an executable digest.
const Prefix = "executable:"

// VCSPrefix starts a build revision that is a VCS revision.
const VCSPrefix = "vcs:"

// VCSRevision is the build revision bi's VCS stamp names ("vcs:<rev>"),
// "" when bi is nil, has no VCS stamp, or was built from a modified
// checkout (whose revision does not identify its code).
func VCSRevision(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" || modified == "true" {
		return ""
	}
	return VCSPrefix + rev
}

var self struct {
	once   sync.Once
	digest string
	err    error
}

// Self returns "sha256:<hex>" of this process's executable, computed once
// per process. On Linux it reads /proc/self/exe, the running image even
// if its file was replaced since the process started.
func Self() (string, error) {
	self.once.Do(func() {
		path := "/proc/self/exe"
		if _, err := os.Stat(path); err != nil {
			if path, err = os.Executable(); err != nil {
				self.err = fmt.Errorf("rayflow: the executable's digest: %w", err)
				return
			}
		}
		self.digest, self.err = File(path)
	})
	return self.digest, self.err
}

// File returns "sha256:<hex>" of the file at path.
func File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("rayflow: the executable's digest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("rayflow: the executable's digest: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
