//go:build !linux

package ray

import "github.com/rayflow/rayflow/internal/buildid"

// selfDigest is buildid.Self (the cache is Linux's: digest_linux.go).
func selfDigest() (string, error) { return buildid.Self() }
