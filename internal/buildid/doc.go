// Package buildid is the digest of the running executable, the code
// identity of a build that has no revision (no VCS stamp, no build
// revision variable): Go builds are reproducible, so the bytes of the
// binary identify its code.
package buildid
